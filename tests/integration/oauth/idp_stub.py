"""A scripted OAuth2 token endpoint for the faults a real authorization server cannot be told to
produce (429 with Retry-After, 500, slow answers, HTML pages, odd token responses), and the other
endpoints of an identity provider for the negatives of interactive logins (discovery, JWKS, an
authorization endpoint, device authorization, revocation, signed ID tokens: idp_stub_login.py,
whose docstring has their paths and script entries).

HTTP/1.1 on asyncio raw streams, like echo_upstream.py. Every path except /_stub/... and the
login paths of idp_stub_login.py is the token endpoint. Run it:
    python3 idp_stub.py --port 0 [--host 127.0.0.1]
The first line on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT stops it.

Control (used by the tests through idp_processes.StubIdP):
    PUT /_stub/script    JSON {"queue": [spec, ...], "by_grant": {grant_type: spec}, "default": spec,
                         "client_assertion": policy, "dpop": dpop} replaces the script. With a policy
                         (client_assertions.AssertionPolicy.from_json), every token request must
                         carry a client assertion that passes it, or is answered 401 invalid_client
                         (before any spec is used); the record holds the verified header and
                         claims, or the reason. A token request is answered with the next spec of
                         the queue, else by_grant[its grant_type], else default (initially a
                         token that lives 3600 s). The script's "discovery", "oauth_metadata",
                         "jwks", "authorize", "device", "revoke" and "keys" entries script the
                         login endpoints (idp_stub_login.py); each absent one is its default.
                         With `dpop` ({"nonce": "n-1" | null, "rotate_every": N}), every token
                         request must carry a DPoP proof for POST to the token URL (dpop_proofs.py,
                         checked before the client assertion); without the current nonce it is
                         answered 400 use_dpop_nonce with a DPoP-Nonce, an invalid one 400
                         invalid_dpop_proof. A token then has token_type DPoP and is an unsigned
                         JWT whose cnf.jkt names the proof's key; every rotate_every-th success
                         brings a new nonce (DPoP-Nonce). The record holds the verified header and
                         claims ("dpop"), or the reason.
                         With "client_secret" (a string), every token request must authenticate
                         with exactly that client secret (client_secret_basic, its parts
                         form-decoded, or client_secret_post), or is answered 401 invalid_client;
                         the record's "client_secret_check" says "ok" or "rejected". With
                         "workload_assertion" ({"issuer", "subject", "audience", "client_id"?,
                         "jti"?}: workload_identity.WorkloadAssertionPolicy), the stub fetches the
                         issuer's JWKS through its discovery document when the script is set, and
                         every token request's client assertion must be a workload JWT that
                         verifies with it (the current one, when "jti" names it), or is answered
                         401 invalid_client; the record holds the verified header and claims
                         ("workload"), or the reason.
                         Over TLS, a record also holds the SHA-256 (base64url) of the client
                         certificate the connection presented ("client_cert_sha256", or null).
    GET /_stub/requests  JSON {"requests": [record, ...], "endpoints": [record, ...]}: every
                         token request as received (raw: headers, body, form pairs) and what it
                         was answered, including the tokens issued; and every request to the
                         login endpoints. Recorded when the head and body are in, before any delay.

A spec is a JSON object; every kind takes "delay_ms" (wait before answering), "drip_ms" (send the
answer one byte at a time, this long apart; stops when the client goes) and "headers" (extra
response headers, [[name, value], ...]):
    {"kind": "token", "expires_in": 2 | "2" | absent (omitted), "token_type": "Bearer" (null:
     omitted), "refresh_token": "none" | "new" | "same" (the one presented) | "<literal>",
     "scope": "...", "fields": {"token": "accessToken", "expiry": "expiresIn", "type": "tokenType",
     "refresh": "refreshToken"} (non-standard names), "jwt_exp_in": N (the access token is an
     unsigned JWT whose exp is N to N + 1 s from now: whole seconds), "status": 200,
     "id_token": {...} (a signed ID token beside the access token: see idp_stub_login.py)}
    {"kind": "oauth_error", "status": 400, "error": "invalid_client", "error_description": "...",
     "error_uri": "..."}                     an RFC 6749 §5.2 error answer (application/json)
    {"kind": "raw", "status": 500, "content_type": "text/html", "body": "...", "retry_after": "5"}
    {"kind": "close"}                        closes the connection without answering
Access and refresh tokens are random (43 URL-safe characters), never reused.

The log (stderr) names method, path, grant_type, status and spec kind; never a secret or token.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import http
import json
import math
import secrets
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qsl, unquote_plus, urlsplit

# Run as a script from oauth/: the shared test-server command line lives one directory up.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from client_assertions import AssertionPolicy, AssertionRejected  # noqa: E402
from dpop_proofs import NonceMissing, ProofChecker, ProofRejected, b64url  # noqa: E402
from echo_upstream import BadRequest, parse_head  # noqa: E402  (the one strict head parser of the test servers)
from idp_stub_login import LoginEndpoints  # noqa: E402
from loopback_server import run_loopback_server, wait_for_stop_signal  # noqa: E402
from workload_identity import WorkloadAssertionPolicy  # noqa: E402

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 1024 * 1024
DEFAULT_SPEC = {"kind": "token", "expires_in": 3600}


def random_token() -> str:
    return secrets.token_urlsafe(32)


def unsigned_jwt(claims: dict) -> str:
    def part(obj) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


class Stub:
    def __init__(self, base_url: str) -> None:
        self.script: dict = {"queue": [], "by_grant": {}, "default": DEFAULT_SPEC}
        self.assertion_policy: AssertionPolicy | None = None
        self.client_secret: str | None = None
        self.workload_policy: WorkloadAssertionPolicy | None = None
        self.dpop: dict | None = None
        self.proofs = ProofChecker()
        self.dpop_successes = 0
        self.scheme = "http"  # https when served over TLS (tls_idp_stub.py): the proofs' htu
        self.records: list[dict] = []
        self.login = LoginEndpoints(base_url)
        self.server: asyncio.base_events.Server | None = None

    # -- connections -------------------------------------------------------------------------

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                except asyncio.LimitOverrunError:
                    await self.send(writer, 431, "application/json", b'{"error":"head too large"}', close=True)
                    return
                try:
                    request = parse_head(head)
                    method, target, headers = request.method, request.target, request.headers
                    body = await read_body(reader, headers)
                except BadRequest as e:
                    await self.send(writer, 400, "application/json", json.dumps({"stub": str(e)}).encode(), close=True)
                    return
                close = "close" in tokens(headers, "connection")
                path = urlsplit(target).path
                if path.startswith("/_stub/"):
                    keep = await self.control(writer, method, path, body, close)
                elif self.login.serves(path):
                    keep = await self.login_request(writer, method, target, body, close)
                else:
                    keep = await self.token_request(writer, method, target, headers, body, close)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def send(self, writer, status: int, content_type: str | None, body: bytes, headers=(), close=False,
                   drip_ms: float = 0) -> bool:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = "Status"
        lines = [f"HTTP/1.1 {status} {reason}"]
        if content_type:
            lines.append(f"Content-Type: {content_type}")
        lines += [f"{k}: {v}" for k, v in headers]
        lines.append(f"Content-Length: {len(body)}")
        lines.append("Cache-Control: no-store")
        if close:
            lines.append("Connection: close")
        answer = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        if drip_ms:
            for index in range(len(answer)):  # bounded by the answer's length
                if writer.is_closing():
                    break
                writer.write(answer[index:index + 1])
                await writer.drain()
                await asyncio.sleep(drip_ms / 1000)
            return not close
        writer.write(answer)
        await writer.drain()
        return not close

    # -- control -------------------------------------------------------------------------------

    async def control(self, writer, method: str, path: str, body: bytes, close: bool) -> bool:
        if path == "/_stub/script" and method in ("PUT", "POST"):
            script = json.loads(body or b"{}")
            self.script = {"queue": list(script.get("queue", [])), "by_grant": dict(script.get("by_grant", {})),
                           "default": script.get("default", DEFAULT_SPEC)}
            policy = script.get("client_assertion")
            self.assertion_policy = AssertionPolicy.from_json(policy) if policy else None
            self.client_secret = script.get("client_secret")
            workload = script.get("workload_assertion")
            self.workload_policy = None
            if workload:
                jwks = await asyncio.to_thread(issuer_jwks, workload["issuer"])
                self.workload_policy = WorkloadAssertionPolicy.from_json(workload, jwks)
            self.login.set_script(script)
            self.dpop = script.get("dpop")
            self.dpop_successes = 0
            return await self.send(writer, 204, None, b"", close=close)
        if path == "/_stub/requests" and method == "GET":
            answer = {"requests": self.records, "endpoints": self.login.records}
            return await self.send(writer, 200, "application/json", json.dumps(answer).encode(), close=close)
        return await self.send(writer, 404, "application/json", b'{"stub":"unknown control path"}', close=close)

    # -- the token endpoint ----------------------------------------------------------------------

    def next_spec(self, grant_type: str | None) -> dict:
        if self.script["queue"]:
            return self.script["queue"].pop(0)
        return self.script["by_grant"].get(grant_type or "", self.script["default"])

    async def token_request(self, writer, method: str, target: str, headers, body: bytes, close: bool) -> bool:
        text = body.decode("utf-8", "replace")
        form = parse_qsl(text, keep_blank_values=True) if text else []
        grant_type = next((v for k, v in form if k == "grant_type"), None)
        record = {"n": len(self.records) + 1, "time": time.time(), "answered": None, "method": method,
                  "target": target, "headers": [list(h) for h in headers], "body": text,
                  "form": [list(p) for p in form], "grant_type": grant_type, "status": None, "kind": None,
                  "issued": {}}
        self.records.append(record)
        ssl_object = writer.get_extra_info("ssl_object")
        if ssl_object is not None:
            der = ssl_object.getpeercert(binary_form=True)
            record["client_cert_sha256"] = b64url(hashlib.sha256(der).digest()) if der else None
        dpop_headers: list[tuple[str, str]] = []
        if self.dpop is not None:
            refusal = self.check_dpop(headers, target, record)
            if refusal is not None:
                status, error, extra = refusal
                record["status"], record["kind"] = status, error
                body = json.dumps({"error": error, "error_description": record["dpop"].get("rejected", "")})
                keep = await self.send(writer, status, "application/json", body.encode(), extra, close=close)
                record["answered"] = time.time()
                self.log(method, target, grant_type, status, error)
                return keep
            self.dpop_successes += 1
            if self.dpop.get("rotate_every") and self.dpop_successes % self.dpop["rotate_every"] == 0:
                self.dpop["nonce"] = f"nonce-{secrets.token_urlsafe(12)}"
                dpop_headers.append(("DPoP-Nonce", self.dpop["nonce"]))
        if self.assertion_policy is not None:
            try:
                header, claims = self.assertion_policy.check(form)
                record["assertion"] = {"header": header, "claims": claims}
            except AssertionRejected as rejected:
                record["assertion"] = {"rejected": str(rejected)}
                record["status"], record["kind"] = 401, "assertion_rejected"
                body = json.dumps({"error": "invalid_client", "error_description": f"client assertion: {rejected}"})
                keep = await self.send(writer, 401, "application/json", body.encode(), close=close)
                record["answered"] = time.time()
                self.log(method, target, grant_type, 401, "assertion_rejected")
                return keep
        refusal = self.check_client(headers, form, record)
        if refusal is not None:
            record["status"], record["kind"] = 401, "client_rejected"
            body = json.dumps({"error": "invalid_client", "error_description": refusal})
            keep = await self.send(writer, 401, "application/json", body.encode(), close=close)
            record["answered"] = time.time()
            self.log(method, target, grant_type, 401, "client_rejected")
            return keep
        spec = self.next_spec(grant_type)
        record["kind"] = kind = spec.get("kind", "token")
        if spec.get("delay_ms"):
            await asyncio.sleep(spec["delay_ms"] / 1000)
        extra = [tuple(h) for h in spec.get("headers", [])] + dpop_headers
        if kind == "close":
            record["answered"] = time.time()
            self.log(method, target, grant_type, "-", kind)
            return False
        binding = self.login.bind_code(dict(form), record) if grant_type == "authorization_code" else None
        if kind == "token":
            status = spec.get("status", 200)
            payload = self.token_payload(spec, dict(form), record)
            if "id_token" in spec:
                payload["id_token"] = record["issued"]["id_token"] = self.login.id_token(spec["id_token"], dict(form), binding)
            content_type, out = "application/json", json.dumps(payload).encode()
        else:
            status, content_type, out = generic_answer(spec, extra)
        record["status"] = status
        keep = await self.send(writer, status, content_type, out, extra, close=close, drip_ms=spec.get("drip_ms", 0))
        record["answered"] = time.time()
        self.log(method, target, grant_type, status, kind)
        return keep

    def check_client(self, headers, form: list, record: dict) -> str | None:
        """None when the request's client authentication passes the script's `client_secret` and
        `workload_assertion`; else why not (never the secret or the assertion)."""
        if self.client_secret is not None:
            ok = presented_secret(headers, form) == self.client_secret
            record["client_secret_check"] = "ok" if ok else "rejected"
            if not ok:
                return "client authentication failed: not the current client secret"
        if self.workload_policy is not None:
            try:
                header, claims = self.workload_policy.check(form)
                record["workload"] = {"header": header, "claims": claims}
            except AssertionRejected as rejected:
                record["workload"] = {"rejected": str(rejected)}
                return f"client assertion: {rejected}"
        return None

    def check_dpop(self, headers, target: str, record: dict):
        """None when the request's DPoP proof passes the script's `dpop`; else (status, error, headers)."""
        nonce = self.dpop.get("nonce")
        proofs = values(headers, "dpop")
        host = next(iter(values(headers, "host")), "")
        try:
            if len(proofs) != 1:
                raise ProofRejected(f"{len(proofs)} DPoP headers, expected 1")
            header, claims = self.proofs.check(proofs[0], "POST", f"{self.scheme}://{host}{target}", nonce=nonce)
        except NonceMissing as missing:
            record["dpop"] = {"rejected": str(missing)}
            return 400, "use_dpop_nonce", [("DPoP-Nonce", nonce)]
        except ProofRejected as rejected:
            record["dpop"] = {"rejected": str(rejected)}
            return 400, "invalid_dpop_proof", []
        record["dpop"] = {"header": header, "claims": claims}
        return None

    def token_payload(self, spec: dict, form: dict, record: dict) -> dict:
        names = {"token": "access_token", "expiry": "expires_in", "type": "token_type", "refresh": "refresh_token",
                 **spec.get("fields", {})}
        bound = record.get("dpop", {}).get("header", {}).get("thumbprint")
        if bound:
            # A DPoP-bound token: an unsigned JWT naming the key (RFC 9449 §6.1), so a resource
            # server can check the proofs that come with it.
            access = unsigned_jwt({"sub": "stub", "exp": math.ceil(time.time()) + int(spec.get("expires_in") or 3600),
                                   "jti": secrets.token_hex(8), "cnf": {"jkt": bound}})
        elif "jwt_exp_in" in spec:
            now = math.ceil(time.time())  # exp is whole seconds: the token lives jwt_exp_in to jwt_exp_in + 1 s
            access = unsigned_jwt({"sub": "stub", "iat": now - 1, "exp": now + int(spec["jwt_exp_in"]),
                                   "jti": secrets.token_hex(8)})
        else:
            access = random_token()
        payload = {names["token"]: access}
        token_type = spec.get("token_type", "DPoP" if bound else "Bearer")
        if token_type is not None:
            payload[names["type"]] = token_type
        if "expires_in" in spec and spec["expires_in"] is not None:
            payload[names["expiry"]] = spec["expires_in"]
        refresh = spec.get("refresh_token", "none")
        if refresh == "new":
            refresh = random_token()
        elif refresh == "same":
            refresh = form.get("refresh_token")
        elif refresh == "none":
            refresh = None
        if refresh:
            payload[names["refresh"]] = refresh
        if "scope" in spec:
            payload["scope"] = spec["scope"]
        record["issued"] = {"access_token": access, "refresh_token": refresh, "expires_in": spec.get("expires_in")}
        return payload

    async def login_request(self, writer, method: str, target: str, body: bytes, close: bool) -> bool:
        record, spec, answer = self.login.answer(method, target, body)
        if spec.get("delay_ms"):
            await asyncio.sleep(spec["delay_ms"] / 1000)
        extra = [tuple(h) for h in spec.get("headers", [])]
        if spec.get("kind") == "close":
            self.log(method, target, None, "-", "close")
            return False
        status, content_type, out, more = answer if answer is not None else (*generic_answer(spec, extra), [])
        record["status"] = status
        keep = await self.send(writer, status, content_type, out, extra + more, close=close)
        self.log(method, target, None, status, record["kind"])
        return keep

    @staticmethod
    def log(method, target, grant_type, status, kind) -> None:
        path = urlsplit(target).path
        print(f"{method} {path} grant_type={grant_type} -> {status} ({kind})", file=sys.stderr, flush=True)


def presented_secret(headers, form: list) -> str | None:
    """The client secret a request authenticates with: client_secret_basic's (RFC 6749 §2.3.1
    form-encodes id and secret before joining them) or client_secret_post's."""
    for value in values(headers, "authorization"):
        scheme, _, credentials = value.partition(" ")
        if scheme.lower() == "basic":
            _, _, secret = base64.b64decode(credentials).decode().partition(":")
            return unquote_plus(secret)
    return next((v for k, v in form if k == "client_secret"), None)


def issuer_jwks(issuer: str) -> dict:
    """The JWKS an OIDC issuer publishes, found through its discovery document."""
    with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=10) as answer:
        jwks_uri = json.load(answer)["jwks_uri"]
    with urllib.request.urlopen(jwks_uri, timeout=10) as answer:
        return json.load(answer)


def generic_answer(spec: dict, extra: list) -> tuple[int, str | None, bytes]:
    """The answer of a spec of a kind every endpoint knows: "oauth_error" and "raw" (whose
    Retry-After goes into `extra`)."""
    kind = spec.get("kind")
    if kind == "oauth_error":
        payload = {k: spec[k] for k in ("error", "error_description", "error_uri") if k in spec}
        return spec.get("status", 400), "application/json", json.dumps(payload).encode()
    if kind == "raw":
        if "retry_after" in spec:
            extra.append(("Retry-After", str(spec["retry_after"])))
        return spec.get("status", 500), spec.get("content_type"), spec.get("body", "").encode()
    return 500, "text/plain", f"stub: unknown spec kind {kind!r}".encode()


# ---------------------------------------------------------------------------------------------
# Parsing.

def values(headers, name: str) -> list[str]:
    return [v for k, v in headers if k.lower() == name]


def tokens(headers, name: str) -> list[str]:
    return [t.strip().lower() for v in values(headers, name) for t in v.split(",") if t.strip()]


async def read_body(reader: asyncio.StreamReader, headers) -> bytes:
    te = tokens(headers, "transfer-encoding")
    lengths = {v.strip() for v in values(headers, "content-length")}
    if te and lengths:
        raise BadRequest("both Content-Length and Transfer-Encoding")
    if te:
        if te != ["chunked"]:
            raise BadRequest(f"unsupported Transfer-Encoding {te}")
        body = bytearray()
        while True:
            line = await reader.readuntil(b"\r\n")
            size = int(line[:-2].split(b";")[0].strip() or b"x", 16)
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":
                    pass
                return bytes(body)
            body += await reader.readexactly(size)
            if len(body) > MAX_BODY_BYTES:
                raise BadRequest("body too large")
            if await reader.readexactly(2) != b"\r\n":
                raise BadRequest("chunk data not followed by CRLF")
    if lengths:
        if len(lengths) != 1 or not next(iter(lengths)).isdigit():
            raise BadRequest(f"bad Content-Length {sorted(lengths)}")
        n = int(next(iter(lengths)))
        if n > MAX_BODY_BYTES:
            raise BadRequest("body too large")
        return await reader.readexactly(n)
    return b""


# ---------------------------------------------------------------------------------------------

async def _main(host: str, port: int) -> None:
    server = await asyncio.start_server(lambda r, w: stub.connection(r, w), host, port, limit=MAX_HEAD_BYTES)
    bound = server.sockets[0].getsockname()[1]
    stub = Stub(f"http://{f'[{host}]' if ':' in host else host}:{bound}")
    stub.server = server
    print(f"LISTENING {host} {bound}", flush=True)
    await wait_for_stop_signal()
    stub.server.close()


def main(argv: list[str] | None = None) -> None:
    run_loopback_server(__doc__.split("\n\n")[0], _main, argv)


if __name__ == "__main__":
    sys.exit(main())
