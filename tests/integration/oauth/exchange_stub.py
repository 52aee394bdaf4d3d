"""A scripted token endpoint for the exchanges a relay makes on behalf of its callers (identities
with `subjectTokenFrom: "caller"`, RFC 8693, or `assertionFrom: "caller"`, Entra ID's on-behalf-of
flow), for what a real server cannot be told to do: refuse one caller's subject while answering
another, hold its answer until the test says so, count exchanges per caller.

Every token request is verified field by field against the script, and anything else than
exactly the expected form is answered 400 `invalid_request` and listed in `failures` (a test
asserts there are none):
    - POST, `Content-Type: application/x-www-form-urlencoded`, no field twice (but `resource`);
    - the client authentication of the script, and only it: `basic` (Authorization: Basic with the
      id and secret form-encoded, RFC 6749 §2.3.1; no client_id or client_secret in the form) or
      `post` (client_id and client_secret in the form; no Authorization);
    - mode `token_exchange` (RFC 8693 §2.1): exactly grant_type
      (urn:ietf:params:oauth:grant-type:token-exchange), subject_token (non-empty),
      subject_token_type, and the script's audience, resource (in order) and scope, each only if
      the script names it; no actor_token, requested_token_type or any other field;
    - mode `on_behalf_of` (Entra ID): exactly grant_type (urn:ietf:params:oauth:grant-type:jwt-bearer),
      assertion (non-empty), requested_token_use=on_behalf_of and the script's scope.

A verified request is answered with a token for that caller: `xt.<first 24 hex of the SHA-256 of
the subject>.<serial>` (the test recognises whose token the upstream received), padded with
`.ppp…` to `token_bytes` when the script says so, `expires_in` from the script; unless the script refuses that subject (`refuse`: {sha256 hex of the subject: {"status",
"error", "error_description"}}) or the endpoint is out (`outage`: {"status", "retry_after"}).
With `hold`, answers wait until `POST /_stub/release`.

Control:
    PUT  /_stub/script    JSON {"mode", "client": {"auth", "id", "secret"}, "expect": {"subject_token_type",
                          "audience", "resource": [...], "scope"}, "expires_in", "token_bytes", "refuse",
                          "outage", "hold"}; replaces the script and releases anything held
    POST /_stub/release   answers every held request (and stops holding)
    GET  /_stub/state     JSON {"exchanges": n (verified requests), "by_subject": {sha256 hex: n},
                          "held": n (waiting now), "failures": [text, ...]}

Run it: python3 exchange_stub.py --port 0 [--host 127.0.0.1]; the first line on stdout is
`LISTENING <host> <port>`. The log (stderr) names the outcome of each request, never a token.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sys
from pathlib import Path
from urllib.parse import parse_qsl, unquote_plus, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from echo_upstream import BadRequest, parse_head  # noqa: E402
from loopback_server import run_loopback_server, wait_for_stop_signal  # noqa: E402

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
MAX_BODY = 256 * 1024


def subject_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Mismatch(Exception):
    """The request is not exactly what the script expects."""


class ExchangeStub:
    def __init__(self) -> None:
        self.script: dict = {}
        self.exchanges = 0
        self.by_subject: dict[str, int] = {}
        self.failures: list[str] = []
        self.held = 0
        self.release = asyncio.Event()
        self.release.set()
        self.serial = 0

    # -- HTTP ----------------------------------------------------------------------------------

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                try:
                    request = parse_head(head)
                except BadRequest as e:
                    await send(writer, 400, {"stub": str(e)}, close=True)
                    return
                headers = request.headers
                length = int(next((v for k, v in headers if k.lower() == "content-length"), "0"))
                if length > MAX_BODY:
                    await send(writer, 413, {"stub": "body too large"}, close=True)
                    return
                body = await reader.readexactly(length) if length else b""
                close = any(k.lower() == "connection" and "close" in v.lower() for k, v in headers)
                path = urlsplit(request.target).path
                if path.startswith("/_stub/"):
                    status, answer, extra = self.control(request.method, path, body)
                else:
                    status, answer, extra = await self.token_request(request.method, path, headers, body)
                await send(writer, status, answer, extra, close=close)
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def control(self, method: str, path: str, body: bytes) -> tuple[int, dict, list]:
        if path == "/_stub/script" and method == "PUT":
            self.script = json.loads(body)
            self.release.set()
            if self.script.get("hold"):
                self.release = asyncio.Event()
            return 200, {"script": "set"}, []
        if path == "/_stub/release" and method == "POST":
            self.script["hold"] = False
            self.release.set()
            return 200, {"released": self.held}, []
        if path == "/_stub/state" and method == "GET":
            return 200, {"exchanges": self.exchanges, "by_subject": self.by_subject, "held": self.held,
                         "failures": self.failures}, []
        return 404, {"stub": f"no control endpoint {method} {path}"}, []

    # -- The token endpoint --------------------------------------------------------------------

    async def token_request(self, method: str, path: str, headers: list, body: bytes) -> tuple[int, dict, list]:
        try:
            subject = self.verify(method, path, headers, body)
        except Mismatch as e:
            self.failures.append(str(e))
            print(f"token request refused by the stub's checks: {e}", file=sys.stderr, flush=True)
            return 400, {"error": "invalid_request", "error_description": f"stub: {e}"}, []
        digest = subject_digest(subject)
        self.exchanges += 1
        self.by_subject[digest] = self.by_subject.get(digest, 0) + 1
        if not self.release.is_set():
            self.held += 1
            try:
                await self.release.wait()
            finally:
                self.held -= 1
        outage = self.script.get("outage")
        if outage:
            print("token request answered with an outage", file=sys.stderr, flush=True)
            return outage["status"], {"error": "temporarily_unavailable"}, [("Retry-After", outage["retry_after"])]
        refusal = self.script.get("refuse", {}).get(digest)
        if refusal:
            print(f"token request refused: {refusal['error']}", file=sys.stderr, flush=True)
            return refusal["status"], {"error": refusal["error"], "error_description": refusal["error_description"]}, []
        self.serial += 1
        token = f"xt.{digest[:24]}.{self.serial}"
        padding = self.script.get("token_bytes", 0) - len(token) - 1
        if padding > 0:
            token += "." + "p" * padding
        answer = {"access_token": token, "token_type": "Bearer",
                  "expires_in": self.script.get("expires_in", 3600)}
        if self.script.get("mode") == "token_exchange":
            answer["issued_token_type"] = "urn:ietf:params:oauth:token-type:access_token"
        print("token issued", file=sys.stderr, flush=True)
        return 200, answer, []

    def verify(self, method: str, path: str, headers: list, body: bytes) -> str:
        """The caller's token the request carries, once every field is as the script expects."""
        if method != "POST":
            raise Mismatch(f"method {method}, expected POST")
        content_type = [v for k, v in headers if k.lower() == "content-type"]
        if content_type != ["application/x-www-form-urlencoded"]:
            raise Mismatch(f"Content-Type {content_type}")
        try:
            pairs = parse_qsl(body.decode("ascii"), keep_blank_values=True, strict_parsing=True)
        except (UnicodeDecodeError, ValueError) as e:
            raise Mismatch(f"the body is not a form: {e}") from None
        names = [name for name, _ in pairs]
        for name in set(names):
            if name != "resource" and names.count(name) > 1:
                raise Mismatch(f"field {name} sent {names.count(name)} times")
        form = {name: value for name, value in pairs if name != "resource"}
        resources = [value for name, value in pairs if name == "resource"]
        self.verify_client(headers, form)
        expect = self.script.get("expect", {})
        mode = self.script.get("mode")
        if mode == "token_exchange":
            wanted = {"grant_type": TOKEN_EXCHANGE, "subject_token_type": expect["subject_token_type"]}
            subject_field = "subject_token"
        elif mode == "on_behalf_of":
            wanted = {"grant_type": JWT_BEARER, "requested_token_use": "on_behalf_of"}
            subject_field = "assertion"
        else:
            raise Mismatch(f"no script mode for this request ({mode!r})")
        for key in ("audience", "scope"):
            if key in expect:
                wanted[key] = expect[key]
        allowed = set(wanted) | {subject_field}
        if self.script["client"]["auth"] == "post":
            allowed |= {"client_id", "client_secret"}
        extra = sorted(set(form) - allowed)
        if extra:
            raise Mismatch(f"unexpected fields {extra}")
        for key, value in wanted.items():
            if form.get(key) != value:
                raise Mismatch(f"{key} is {form.get(key)!r}, expected {value!r}")
        if resources != expect.get("resource", []):
            raise Mismatch(f"resource {resources}, expected {expect.get('resource', [])}")
        subject = form.get(subject_field, "")
        if not subject:
            raise Mismatch(f"no {subject_field}")
        return subject

    def verify_client(self, headers: list, form: dict) -> None:
        client = self.script["client"]
        authorization = [v for k, v in headers if k.lower() == "authorization"]
        if client["auth"] == "basic":
            if "client_id" in form or "client_secret" in form:
                raise Mismatch("client_secret_basic with client_id or client_secret in the form")
            if len(authorization) != 1 or not authorization[0].startswith("Basic "):
                raise Mismatch("no Authorization: Basic")
            decoded = base64.b64decode(authorization[0][len("Basic "):]).decode()
            client_id, _, secret = decoded.partition(":")
            if unquote_plus(client_id) != client["id"] or unquote_plus(secret) != client["secret"]:
                raise Mismatch("Basic credentials are not the client's")
        elif client["auth"] == "post":
            if authorization:
                raise Mismatch("client_secret_post with an Authorization header")
            if form.get("client_id") != client["id"] or form.get("client_secret") != client["secret"]:
                raise Mismatch("client_id or client_secret in the form is not the client's")
        else:
            raise Mismatch(f"no such client auth in the script: {client['auth']!r}")


async def send(writer, status: int, answer: dict, extra=(), close: bool = False) -> None:
    body = json.dumps(answer).encode()
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Stub'}", "Content-Type: application/json",
             f"Content-Length: {len(body)}", "Cache-Control: no-store", *[f"{k}: {v}" for k, v in extra]]
    if close:
        lines.append("Connection: close")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()


async def serve(host: str, port: int) -> None:
    stub = ExchangeStub()
    server = await asyncio.start_server(stub.connection, host, port, limit=64 * 1024, backlog=1024)
    bound = server.sockets[0].getsockname()
    print(f"LISTENING {bound[0]} {bound[1]}", flush=True)
    async with server:
        await wait_for_stop_signal()


if __name__ == "__main__":
    run_loopback_server(__doc__.splitlines()[0], serve)
