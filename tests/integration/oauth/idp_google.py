"""A stand-in for Google's OAuth 2.0 token endpoint as it serves service accounts
(developers.google.com/identity/protocols/oauth2/service-account, "Preparing to make an authorized
API call", HTTP/REST), made to check every field Google documents, since Google itself cannot run
here. A token request is accepted only when all of these hold, in this order (the first that fails
gives the answer, and the record says why):

  POST to /token with Content-Type application/x-www-form-urlencoded    else 405 / 400 invalid_request
  the form is exactly grant_type and assertion, once each               else 400 invalid_request
  grant_type = urn:ietf:params:oauth:grant-type:jwt-bearer              else 400 unsupported_grant_type
  the assertion is a compact JWS with JSON header and claims            else 400 invalid_grant
  iss names a service account this stub knows                           else 400 invalid_grant "Invalid grant: account not found"
  header alg RS256, typ JWT, kid one of the account's key ids           else 400 invalid_grant "Invalid JWT Signature."
  the RS256 signature verifies with that key's public key               else 400 invalid_grant "Invalid JWT Signature."
  claims exactly iss, scope, aud, iat, exp (and sub)                    else 400 invalid_grant
  aud = this endpoint's own URL (http://HOST:PORT/token)                else 400 invalid_grant "... Failed audience check ..."
  iat and exp integers, iat within 60 s of now, 0 < exp - iat <= 3600  else 400 invalid_grant "... short-lived token ..."
  scope: space-separated https://www.googleapis.com/auth/... URLs      else 400 invalid_scope
  sub, when present, a user the account may act for (domain-wide       else 401 unauthorized_client
  delegation)
Then it answers {"access_token": "ya29.<random>", "expires_in": 3599, "token_type": "Bearer"}, as
Google does. The error texts are Google's. Signatures are checked with `cryptography` (RSASSA-PKCS1
v1.5, SHA-256), not with the relay's code.

HTTP/1.1 on asyncio raw streams, like idp_stub.py. Control (the tests, through
idp_processes.GoogleTokenEndpoint):
    PUT /_google/config    JSON {"accounts": {client_email: {"keys": {kid: public key PEM},
                           "delegated_users": [email, ...]}}, "clock_offset": seconds added to
                           this stub's clock (a relay whose clock is behind)} (clears the records)
    GET /_google/requests  JSON {"requests": [record, ...]}: method, target, content_type, form
                           pairs, status, error, error_description, the assertion's header and
                           claims once decoded, and the access token issued.
    python3 idp_google.py --port 0 [--host 127.0.0.1]
The first line on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT stops it. Its log (stderr)
names the status and error of each request, never an assertion or a token.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import secrets
import sys
import time
from pathlib import Path
from urllib.parse import parse_qsl

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from echo_upstream import BadRequest, parse_head  # noqa: E402
from idp_stub import MAX_HEAD_BYTES, read_body, tokens, values  # noqa: E402
from loopback_server import run_loopback_server, wait_for_stop_signal  # noqa: E402

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SCOPE_PREFIX = "https://www.googleapis.com/auth/"
MAX_LIFETIME = 3600
IAT_SKEW = 60
# Google's answers, word for word.
INVALID_SIGNATURE = "Invalid JWT Signature."
ACCOUNT_NOT_FOUND = "Invalid grant: account not found"
BAD_TIMEFRAME = ("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
                 "Check your iat and exp values in the JWT claim.")
INVALID_SCOPE = "Invalid OAuth scope or ID token audience provided."
UNAUTHORIZED_CLIENT = ("Client is unauthorized to retrieve access tokens using this method, or client not authorized "
                       "for any of the scopes requested.")


class Refused(Exception):
    def __init__(self, status: int, error: str, description: str, reason: str | None = None):
        super().__init__(reason or description)
        self.status, self.error, self.description = status, error, description


def b64url_decode(segment: str) -> bytes:
    if not segment or any(c in segment for c in "+/= \n"):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


class TokenEndpoint:
    def __init__(self, host: str) -> None:
        self.host = host
        self.port = 0
        self.configure({})

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/token"

    def configure(self, config: dict) -> None:
        self.accounts = {email: {"keys": {kid: serialization.load_pem_public_key(pem.encode())
                                          for kid, pem in account.get("keys", {}).items()},
                                 "delegated_users": set(account.get("delegated_users", []))}
                         for email, account in config.get("accounts", {}).items()}
        self.clock_offset = float(config.get("clock_offset", 0))
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
                if request.path.startswith("/_google/"):
                    status, answer = self.control(request.method, request.path, body)
                else:
                    status, answer = self.token(request, body)
                await send(writer, status, answer, close=close)
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def control(self, method: str, path: str, body: bytes):
        if path == "/_google/config" and method == "PUT":
            self.configure(json.loads(body or b"{}"))
            return 200, {"token_url": self.url}
        if path == "/_google/requests" and method == "GET":
            return 200, {"requests": self.records}
        return 404, {"error": "unknown control path"}

    def token(self, request, body: bytes):
        record = {"n": len(self.records) + 1, "method": request.method, "target": request.target,
                  "content_type": next(iter(values(request.headers, "content-type")), None), "form": [],
                  "status": None, "error": None, "error_description": None, "reason": None,
                  "header": None, "claims": None, "issued": None}
        self.records.append(record)
        try:
            answer = self.check(request, body, record)
            record["status"], record["issued"] = 200, answer["access_token"]
            status = 200
        except Refused as refused:
            record.update(status=refused.status, error=refused.error, error_description=refused.description, reason=str(refused))
            status, answer = refused.status, {"error": refused.error, "error_description": refused.description}
        print(f"{request.method} {request.path} -> {status} {record['error'] or ''} {record['reason'] or ''}", file=sys.stderr, flush=True)
        return status, answer

    def check(self, request, body: bytes, record: dict) -> dict:
        if request.path != "/token":
            raise Refused(404, "not_found", "Not Found", f"no endpoint {request.path}")
        if request.method != "POST":
            raise Refused(405, "invalid_request", "Method Not Allowed", f"method {request.method}")
        media_type = (record["content_type"] or "").split(";")[0].strip().lower()
        if media_type != "application/x-www-form-urlencoded":
            raise Refused(400, "invalid_request", "Bad Request", f"content type {record['content_type']!r}")
        try:
            pairs = parse_qsl(body.decode("ascii"), keep_blank_values=True, strict_parsing=True)
        except (UnicodeDecodeError, ValueError) as e:
            raise Refused(400, "invalid_request", "Bad Request", f"form: {e}")
        record["form"] = pairs
        names = [name for name, _ in pairs]
        if sorted(names) != ["assertion", "grant_type"]:
            raise Refused(400, "invalid_request", "Bad Request", f"form fields {names}, expected grant_type and assertion once each")
        form = dict(pairs)
        if form["grant_type"] != JWT_BEARER:
            raise Refused(400, "unsupported_grant_type", f"Invalid grant_type: {form['grant_type']}")
        header, claims, signing_input, signature = self.decode(form["assertion"])
        record["header"], record["claims"] = header, claims
        account = self.accounts.get(claims.get("iss"))
        if account is None:
            raise Refused(400, "invalid_grant", ACCOUNT_NOT_FOUND, f"iss {claims.get('iss')!r} is no account here")
        if header.get("alg") != "RS256" or header.get("typ") != "JWT":
            raise Refused(400, "invalid_grant", INVALID_SIGNATURE, f"header alg/typ {header.get('alg')!r}/{header.get('typ')!r}")
        key = account["keys"].get(header.get("kid"))
        if key is None:
            raise Refused(400, "invalid_grant", INVALID_SIGNATURE, f"kid {header.get('kid')!r} is no key of the account")
        try:
            key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            raise Refused(400, "invalid_grant", INVALID_SIGNATURE, "the signature does not verify with the kid's key")
        self.check_claims(claims, account)
        return {"access_token": "ya29." + secrets.token_urlsafe(48), "expires_in": 3599, "token_type": "Bearer"}

    @staticmethod
    def decode(assertion: str):
        segments = assertion.split(".")
        if len(segments) != 3:
            raise Refused(400, "invalid_grant", "Invalid JWT: not a compact JWS", f"{len(segments)} segments")
        try:
            header = json.loads(b64url_decode(segments[0]))
            claims = json.loads(b64url_decode(segments[1]))
            signature = b64url_decode(segments[2])
        except (ValueError, binascii.Error) as e:
            raise Refused(400, "invalid_grant", "Invalid JWT: not a compact JWS", f"decoding: {e}")
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise Refused(400, "invalid_grant", "Invalid JWT: not a compact JWS", "header or claims not an object")
        return header, claims, f"{segments[0]}.{segments[1]}".encode(), signature

    def check_claims(self, claims: dict, account: dict) -> None:
        names = set(claims)
        if not {"iss", "scope", "aud", "iat", "exp"} <= names <= {"iss", "scope", "aud", "iat", "exp", "sub"}:
            raise Refused(400, "invalid_grant", "Invalid JWT: claims", f"claims {sorted(names)}")
        if claims["aud"] != self.url:
            raise Refused(400, "invalid_grant", f"Invalid JWT: Failed audience check. The right audience is {self.url}",
                          f"aud {claims['aud']!r}")
        iat, exp = claims["iat"], claims["exp"]
        now = time.time() + self.clock_offset
        if not (type(iat) is int and type(exp) is int) or abs(iat - now) > IAT_SKEW or not 0 < exp - iat <= MAX_LIFETIME:
            raise Refused(400, "invalid_grant", BAD_TIMEFRAME, f"iat {iat!r}, exp {exp!r}, now {now:.0f}")
        scopes = claims["scope"].split(" ") if isinstance(claims["scope"], str) else []
        if not scopes or not all(s.startswith(SCOPE_PREFIX) and len(s) > len(SCOPE_PREFIX) for s in scopes):
            raise Refused(400, "invalid_scope", INVALID_SCOPE, f"scope {claims['scope']!r}")
        if "sub" in claims and claims["sub"] not in account["delegated_users"]:
            raise Refused(401, "unauthorized_client", UNAUTHORIZED_CLIENT, f"sub {claims['sub']!r} is not delegated")


async def send(writer, status: int, answer: dict, close: bool = False) -> None:
    body = json.dumps(answer).encode()
    lines = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}", "Content-Type: application/json; charset=utf-8",
             "Cache-Control: no-cache, no-store, max-age=0, must-revalidate", f"Content-Length: {len(body)}"]
    if close:
        lines.append("Connection: close")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()


async def _main(host: str, port: int) -> None:
    endpoint = TokenEndpoint(host)
    listener = await asyncio.start_server(endpoint.connection, host, port, limit=MAX_HEAD_BYTES)
    endpoint.port = listener.sockets[0].getsockname()[1]
    print(f"LISTENING {host} {endpoint.port}", flush=True)
    await wait_for_stop_signal()
    listener.close()


def main(argv: list[str] | None = None) -> None:
    run_loopback_server(__doc__.split("\n\n")[0], _main, argv)


if __name__ == "__main__":
    sys.exit(main())
