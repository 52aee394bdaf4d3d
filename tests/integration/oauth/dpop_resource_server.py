"""A DPoP-protected resource server (RFC 9449 §7) for the tests: every request must come with
`Authorization: DPoP <token>` and a `DPoP` proof that dpop_proofs.ProofChecker accepts for its
method and its target URI (`http://` + its Host + its request-target, without the query), with
`ath` = the token's hash, the key the token is bound to (`cnf.jkt` when the token is a JWT
carrying one, else the configured `jkt`, else any), an unseen `jti`, and the current nonce.

The first request gets no resource: nonces are on from the start, so it is answered `401` with
`WWW-Authenticate: DPoP error="use_dpop_nonce"` and a `DPoP-Nonce`; so is any later one without
the current nonce. A bad proof gets `401` `WWW-Authenticate: DPoP error="invalid_dpop_proof"`.
A good one gets `200` and a JSON report ({"method", "path", "htu", "jti", "body_sha256"}); every
`rotate_every`-th good request brings a new nonce (`DPoP-Nonce`) with its answer, or with
`announce_rotation` false changes it without a word: the next proof with the old one gets the
`use_dpop_nonce` 401 that tells the new one. With `echo_nonce`, every good answer carries the
current nonce, as many servers send it. A good request under `/held/` has its answer made (and its
nonce with it) at once but sent only after `PUT /_rs/release`: an answer in flight while the nonce
rotates. A `use_dpop_nonce` 401 to a request under `/held-challenge/` is sent only after
`PUT /_rs/release` too, naming the nonce in force then: a challenge in flight while the nonce
rotates again.

HTTP/1.1 on asyncio raw streams, like idp_stub.py. Control (the tests, through
idp_processes.DPoPResourceServer):
    PUT /_rs/config      JSON {"nonce": bool (default true), "rotate_every": N (0: never),
                         "announce_rotation": bool (default true), "echo_nonce": bool,
                         "jkt": thumbprint | null, "refuse_first_token": bool} (resets the nonce and
                         the records); with refuse_first_token, the first token seen is answered
                         401 `WWW-Authenticate: DPoP error="invalid_token"` (after its proof
                         verified): a revoked token
    PUT /_rs/rotate      a new nonce, said to no one; JSON {"nonce"}
    PUT /_rs/release     the held answers go out
    GET /_rs/requests    JSON {"requests": [record, ...]}: method, target, status, reason,
                         scheme (of Authorization), the proof's jti/htu/thumbprint/nonce when it
                         verified, body_sha256. Never the token itself.
    python3 dpop_resource_server.py --port 0 [--host 127.0.0.1]
The first line on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT stops it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from dpop_proofs import NonceMissing, ProofChecker, ProofRejected, unverified_claims  # noqa: E402
from echo_upstream import BadRequest, parse_head  # noqa: E402
from idp_stub import MAX_HEAD_BYTES, read_body, tokens, values  # noqa: E402
from loopback_server import run_loopback_server, wait_for_stop_signal  # noqa: E402


class ResourceServer:
    def __init__(self) -> None:
        self.configure({})

    def configure(self, config: dict) -> None:
        self.nonce = f"rs-nonce-{secrets.token_urlsafe(9)}" if config.get("nonce", True) else None
        self.rotate_every = int(config.get("rotate_every", 0))
        self.announce_rotation = bool(config.get("announce_rotation", True))
        self.echo_nonce = bool(config.get("echo_nonce"))
        self.released = asyncio.Event()
        self.jkt = config.get("jkt")
        self.refuse_first_token = bool(config.get("refuse_first_token"))
        self.refused_token: str | None = None
        self.proofs = ProofChecker()
        self.served = 0
        self.records: list[dict] = []

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                try:
                    request = parse_head(head)
                    body = await read_body(reader, request.headers)
                except BadRequest as e:
                    await send(writer, 400, {"error": str(e)}, close=True)
                    return
                close = "close" in tokens(request.headers, "connection")
                if request.path.startswith("/_rs/"):
                    status, answer, extra = self.control(request.method, request.path, body)
                else:
                    status, answer, extra = self.resource(request, body)
                    if status == 200 and request.path.startswith("/held/"):
                        await self.released.wait()
                    if status == 401 and request.path.startswith("/held-challenge/") and answer["error"] == "use_dpop_nonce":
                        await self.released.wait()
                        extra = [(name, self.nonce if name == "DPoP-Nonce" else value) for name, value in extra]
                await send(writer, status, answer, extra, close=close)
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def control(self, method: str, path: str, body: bytes):
        if path == "/_rs/config" and method == "PUT":
            self.configure(json.loads(body or b"{}"))
            return 200, {"nonce": self.nonce}, []
        if path == "/_rs/requests" and method == "GET":
            return 200, {"requests": self.records}, []
        if path == "/_rs/rotate" and method == "PUT" and self.nonce is not None:
            self.nonce = f"rs-nonce-{secrets.token_urlsafe(9)}"
            return 200, {"nonce": self.nonce}, []
        if path == "/_rs/release" and method == "PUT":
            self.released.set()
            return 200, {}, []
        return 404, {"error": "unknown control path"}, []

    def resource(self, request, body: bytes):
        record = {"method": request.method, "target": request.target, "status": None, "reason": None,
                  "body_sha256": hashlib.sha256(body).hexdigest()}
        self.records.append(record)
        authorization = values(request.headers, "authorization")
        scheme, _, token = authorization[0].partition(" ") if len(authorization) == 1 else ("", "", "")
        record["scheme"] = scheme
        proofs = values(request.headers, "dpop")
        host = next(iter(values(request.headers, "host")), "")
        url = f"http://{host}{request.target}"
        try:
            if scheme != "DPoP" or not token:
                raise ProofRejected(f"Authorization is not 'DPoP <token>' ({len(authorization)} fields, scheme {scheme!r})")
            if len(proofs) != 1:
                raise ProofRejected(f"{len(proofs)} DPoP headers, expected 1")
            bound = (unverified_claims(token) or {}).get("cnf", {}).get("jkt") or self.jkt
            header, claims = self.proofs.check(proofs[0], request.method, url, access_token=token, nonce=self.nonce, jkt=bound)
        except NonceMissing as missing:
            record["status"], record["reason"] = 401, f"use_dpop_nonce: {missing}"
            return 401, {"error": "use_dpop_nonce"}, [
                ("WWW-Authenticate", 'DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof"'),
                ("DPoP-Nonce", self.nonce)]
        except ProofRejected as rejected:
            record["status"], record["reason"] = 401, f"invalid_dpop_proof: {rejected}"
            return 401, {"error": "invalid_dpop_proof", "reason": str(rejected)}, [
                ("WWW-Authenticate", 'DPoP error="invalid_dpop_proof"')]
        if self.refuse_first_token and self.refused_token in (None, claims["ath"]):
            self.refused_token = claims["ath"]
            record["status"], record["reason"] = 401, "invalid_token: refused"
            return 401, {"error": "invalid_token"}, [("WWW-Authenticate", 'DPoP error="invalid_token"')]
        self.served += 1
        extra = []
        if self.nonce is not None and self.rotate_every and self.served % self.rotate_every == 0:
            self.nonce = f"rs-nonce-{secrets.token_urlsafe(9)}"
            if self.announce_rotation:
                extra.append(("DPoP-Nonce", self.nonce))
        if self.echo_nonce and self.nonce is not None and not extra:
            extra.append(("DPoP-Nonce", self.nonce))
        record.update(status=200, jti=claims["jti"], htu=claims["htu"], thumbprint=header["thumbprint"],
                      nonce=claims.get("nonce"), alg=header["alg"])
        return 200, {"method": request.method, "path": request.path, "htu": claims["htu"], "jti": claims["jti"],
                     "body_sha256": record["body_sha256"]}, extra


async def send(writer, status: int, answer: dict, headers=(), close: bool = False) -> None:
    body = json.dumps(answer).encode()
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}", "Content-Type: application/json",
             *(f"{k}: {v}" for k, v in headers), f"Content-Length: {len(body)}"]
    if close:
        lines.append("Connection: close")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()


async def _main(host: str, port: int) -> None:
    server = ResourceServer()
    listener = await asyncio.start_server(server.connection, host, port, limit=MAX_HEAD_BYTES)
    print(f"LISTENING {host} {listener.sockets[0].getsockname()[1]}", flush=True)
    await wait_for_stop_signal()
    listener.close()


def main(argv: list[str] | None = None) -> None:
    run_loopback_server(__doc__.split("\n\n")[0], _main, argv)


if __name__ == "__main__":
    sys.exit(main())
