"""idpyoidc's authorization server (PyPI `idpyoidc`, pinned in tests/requirements.txt) as the real
RFC 8693 token exchange server of the per-caller tests: a library the project did not write
decides every answer of its token endpoint (client authentication, the password grant, the
exchange policy, minting and signing); this file only carries HTTP to it, as idpyoidc's own Flask
example does, and records what the token endpoint was asked (idp_idpyoidc_recorder.py).

Run by `idp_idpyoidc.IdpyoidcIdP`, with the Python that has idpyoidc:
    python3 idp_idpyoidc_server.py --dir DIR --spec FILE [--port 0]
The spec (JSON, written by the fixture) names the users and the clients:
    {"users": {name: {"password", "email"}}, "access_token_seconds": N,
     "clients": [{"client_id", "client_secret", "auth_methods": [...], "grant_types": [...],
                  "scopes": [...], "caller_audience": [...],
                  "exchange": {"audiences": [...], "resources": [...], "scopes": [...]}}]}
`exchange` is the client's RFC 8693 policy (idpyoidc's validate_token_exchange_policy: an
`audience` or `resource` outside its lists is invalid_target); `caller_audience` is the `aud` of
the access tokens the client gets by the password grant. The first line on stdout is
`LISTENING <host> <port>`; SIGTERM or SIGINT stops it. Keys (RS256 for access tokens) are made at
start, in DIR.

URLs (the issuer is http://127.0.0.1:<port>):
    GET  /.well-known/openid-configuration, /.well-known/oauth-authorization-server
                        idpyoidc's provider metadata (grant_types_supported: the configured ones)
    GET  /jwks.json     the public keys access tokens are signed with
    POST /token         idpyoidc's token endpoint: the password grant and token exchange
    POST /introspection idpyoidc's RFC 7662 introspection (client_secret_basic or _post)
    GET  /_test/token-requests, POST /_test/hold  the recorder's (idp_idpyoidc_recorder.py)

Two adjustments to idpyoidc 5.0.0, both on its session manager, neither in the exchange itself:
- Its password grant makes a grant with no usage rules and no authentication event, so its
  access tokens could never be the subject of an exchange ("Minting of access_token not
  supported"). Each new password grant gets the login's authentication event and is given to
  idpyoidc's own AuthzHandling, as its authorization endpoint does for a code grant: the
  configured usage rules, claims and resources.
- Its exchange grant takes neither the requested `audience`/`resource` (ExchangeGrant's payload
  puts the grant's empty resources in `aud`, overwriting the token's) nor the configured usage
  rules (its constructor fixes a 60-second lifetime). Both are set on the grant from the request
  and the client's rules, as TokenExchangeHelper already computes them for the token.

The access log names method, path (never a query) and status; idpyoidc's own loggers are kept at
ERROR (at INFO they print request headers, Authorization included).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import socketserver
import sys
import threading
import traceback
from pathlib import Path
from urllib.parse import parse_qsl
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from idp_idpyoidc_recorder import TokenRequestRecorder

EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
HELPERS = {
    "password": "idpyoidc.server.oauth2.token_helper.resource_owner_password_credentials.ResourceOwnerPasswordCredentials",
    EXCHANGE_GRANT: "idpyoidc.server.oidc.token_helper.token_exchange.TokenExchangeHelper",
}
POLICY = "idpyoidc.server.oauth2.token_helper.validate_token_exchange_policy"
# The password grant's authentication method; idpyoidc picks it by this class reference.
PASSWORD_ACR = "urn:oasis:names:tc:SAML:2.0:ac:classes:InternetProtocolPassword"


def server_config(issuer: str, workdir: Path, spec: dict) -> dict:
    seconds = spec.get("access_token_seconds", 3600)
    grants = sorted({grant for client in spec["clients"] for grant in client["grant_types"]})
    scopes = sorted({scope for client in spec["clients"] for scope in client["scopes"]})
    return {
        "issuer": issuer,
        "httpc_params": {"verify": True, "timeout": 5},
        # What the metadata says (idpyoidc's defaults name grants and methods not configured here).
        "preference": {"grant_types_supported": grants, "scopes_supported": scopes,
                       "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"]},
        "keys": {"uri_path": "jwks.json", "key_defs": [{"type": "RSA", "use": ["sig"]}]},
        "endpoint": {
            "provider_config": {"path": ".well-known/openid-configuration",
                                "class": "idpyoidc.server.oidc.provider_config.ProviderConfiguration", "kwargs": {}},
            "token": {"path": "token", "class": "idpyoidc.server.oidc.token.Token", "kwargs": {
                "client_authn_method": ["client_secret_basic", "client_secret_post"],
                "grant_types_helpers": {grant: {"class": HELPERS[grant], "kwargs": (
                    {"requested_token_types_supported": [ACCESS_TOKEN_TYPE],
                     "policy": {"": {"function": POLICY}}} if grant == EXCHANGE_GRANT else {})}
                    for grant in grants},
            }},
            "introspection": {"path": "introspection", "class": "idpyoidc.server.oauth2.introspection.Introspection",
                              "kwargs": {"client_authn_method": ["client_secret_basic", "client_secret_post"]}},
        },
        "authentication": {"user": {"acr": PASSWORD_ACR, "class": "idpyoidc.server.user_authn.user.UserPass",
                                    "kwargs": {"db_conf": {"class": "idpyoidc.server.util.JSONDictDB",
                                                           "kwargs": {"filename": str(workdir / "passwords.json")}}}}},
        "userinfo": {"class": "idpyoidc.server.user_info.UserInfo", "kwargs": {"db": {
            name: {"sub": name, "email": user["email"], "preferred_username": name}
            for name, user in spec["users"].items()}}},
        # No ID tokens here: claims are released into access tokens and introspection answers only.
        "claims_interface": {"class": "idpyoidc.server.session.claims.ClaimsInterface",
                             "kwargs": {"claims_release_points": ["introspection", "access_token"]}},
        "authz": {"class": "idpyoidc.server.authz.AuthzHandling", "kwargs": {"grant_config": {
            "usage_rules": {"access_token": {"supports_minting": ["access_token"], "expires_in": seconds}},
            "expires_in": 43200}}},
        "token_handler_args": {
            "jwks_def": {"private_path": str(workdir / "token_jwks.json"), "read_only": False,
                         "key_defs": [{"type": "oct", "bytes": 24, "use": ["enc"], "kid": "code"}]},
            "code": {"kwargs": {"lifetime": 600}},
            # JWT access tokens; `sub` (and `email` with the email scope) from the userinfo above.
            "token": {"class": "idpyoidc.server.token.jwt_token.JWTToken", "kwargs": {
                "lifetime": seconds, "alg": "RS256", "add_claims_by_scope": True, "base_claims": {"sub": None}}},
            "refresh": {"kwargs": {"lifetime": 86400}},
        },
    }


def register_clients(context, spec: dict) -> dict[str, list[str]]:
    """The clients as idpyoidc's client database holds them; returns each one's caller audience."""
    audiences = {}
    for client in spec["clients"]:
        entry = {
            "client_id": client["client_id"], "client_secret": client["client_secret"],
            "token_endpoint_client_authn_method": client["auth_methods"],
            "introspection_endpoint_client_authn_method": client["auth_methods"],
            "grant_types_supported": client["grant_types"], "allowed_scopes": client["scopes"],
        }
        exchange = client.get("exchange")
        if exchange is not None:
            entry["token_exchange"] = {
                "requested_token_types_supported": [ACCESS_TOKEN_TYPE],
                "default_requested_token_type": ACCESS_TOKEN_TYPE,
                "policy": {"": {"function": POLICY, "kwargs": {
                    "audience": exchange.get("audiences", []), "resource": exchange.get("resources", []),
                    "scope": exchange.get("scopes", client["scopes"])}}},
            }
        context.cdb[client["client_id"]] = entry
        audiences[client["client_id"]] = client.get("caller_audience") or [client["client_id"]]
    return audiences


def authorize_password_grants(context, audiences: dict[str, list[str]]) -> None:
    """A new password grant records the login (an authentication event, as idpyoidc's login
    endpoints make) and goes through idpyoidc's AuthzHandling (usage rules, claims, resources),
    as a grant made at its authorization endpoint does."""
    from idpyoidc.server.authn_event import create_authn_event
    manager = context.session_manager
    add_grant = manager.add_grant

    def add_authorized_grant(path, token_usage_rules=None, scope=None, **grant_args):
        user_id, client_id = path
        grant_args.setdefault("authentication_event", create_authn_event(user_id, authn_info=PASSWORD_ACR))
        branch_id = add_grant(path, token_usage_rules=token_usage_rules, scope=scope, **grant_args)
        context.authz(branch_id, {"scope": context.cdb[client_id].get("allowed_scopes", [])},
                      resources=audiences.get(client_id))
        return branch_id
    manager.add_grant = add_authorized_grant


def carry_exchange_targets(context) -> None:
    """An exchange grant holds the request's audience and resource (its tokens' `aud`) and the
    exchanging client's usage rules."""
    manager = context.session_manager
    add_exchange_grant = manager.add_exchange_grant

    def add_targeted_exchange_grant(exchange_request, original_branch_id, path, token_usage_rules=None, **grant_args):
        targets = list(exchange_request.get("resource", [])) + list(exchange_request.get("audience", []))
        if targets:
            grant_args["resources"] = sorted(set(targets))
        if token_usage_rules:
            grant_args["usage_rules"] = token_usage_rules
        return add_exchange_grant(exchange_request, original_branch_id, path,
                                  token_usage_rules=token_usage_rules, **grant_args)
    manager.add_exchange_grant = add_targeted_exchange_grant


# ---------------------------------------------------------------------------------------------
# HTTP to idpyoidc's endpoints.

class IdpyoidcApp:
    """A WSGI application handing each request to an idpyoidc endpoint, the way idpyoidc's Flask
    example does (parse_request, process_request, do_response). idpyoidc's session manager is
    not thread-safe: one request at a time goes in."""

    def __init__(self, server):
        from idpyoidc.message.oauth2 import ResponseMessage
        from idpyoidc.server.exception import ClientAuthenticationError
        self.server = server
        self.lock = threading.Lock()
        self.error_types = (ResponseMessage, ClientAuthenticationError)
        self.routes = {
            ("GET", "/.well-known/openid-configuration"): "provider_config",
            ("GET", "/.well-known/oauth-authorization-server"): "provider_config",
            ("POST", "/token"): "token",
            ("POST", "/introspection"): "introspection",
        }

    def __call__(self, environ, start_response):
        method, path = environ["REQUEST_METHOD"], environ.get("PATH_INFO", "")
        if (method, path) == ("GET", "/jwks.json"):
            with self.lock:
                body = json.dumps(self.server.keyjar.export_jwks(issuer_id="")).encode()
            return self._answer(start_response, 200, body, [("Content-Type", "application/json")])
        name = self.routes.get((method, path))
        if name is None:
            return self._answer(start_response, 404, b'{"error": "not_found"}', [("Content-Type", "application/json")])
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length).decode("utf-8", "replace") if length else ""
        headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        http_info = {"headers": headers, "method": method, "url": f"{self.server.context.issuer}{path}", "cookie": []}
        with self.lock:
            status, payload, extra = self._endpoint(self.server.get_endpoint(name), body, http_info)
        return self._answer(start_response, status, payload.encode(), extra)

    def _endpoint(self, endpoint, body: str, http_info: dict) -> tuple[int, str, list]:
        from idpyoidc.message.oauth2 import ResponseMessage
        from idpyoidc.server.exception import ClientAuthenticationError
        json_type = [("Content-Type", "application/json")]
        try:
            request = endpoint.parse_request(dict(parse_qsl(body)) if body else {}, http_info=http_info)
        except ClientAuthenticationError as err:
            # RFC 6749 §5.2: a client that failed to authenticate gets 401 invalid_client.
            error = ResponseMessage(error="invalid_client", error_description=str(err) or type(err).__name__)
            return 401, error.to_json(), json_type + [("WWW-Authenticate", 'Basic realm="token"')]
        except Exception as err:  # what idpyoidc's example answers for any other failure to parse
            # The type alone: a message may quote what it could not parse.
            sys.stderr.write(f"{endpoint.name}: the request was not parsed ({type(err).__name__})\n")
            return 400, ResponseMessage(error="invalid_request", error_description=str(err)).to_json(), json_type
        if isinstance(request, ResponseMessage) and "error" in request:
            return 400, request.to_json(), json_type
        try:
            args = endpoint.process_request(request, http_info=http_info)
            if isinstance(args, ResponseMessage) and "error" in args:
                return 400, args.to_json(), json_type
            args.pop("cookie", None)  # no browser here: the session cookie is of no use
            info = endpoint.do_response(request=request, **args)
        except Exception:  # a fault of the server (or of this configuration): the test must see it
            traceback.print_exc()
            return 500, ResponseMessage(error="server_error").to_json(), json_type
        return info.get("response_code", 200), info["response"], list(info.get("http_headers", []))

    @staticmethod
    def _answer(start_response, status: int, body: bytes, headers: list):
        reasons = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}
        start_response(f"{status} {reasons.get(status, 'Status')}", headers + [("Content-Length", str(len(body)))])
        return [body]


def build_server(issuer: str, workdir: Path, spec: dict):
    from idpyoidc.server import Server
    from idpyoidc.server.configure import OPConfiguration
    (workdir / "passwords.json").touch(mode=0o600)
    (workdir / "passwords.json").write_text(json.dumps({name: user["password"] for name, user in spec["users"].items()}))
    server = Server(OPConfiguration(conf=server_config(issuer, workdir, spec), base_path=str(workdir)), cwd=str(workdir))
    audiences = register_clients(server.context, spec)
    authorize_password_grants(server.context, audiences)
    carry_exchange_targets(server.context)
    return server


class ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class Handler(WSGIRequestHandler):
    """wsgiref's handler with an access log that never shows a query."""

    def log_request(self, code="-", size="-"):
        sys.stderr.write(f"{self.command or '-'} {(self.path or '').split('?', 1)[0]} {code}\n")

    def log_message(self, format, *args):
        sys.stderr.write(f"http: {format.split('%', 1)[0].strip()} ({self.command or '-'})\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True, help="where the keys and the password file go")
    parser.add_argument("--spec", type=Path, required=True, help="users and clients (JSON)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.host != "127.0.0.1":
        parser.error("only 127.0.0.1")
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    for name in ("idpyoidc", "cryptojwt"):
        logging.getLogger(name).setLevel(logging.ERROR)
    httpd = ThreadingServer((args.host, args.port), Handler)
    port = httpd.server_address[1]
    server = build_server(f"http://{args.host}:{port}", args.dir, json.loads(args.spec.read_text()))
    httpd.set_app(TokenRequestRecorder(IdpyoidcApp(server), token_path="/token"))
    print(f"LISTENING {args.host} {port}", flush=True)

    def stop(*_):
        threading.Thread(target=httpd.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    httpd.serve_forever(poll_interval=0.1)
    httpd.server_close()


if __name__ == "__main__":
    main()
