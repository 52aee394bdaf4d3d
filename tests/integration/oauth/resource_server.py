"""A protected resource (RFC 9728, RFC 6750) for the zero-configuration identity tests (issue 29):
the upstream of an `identity: "auto"` route, which says by itself which authorization server its
tokens come from.

Its resource URL is `http://<host>:<port><path>` (`path` from its configuration, `/mcp` by
default): every request under that path must bring `Authorization: Bearer <JWT>` that verifies
against the authorization server's JWKS (fetched from `jwks_uri`, RS256), with `exp` in the
future, `iss` = `issuer` and `aud` = the resource URL exactly (a string, or a list holding it).
A verified request gets `200` and JSON {"method", "target", "claims"} (the token's claims, never
the token); any other gets `401` with `WWW-Authenticate: Bearer resource_metadata="<URL>",
scope="<challenge_scope>"` (and `error="invalid_token"` when a token was there and failed).

Its metadata (RFC 9728 §2: `resource` = its resource URL, `authorization_servers` = [issuer],
`scopes_supported`, `bearer_methods_supported`), as `metadata` says:
    "well-known"  at /.well-known/oauth-protected-resource<path> (§3.1), named in the 401 too
    "challenge"   only at /metadata<path>, named in the 401; the well-known URL answers 404
    "none"        nowhere: the 401 is `Bearer realm="resource", scope="..."` with no metadata URL
`metadata_resource` puts another `resource` in the document (§3.3's mismatch);
`authorization_servers` names others than `issuer`. `documents` ({path: JSON}) serves more JSON
documents as they are (an authorization server's metadata of the tests' making).

HTTP/1.1 on asyncio raw streams, like dpop_resource_server.py. Control (the tests, through
idp_processes.ProtectedResource):
    PUT /_rs/config      JSON {"path", "issuer", "jwks_uri", "metadata", "metadata_resource",
                         "authorization_servers", "scopes_supported", "challenge_scope",
                         "documents"}; resets the records
    GET /_rs/requests    JSON {"requests": [record, ...]}: method, target, authorization ("none",
                         "bearer" or the scheme seen), status, reason, and a verified token's
                         aud, client_id, scope. Never the token itself.
    GET /_rs/sensitive   JSON {label: token} of every bearer token received, for the leak scan
    python3 resource_server.py --port 0 [--host 127.0.0.1]
The first line on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT stops it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import urllib.request
from pathlib import Path

from jwcrypto import jwk, jwt
from jwcrypto.common import JWException

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from echo_upstream import BadRequest, parse_head  # noqa: E402
from idp_stub import MAX_HEAD_BYTES, read_body, tokens, values  # noqa: E402
from loopback_server import run_loopback_server, wait_for_stop_signal  # noqa: E402

WELL_KNOWN = "/.well-known/oauth-protected-resource"
JWKS_FETCH_SECONDS = 5


class TokenRefused(Exception):
    pass


class ResourceServer:
    def __init__(self, host: str, port: int) -> None:
        self.origin = f"http://{host}:{port}"
        self.configure({})

    def configure(self, config: dict) -> None:
        self.path = config.get("path", "/mcp")
        self.resource = self.origin + self.path
        self.issuer = config.get("issuer")
        self.jwks_uri = config.get("jwks_uri")
        self.metadata = config.get("metadata", "well-known")
        if self.metadata not in ("well-known", "challenge", "none"):
            raise ValueError(f"metadata {self.metadata!r}")
        self.metadata_resource = config.get("metadata_resource", self.resource)
        self.authorization_servers = config.get("authorization_servers", [self.issuer] if self.issuer else [])
        self.scopes_supported = config.get("scopes_supported", ["api.read"])
        self.challenge_scope = config.get("challenge_scope", " ".join(self.scopes_supported))
        self.documents: dict[str, dict] = config.get("documents", {})
        self.keys: jwk.JWKSet | None = None
        self.records: list[dict] = []
        self.tokens: dict[str, str] = {}

    @property
    def metadata_url(self) -> str | None:
        """Where the metadata is served (and what the 401 names), or None."""
        if self.metadata == "well-known":
            return self.origin + WELL_KNOWN + self.path
        if self.metadata == "challenge":
            return self.origin + "/metadata" + self.path
        return None

    def metadata_document(self) -> dict:
        return {"resource": self.metadata_resource, "authorization_servers": self.authorization_servers,
                "scopes_supported": self.scopes_supported, "bearer_methods_supported": ["header"],
                "resource_name": "the tests' protected resource"}

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
                    status, answer, extra = await self.serve(request)
                await send(writer, status, answer, extra, close=close)
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def control(self, method: str, path: str, body: bytes):
        if path == "/_rs/config" and method == "PUT":
            try:
                self.configure(json.loads(body or b"{}"))
            except ValueError as e:
                return 400, {"error": str(e)}, []
            return 200, {"resource": self.resource, "metadata_url": self.metadata_url}, []
        if path == "/_rs/requests" and method == "GET":
            return 200, {"requests": self.records}, []
        if path == "/_rs/sensitive" and method == "GET":
            return 200, self.tokens, []
        return 404, {"error": "unknown control path"}, []

    async def serve(self, request):
        record = {"method": request.method, "target": request.target, "authorization": "none", "status": None,
                  "reason": None}
        self.records.append(record)
        if request.method == "GET" and self.metadata_url is not None and self.origin + request.path == self.metadata_url:
            record.update(status=200, reason="metadata")
            return 200, self.metadata_document(), []
        if request.method == "GET" and request.path in self.documents:
            record.update(status=200, reason="document")
            return 200, self.documents[request.path], []
        if not (request.path == self.path or request.path.startswith(self.path.rstrip("/") + "/")):
            record.update(status=404, reason="not a protected path")
            return 404, {"error": "not found"}, []
        authorization = values(request.headers, "authorization")
        scheme, _, token = authorization[0].partition(" ") if len(authorization) == 1 else ("", "", "")
        if authorization:
            record["authorization"] = "bearer" if scheme.lower() == "bearer" else (scheme or f"{len(authorization)} fields")
        if token:
            self.tokens[f"a bearer token the resource server received ({len(self.tokens) + 1})"] = token
        if record["authorization"] == "none":
            record.update(status=401, reason="no token")
            return 401, {"error": "unauthorized"}, [("WWW-Authenticate", self.challenge())]
        try:
            if record["authorization"] != "bearer" or not token:
                raise TokenRefused("Authorization is not 'Bearer <token>'")
            claims = await self.verify(token)
        except TokenRefused as refused:
            record.update(status=401, reason=f"invalid_token: {refused}")
            return 401, {"error": "invalid_token", "reason": str(refused)}, [
                ("WWW-Authenticate", self.challenge('error="invalid_token"'))]
        record.update(status=200, reason="verified", aud=claims.get("aud"), client_id=claims.get("client_id"),
                      scope=claims.get("scope"))
        return 200, {"method": request.method, "target": request.target, "claims": claims}, []

    def challenge(self, *extra: str) -> str:
        parameters = list(extra)
        if self.metadata_url is not None:
            parameters.append(f'resource_metadata="{self.metadata_url}"')
        else:
            parameters.append('realm="resource"')
        parameters.append(f'scope="{self.challenge_scope}"')
        return "Bearer " + ", ".join(parameters)

    async def verify(self, token: str) -> dict:
        if self.jwks_uri is None or self.issuer is None:
            raise TokenRefused("no issuer and jwks_uri configured")
        if self.keys is None:
            self.keys = await asyncio.to_thread(fetch_jwks, self.jwks_uri)
        try:
            claims = json.loads(jwt.JWT(jwt=token, key=self.keys, algs=["RS256"]).claims)
        except (JWException, ValueError) as e:
            raise TokenRefused(f"signature: {type(e).__name__}") from None
        if not isinstance(claims.get("exp"), int) or claims["exp"] <= time.time():
            raise TokenRefused("expired or no exp")
        if claims.get("iss") != self.issuer:
            raise TokenRefused(f"iss {claims.get('iss')!r} is not {self.issuer!r}")
        audiences = claims.get("aud") if isinstance(claims.get("aud"), list) else [claims.get("aud")]
        if self.resource not in audiences:
            raise TokenRefused(f"aud {claims.get('aud')!r} does not name {self.resource!r}")
        return claims


def fetch_jwks(url: str) -> jwk.JWKSet:
    with urllib.request.urlopen(url, timeout=JWKS_FETCH_SECONDS) as resp:
        return jwk.JWKSet.from_json(resp.read())


async def send(writer, status: int, answer: dict, headers=(), close: bool = False) -> None:
    body = json.dumps(answer).encode()
    reason = {200: "OK", 401: "Unauthorized", 404: "Not Found"}.get(status, "Error")
    lines = [f"HTTP/1.1 {status} {reason}", "Content-Type: application/json",
             *(f"{k}: {v}" for k, v in headers), f"Content-Length: {len(body)}"]
    if close:
        lines.append("Connection: close")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()


async def _main(host: str, port: int) -> None:
    servers: list[ResourceServer] = []
    listener = await asyncio.start_server(lambda r, w: servers[0].connection(r, w), host, port, limit=MAX_HEAD_BYTES)
    bound = listener.sockets[0].getsockname()[1]
    servers.append(ResourceServer(host, bound))
    print(f"LISTENING {host} {bound}", flush=True)
    await wait_for_stop_signal()
    listener.close()


def main(argv: list[str] | None = None) -> None:
    run_loopback_server(__doc__.split("\n\n")[0], _main, argv)


if __name__ == "__main__":
    sys.exit(main())
