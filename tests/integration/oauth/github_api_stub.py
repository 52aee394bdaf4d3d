"""A stub of GitHub's REST API for a GitHub App's installation access tokens ("Create an
installation access token for an app", API version 2022-11-28), which checks every field of a
request the way GitHub documents it and answers as GitHub does. No real GitHub can be run here,
and none can be told to refuse on cue.

HTTP/1.1 on asyncio raw streams, like idp_stub.py (whose strict head and body readers it uses).
Run it:
    python3 github_api_stub.py --port 0 [--host 127.0.0.1]
The first line on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT stops it.

Control (used by test_github_app.py):
    PUT /_stub/app       JSON {"app_id": "12345", "public_key": PEM, "installations": [678],
                         "prefix": "" | "/api/v3" (GitHub Enterprise Server's API path),
                         "expected_body": {...} | null (the exact JSON every request must carry; null:
                         no body; absent: any body of the documented members),
                         "expires_in": 3600 (seconds until expires_at),
                         "grantable_permissions": {name: level} | null (null: any),
                         "repositories": [names] | null (null: any)} replaces the App.
    GET /_stub/requests  JSON {"requests": [record, ...]}: every request to the API as received
                         (method, target, headers, body), the App JWT's verified header and
                         claims ("jwt", or null), every rule it broke ("problems", each naming the
                         rule, never a secret), the status and message answered, and what was
                         issued ("issued": {"token", "expires_at", "expires_at_unix"}).

The token endpoint is `POST {prefix}/app/installations/{installation_id}/access_tokens`. A
request is checked in this order; the first rule it breaks decides the answer (GitHub's error
object, `{"message", "documentation_url", "status"}`), and every broken rule is recorded:
    path and method                     404 Not Found
    User-Agent present                  403 (GitHub's "Please make sure your request has a User-Agent header")
    X-GitHub-Api-Version: 2022-11-28    400 API version is not supported
    Accept: application/vnd.github+json 415 Unsupported 'Accept' header
    Authorization: Bearer <App JWT>     401 Requires authentication / A JSON web token could not be decoded:
        signature by the App's key, alg RS256, typ JWT if present, iss = the App's ID, integer
        iat and exp, iat <= now and >= now - 120 s, exp > now, exp - iat <= 600 s
        ("'Expiration time' claim ('exp') is too far in the future")
    the installation is the App's       404 Not Found
    the body: none, or a JSON object (Content-Type application/json) of repositories (names),
        repository_ids (integers) and permissions (name -> read|write|admin), nothing else,
        and exactly the expected body   422 Validation Failed / Invalid request.
    grantable permissions               422 The permissions requested are not granted to this installation.
    accessible repositories             422 There is at least one repository that does not exist or is not
                                            accessible to the parent installation.
Else 201 {"token": "ghs_…", "expires_at": "…Z", "permissions": {…}, "repository_selection": …},
expires_at `expires_in` to `expires_in` + 1 s away (whole seconds, as GitHub writes them).

The log (stderr) names method, path and status; never a token or a JWT.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import math
import secrets
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from jwcrypto import jwk, jws

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from echo_upstream import BadRequest, parse_head  # noqa: E402
from idp_stub import MAX_HEAD_BYTES, read_body, tokens, values  # noqa: E402
from loopback_server import run_loopback_server, wait_for_stop_signal  # noqa: E402

API_VERSION = "2022-11-28"
MEDIA_TYPE = "application/vnd.github+json"
DOCS = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"
MAX_JWT_AGE = 120  # what the tests allow for iat: GitHub's advice is 60 s in the past
MAX_JWT_LIFETIME = 600  # GitHub: exp no more than 10 minutes after iat
LEVELS = ("read", "write", "admin")


class Refusal(Exception):
    """The answer to a request that broke a rule: status and GitHub's message."""

    def __init__(self, status: int, message: str, rule: str) -> None:
        super().__init__(rule)
        self.status, self.message, self.rule = status, message, rule


class GitHubStub:
    def __init__(self) -> None:
        self.app: dict = {}
        self.key: jwk.JWK | None = None
        self.records: list[dict] = []

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                try:
                    request = parse_head(head)
                    body = await read_body(reader, request.headers)
                except BadRequest as e:
                    await self.send(writer, 400, {"message": f"stub: {e}"}, close=True)
                    return
                close = "close" in tokens(request.headers, "connection")
                path = urlsplit(request.target).path
                if path.startswith("/_stub/"):
                    keep = await self.control(writer, request.method, path, body, close)
                else:
                    keep = await self.api_request(writer, request.method, request.target, request.headers, body, close)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def send(self, writer, status: int, payload: dict | None, close: bool = False) -> bool:
        body = b"" if payload is None else json.dumps(payload).encode()
        lines = [f"HTTP/1.1 {status} Status", "Content-Type: application/json; charset=utf-8",
                 f"Content-Length: {len(body)}", f"X-GitHub-Api-Version-Selected: {API_VERSION}"]
        if close:
            lines.append("Connection: close")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()
        return not close

    async def control(self, writer, method: str, path: str, body: bytes, close: bool) -> bool:
        if path == "/_stub/app" and method == "PUT":
            self.app = json.loads(body)
            self.key = jwk.JWK.from_pem(self.app["public_key"].encode())
            return await self.send(writer, 204, None, close=close)
        if path == "/_stub/requests" and method == "GET":
            return await self.send(writer, 200, {"requests": self.records}, close=close)
        return await self.send(writer, 404, {"message": "stub: unknown control path"}, close=close)

    # -- the API -----------------------------------------------------------------------------------

    async def api_request(self, writer, method: str, target: str, headers, body: bytes, close: bool) -> bool:
        record = {"n": len(self.records) + 1, "time": time.time(), "method": method, "target": target,
                  "headers": [list(h) for h in headers], "body": body.decode("utf-8", "replace"), "jwt": None,
                  "problems": [], "status": None, "message": None, "issued": {}}
        self.records.append(record)
        try:
            payload = self.token(method, target, headers, body, record)
            status = 201
        except Refusal as refusal:
            status = refusal.status
            payload = {"message": refusal.message, "documentation_url": DOCS, "status": str(status)}
            record["message"] = refusal.message
        record["status"] = status
        print(f"{method} {urlsplit(target).path} -> {status}", file=sys.stderr, flush=True)
        return await self.send(writer, status, payload, close=close)

    def token(self, method: str, target: str, headers, body: bytes, record: dict) -> dict:
        """The answer to a token request that keeps every rule; raises the first Refusal, having
        recorded every rule the request broke."""
        refusals: list[Refusal] = []

        def broke(status: int, message: str, rule: str) -> None:
            record["problems"].append(rule)
            refusals.append(Refusal(status, message, rule))

        prefix = self.app.get("prefix", "")
        parts = urlsplit(target)
        installation = None
        route = parts.path.removeprefix(prefix).split("/") if parts.path.startswith(prefix + "/") else []
        if len(route) == 5 and route[:3] == ["", "app", "installations"] and route[4] == "access_tokens":
            installation = route[3]
        else:
            broke(404, "Not Found", f"path {parts.path} is not {prefix}/app/installations/{{id}}/access_tokens")
        if parts.query:
            broke(404, "Not Found", "a query on the token path")
        if method != "POST":
            broke(404, "Not Found", f"method {method}, not POST")
        if not [v for v in values(headers, "user-agent") if v.strip()]:
            broke(403, "Request forbidden by administrative rules. Please make sure your request has a User-Agent header "
                       "(https://docs.github.com/en/rest/overview/resources-in-the-rest-api#user-agent-required).",
                  "no User-Agent")
        versions = values(headers, "x-github-api-version")
        if versions != [API_VERSION]:
            broke(400, f"API version {','.join(versions) or '(none)'} is not supported.",
                  f"X-GitHub-Api-Version {versions}, not [{API_VERSION!r}]")
        accepts = values(headers, "accept")
        if accepts != [MEDIA_TYPE]:
            broke(415, "Unsupported 'Accept' header", f"Accept {accepts}, not [{MEDIA_TYPE!r}]")
        self.check_jwt(values(headers, "authorization"), record, broke)
        if installation is not None and installation not in [str(i) for i in self.app.get("installations", [])]:
            broke(404, "Not Found", f"installation {installation} is not the App's")
        requested = self.check_body(headers, body, broke)
        if requested is not None:
            self.check_grants(requested, broke)
        if refusals:
            raise refusals[0]
        now = time.time()
        expires_at = math.floor(now) + int(self.app.get("expires_in", 3600)) + 1
        token = "ghs_" + secrets.token_urlsafe(27).replace("-", "A").replace("_", "b")
        record["issued"] = {"token": token, "expires_at": iso(expires_at), "expires_at_unix": expires_at}
        permissions = (requested or {}).get("permissions") or self.app.get("grantable_permissions") or {"metadata": "read"}
        selected = bool((requested or {}).get("repositories") or (requested or {}).get("repository_ids"))
        return {"token": token, "expires_at": iso(expires_at), "permissions": permissions,
                "repository_selection": "selected" if selected else "all"}

    def check_jwt(self, authorizations: list[str], record: dict, broke) -> None:
        if len(authorizations) != 1:
            return broke(401, "Requires authentication", f"{len(authorizations)} Authorization headers, expected 1")
        scheme, _, compact = authorizations[0].partition(" ")
        if scheme != "Bearer" or not compact:
            return broke(401, "Requires authentication", f"Authorization scheme {scheme!r}, not Bearer")
        token = jws.JWS()
        try:
            token.deserialize(compact)
            token.verify(self.key)
        except Exception as error:  # jwcrypto raises several types; all mean "not verified"
            return broke(401, "A JSON web token could not be decoded", f"the App JWT does not verify ({type(error).__name__})")
        header = token.jose_header
        claims = json.loads(token.payload)
        record["jwt"] = {"header": header, "claims": claims, "compact": compact}
        now = time.time()
        if header.get("alg") != "RS256":
            broke(401, "A JSON web token could not be decoded", f"alg {header.get('alg')}, not RS256")
        if header.get("typ", "JWT") != "JWT":
            broke(401, "A JSON web token could not be decoded", f"typ {header.get('typ')}, not JWT")
        if str(claims.get("iss")) != str(self.app["app_id"]):
            broke(401, "A JSON web token could not be decoded", "iss is not the App's ID")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int):
            return broke(401, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
                         "iat and exp must be integers")
        if iat > now:
            broke(401, "'Issued at' claim ('iat') must be an Integer representing a time in the past", "iat is in the future")
        if iat < now - MAX_JWT_AGE:
            broke(401, "'Issued at' claim ('iat') is too far in the past", f"iat more than {MAX_JWT_AGE} s ago")
        if exp <= now:
            broke(401, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which "
                       "the assertion expires", "exp has passed")
        if exp - iat > MAX_JWT_LIFETIME:
            broke(401, "'Expiration time' claim ('exp') is too far in the future", f"exp - iat > {MAX_JWT_LIFETIME} s")

    def check_body(self, headers, body: bytes, broke) -> dict | None:
        """The request's JSON object ({} without a body), checked against the documented members
        and the expected body; None when it is not one."""
        exact = "expected_body" in self.app
        expected = self.app.get("expected_body")
        if not body:
            if values(headers, "content-type"):
                broke(422, "Invalid request.", "a Content-Type without a body")
            if exact and expected is not None:
                broke(422, "Invalid request.", f"no body, expected {json.dumps(expected, sort_keys=True)}")
            return {}
        if [v.split(";")[0].strip().lower() for v in values(headers, "content-type")] != ["application/json"]:
            broke(422, "Invalid request.", f"Content-Type {values(headers, 'content-type')}, not application/json")
        try:
            request = json.loads(body)
        except ValueError:
            broke(400, "Problems parsing JSON", "the body is not JSON")
            return None
        if not isinstance(request, dict):
            broke(400, "Problems parsing JSON", "the body is not a JSON object")
            return None
        unknown = set(request) - {"repositories", "repository_ids", "permissions"}
        if unknown:
            broke(422, "Invalid request.", f"unknown members {sorted(unknown)}")
        repositories, ids, permissions = request.get("repositories"), request.get("repository_ids"), request.get("permissions")
        if repositories is not None and not (isinstance(repositories, list) and all(isinstance(r, str) and r for r in repositories)):
            broke(422, "Invalid request.", "repositories is not an array of names")
        if ids is not None and not (isinstance(ids, list) and all(type(i) is int and i > 0 for i in ids)):
            broke(422, "Invalid request.", "repository_ids is not an array of positive integers")
        if permissions is not None and not (isinstance(permissions, dict)
                                            and all(isinstance(v, str) and v in LEVELS for v in permissions.values())):
            broke(422, "Invalid request.", "permissions is not an object of read, write or admin")
        if not exact:
            return request
        if expected is None:
            broke(422, "Invalid request.", "a body, expected none")
        elif request != expected:
            broke(422, "Validation Failed", f"body {json.dumps(request, sort_keys=True)}, expected {json.dumps(expected, sort_keys=True)}")
        return request

    def check_grants(self, requested: dict, broke) -> None:
        grantable = self.app.get("grantable_permissions")
        for name, level in (requested.get("permissions") or {}).items():
            if grantable is not None and (name not in grantable or LEVELS.index(level) > LEVELS.index(grantable[name])):
                broke(422, "The permissions requested are not granted to this installation.", f"permission {name}: {level}")
        accessible = self.app.get("repositories")
        for name in requested.get("repositories") or []:
            if accessible is not None and name not in accessible:
                broke(422, "There is at least one repository that does not exist or is not accessible to the parent "
                           "installation.", f"repository {name}")


def iso(unix: int) -> str:
    return datetime.datetime.fromtimestamp(unix, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _main(host: str, port: int) -> None:
    stub = GitHubStub()
    server = await asyncio.start_server(stub.connection, host, port, limit=MAX_HEAD_BYTES)
    print(f"LISTENING {host} {server.sockets[0].getsockname()[1]}", flush=True)
    await wait_for_stop_signal()
    server.close()


def main(argv: list[str] | None = None) -> None:
    run_loopback_server(__doc__.split("\n\n")[0], _main, argv)


if __name__ == "__main__":
    sys.exit(main())
