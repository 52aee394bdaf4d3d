"""Zero-configuration identities (issue 29): the refusals of the `auto` chain that a real server
cannot be made to answer, against a scripted stub that is the protected resource and its
authorization server at once: a registration endpoint answering 400 `invalid_client_metadata`,
a 200 without `client_id`, a registration endpoint over plain http on a host that is not loopback,
and resource metadata naming another resource; a probe whose `resource_metadata` is on a Bearer
challenge after a DPoP one; and `needs-configuration` tried again at once on a logout and on an
unchanged reload. Also what needs an answer a real server gives only when made to: a token
endpoint answering `invalid_client` to the registered client (registered again), a step-up's
scope kept with the registration across a restart, the registration shared by two relays through
Redis, and an RFC 7592 deletion slower than the CLI's usual wait. The happy path (and the
refusals Glewlwyd can give) are test_auto_identity.py's.

The stub verifies every request it receives: the paths in the chain's order (RFC 9728 §3.1's
well-known URL, the OpenID Connect document, RFC 8414's, the registration), `Accept:
application/json` on every GET and no credential on any, and the registration's headers and
every member of its JSON body. No request of a client reaches the resource without a token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
import time
from urllib.parse import parse_qs
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

import pytest

from admin_client import start_with_admin
from deadlines import wait_until
from http_client import assert_problem
from login_relay import CALLBACK_PATH, RawBrowser, get, identity_view
from processes import LOOPBACK, STORE_KEY, can_connect, free_port, relay_config, run_cli, write_config

pytestmark = pytest.mark.oauth

RESOLVE_SECONDS = 10
INITIAL_ACCESS_TOKEN = "initial-access-token-7d1f0c9a2b8e4f65"


class AutoStub:
    """The protected resource `http://127.0.0.1:PORT/mcp` and its authorization server (issuer
    `http://127.0.0.1:PORT`), with the registration endpoint's answer (`registration`: status and
    JSON body, or a list of them answered in turn, the last repeating) and the resource metadata's
    `resource` scripted. `tokens`: the token endpoint's answers in turn (the last repeating);
    `insufficient`: access tokens the resource answers 403 `insufficient_scope` asking for that
    scope; `delete_delay`: how long an RFC 7592 DELETE waits before its 204."""

    def __init__(self, registration: tuple[int, dict] | list[tuple[int, dict]], metadata_resource: str | None = None,
                 registration_endpoint: str | None = None, tokens: list[tuple[int, dict]] | None = None,
                 delete_delay: float = 0, well_known: bool = True, probe: tuple[int, list[str]] = (404, []),
                 device: tuple[int, dict] | None = None, stream_resource: bool = False) -> None:
        self.registrations = list(registration) if isinstance(registration, list) else [registration]
        self.tokens = list(tokens or [])
        # One token endpoint answer set by a test after the start (else `tokens` in turn).
        self.token: tuple[int, dict] | None = None
        self.insufficient: dict[str, str] = {}
        # The resource metadata's `scopes_supported`.
        self.scopes_supported = ["mcp.read"]
        self.delete_delay = delete_delay
        # Whether RFC 9728 §3.1's well-known URL serves the metadata (else 404; `/meta` always does).
        self.well_known = well_known
        # What the resource `/mcp` answers a GET without a token: status and WWW-Authenticate values.
        self.probe = probe
        # The device authorization endpoint's answer (else a device code).
        self.device = device
        # No metadata at the well-known URL; the resource answers 200 with an endless event stream.
        self.stream_resource = stream_resource
        self.streaming_ended = threading.Event()
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # no access log on stderr
                pass

            def answer(self, status: int, body: dict | None, challenges: list[str] = ()) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                for challenge in challenges:
                    self.send_header("WWW-Authenticate", challenge)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def record(self) -> dict:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                entry = {"method": self.command, "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                         "body": body}
                with stub.lock:
                    stub.requests.append(entry)
                return entry

            def do_GET(self) -> None:
                self.record()
                if stub.stream_resource and self.path == "/mcp":
                    return self.stream()
                if stub.stream_resource:
                    return self.answer(404, {"error": "not_found"})
                if self.path == "/mcp":
                    status, challenges = stub.probe
                    return self.answer(status, {"probe": True}, [c.replace("{issuer}", stub.issuer) for c in challenges])
                if self.path == "/meta" or self.path == "/.well-known/oauth-protected-resource/mcp" and stub.well_known:
                    return self.answer(200, {"resource": stub.metadata_resource, "authorization_servers": [stub.issuer],
                                             "scopes_supported": stub.scopes_supported})
                if self.path == "/.well-known/oauth-authorization-server":
                    return self.answer(200, {
                        "issuer": stub.issuer, "authorization_endpoint": stub.issuer + "/authorize",
                        "token_endpoint": stub.issuer + "/token", "registration_endpoint": stub.registration_endpoint,
                        "device_authorization_endpoint": stub.issuer + "/device",
                        "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                        "revocation_endpoint": stub.issuer + "/revoke",
                    })
                if self.path.startswith("/mcp/"):
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    if token in stub.insufficient:
                        challenge = f'Bearer error="insufficient_scope", scope="{stub.insufficient[token]}"'
                        return self.answer(403, {"error": "insufficient_scope"}, [challenge])
                    return self.answer(200, {"token": token})
                self.answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                self.record()
                if self.path == "/register":
                    return self.answer(*stub.next(stub.registrations))
                if self.path == "/token" and stub.token:
                    return self.answer(*stub.token)
                if self.path == "/token":
                    return self.answer(*stub.next(stub.tokens))
                if self.path == "/device" and stub.device:
                    return self.answer(*stub.device)
                if self.path == "/device":
                    return self.answer(200, {"device_code": "device-code-1", "user_code": "WDJB-MJHT",
                                             "verification_uri": stub.issuer + "/verify", "expires_in": 600, "interval": 1})
                if self.path == "/revoke":
                    return self.answer(200, None)
                self.answer(404, {"error": "not_found"})

            def do_DELETE(self) -> None:
                self.record()
                if self.path.startswith("/register/"):
                    time.sleep(stub.delete_delay)  # the scripted slow server, not a wait for a condition
                    return self.answer(204, None)
                self.answer(404, {"error": "not_found"})

            def stream(self) -> None:
                """200 text/event-stream, a comment every 50 ms until the relay hangs up."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    while not stub.stopping.wait(0.05):
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                except OSError:
                    pass
                stub.streaming_ended.set()
                self.close_connection = True

        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.port = self.server.server_address[1]
        self.issuer = f"http://{LOOPBACK}:{self.port}"
        self.resource = f"{self.issuer}/mcp"
        self.metadata_resource = metadata_resource or self.resource
        self.registration_endpoint = registration_endpoint or f"{self.issuer}/register"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def next(self, answers: list) -> tuple[int, dict]:
        """The first of `answers`, taken unless it is the last."""
        with self.lock:
            return answers.pop(0) if len(answers) > 1 else answers[0]

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def recorded(self) -> list[dict]:
        with self.lock:
            return list(self.requests)


@pytest.fixture
def auto_stub():
    stubs: list[AutoStub] = []

    def start(**options) -> AutoStub:
        stubs.append(AutoStub(**options))
        return stubs[-1]

    yield start
    for stub in stubs:
        stub.stop()


def start_auto_relay(start_relay, stub: AutoStub, tmp_path, **auto):
    """A relay with only an `auto` route to the stub's resource and a store; returns (relay,
    AdminClient, identity name) once the identity failed to resolve (it shows a lastError)."""
    routes = [{"match": {"pathPrefix": "/mcp/"}, "upstream": stub.resource, "identity": "auto"}]
    relay, admin = start_with_admin(start_relay, routes, store={"path": str(tmp_path / "token-store"), "key": STORE_KEY},
                                    **({"auto": auto} if auto else {}))
    name = f"auto-{LOOPBACK}-{stub.port}-mcp"
    wait_until(lambda: identity_view(admin, name).get("lastError"), RESOLVE_SECONDS, "the auto identity's failure")
    return relay, admin, name


def assert_chain(stub: AutoStub, relay, registers: bool, initial_access_token: str | None = None) -> None:
    """Every request the stub received is one of the chain's, in its order, repeated whole by each
    attempt (the relay backs off and tries again), and carries exactly what it should."""
    chain = [("GET", "/.well-known/oauth-protected-resource/mcp")]
    if registers is not None:
        chain += [("GET", "/.well-known/openid-configuration"), ("GET", "/.well-known/oauth-authorization-server")]
    if registers:
        chain.append(("POST", "/register"))
    seen = stub.recorded()
    assert seen, "the stub received nothing"
    paths = [(r["method"], r["path"]) for r in seen]
    whole = len(paths) - len(paths) % len(chain)
    assert paths[:whole] == chain * (whole // len(chain)) and paths[whole:] == chain[:len(paths) - whole], paths
    for request in seen:
        headers = request["headers"]
        assert headers["host"] == f"{LOOPBACK}:{stub.port}", headers
        if request["method"] == "GET":
            assert headers.get("accept") == "application/json", headers
            assert "authorization" not in headers and "cookie" not in headers, headers
            assert request["body"] == b"", request
            continue
        assert headers.get("content-type") == "application/json", headers
        assert headers.get("accept") == "application/json", headers
        expected_authorization = f"Bearer {initial_access_token}" if initial_access_token else None
        assert headers.get("authorization") == expected_authorization, "the registration's Authorization header"
        assert json.loads(request["body"]) == {
            "client_name": "oauth-relay",
            "redirect_uris": [f"{relay.url}{CALLBACK_PATH}"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "scope": "mcp.read",
        }, request["body"]


def assert_refused(relay, stub: AutoStub, status: int, detail_has: str) -> None:
    """A client's request gets the problem, and never reaches the resource."""
    resp = get(relay, "/mcp/tools")
    problem = assert_problem(resp, status)
    assert detail_has in problem["detail"], problem
    assert not [r for r in stub.recorded() if r["path"].startswith("/mcp")], "a request reached the resource without a token"


def test_a_registration_refused_with_invalid_client_metadata_is_reported_and_tried_again(start_relay, auto_stub, tmp_path,
                                                                                         sensitive):
    sensitive.add("initial access token", INITIAL_ACCESS_TOKEN)
    stub = auto_stub(registration=(400, {"error": "invalid_client_metadata", "error_description": "redirect_uris not allowed"}))
    relay, admin, name = start_auto_relay(start_relay, stub, tmp_path, initialAccessToken=INITIAL_ACCESS_TOKEN,
                                          allowedIssuers=[stub.issuer])
    view = identity_view(admin, name)
    assert view["state"] == "failing", view
    assert view["lastError"]["code"] == "registration_refused", view
    assert "invalid_client_metadata" in view["lastError"]["description"], view
    assert "redirect_uris not allowed" in view["lastError"]["description"], view
    assert "auto" not in view, view
    assert_refused(relay, stub, 502, "invalid_client_metadata")
    # The server may be fixed: the chain runs again after its backoff.
    wait_until(lambda: len([r for r in stub.recorded() if r["method"] == "POST"]) >= 2, RESOLVE_SECONDS, "a second registration")
    assert_chain(stub, relay, registers=True, initial_access_token=INITIAL_ACCESS_TOKEN)
    assert not list((tmp_path / "token-store").glob("client-*")), "a refused registration was kept"


def test_a_registration_answer_without_client_id_is_refused(start_relay, auto_stub, tmp_path):
    stub = auto_stub(registration=(200, {"client_name": "oauth-relay", "token_endpoint_auth_method": "none"}))
    relay, admin, name = start_auto_relay(start_relay, stub, tmp_path)
    view = identity_view(admin, name)
    assert view["state"] == "failing", view
    assert view["lastError"]["code"] == "invalid_resource_metadata", view
    assert "has no client_id" in view["lastError"]["description"], view
    assert_refused(relay, stub, 502, "has no client_id")
    assert_chain(stub, relay, registers=True)
    assert not list((tmp_path / "token-store").glob("client-*")), "an unusable registration was kept"


def test_a_registration_endpoint_over_plain_http_to_another_host_is_never_used(start_relay, auto_stub, tmp_path):
    stub = auto_stub(registration=(201, {"client_id": "never-asked"}), registration_endpoint="http://registration.example.test/register")
    relay, admin, name = start_auto_relay(start_relay, stub, tmp_path)
    view = identity_view(admin, name)
    assert view["lastError"]["code"] == "insecure_url", view
    assert "http://registration.example.test/register" in view["lastError"]["description"], view
    assert_refused(relay, stub, 502, "registration.example.test")
    assert_chain(stub, relay, registers=False)


def test_resource_metadata_for_another_resource_is_refused(start_relay, auto_stub, tmp_path):
    stub = auto_stub(registration=(201, {"client_id": "never-asked"}), metadata_resource="https://api.example.test/mcp")
    relay, admin, name = start_auto_relay(start_relay, stub, tmp_path)
    view = identity_view(admin, name)
    assert view["lastError"]["code"] == "resource_mismatch", view
    assert "https://api.example.test/mcp" in view["lastError"]["description"], view
    assert stub.resource in view["lastError"]["description"], view
    assert_refused(relay, stub, 502, "https://api.example.test/mcp")
    # Nothing past the metadata: no authorization server is asked.
    assert_chain(stub, relay, registers=None)


# ---------------------------------------------------------------------------------------------
# oauth-relay check --resolve: read-only.

def check_resolve(tmp_path, stub: AutoStub) -> tuple[int, str, str]:
    listen = f"{LOOPBACK}:{free_port()}"
    routes = [{"match": {"pathPrefix": "/mcp/"}, "upstream": stub.resource, "identity": "auto"}]
    config = write_config(tmp_path / "check.json", relay_config(listen, routes, store={"path": str(tmp_path / "token-store"),
                                                                                        "key": STORE_KEY}))
    done = run_cli("check", "--resolve", "--config", str(config))
    return done.returncode, done.stdout, listen


def test_check_resolve_says_what_it_would_register_and_registers_nothing(auto_stub, tmp_path):
    stub = auto_stub(registration=(400, {"error": "invalid_client_metadata"}))
    status, out, listen = check_resolve(tmp_path, stub)
    assert status == 0, out
    name = f"auto-{LOOPBACK}-{stub.port}-mcp"
    assert f"identity {name}:\n" in out, out
    assert f"  resource: {stub.resource}\n" in out, out
    assert f"  resource metadata: {stub.issuer}/.well-known/oauth-protected-resource/mcp (well-known)\n" in out, out
    assert f"  authorization server: {stub.issuer} (resource-metadata)\n" in out, out
    assert f"  token endpoint: {stub.issuer}/token (discovery)\n" in out, out
    assert (f"  client id: none yet: would register at {stub.issuer}/register: client_name \"oauth-relay\", grant_types "
            f"authorization_code refresh_token, token_endpoint_auth_method none, redirect_uris http://{listen}/.oauth-relay/callback\n"
            in out), out
    assert "  scope: mcp.read (resource-metadata)\n" in out, out
    assert_chain(stub, None, registers=False)
    assert not (tmp_path / "token-store").exists(), "check created the store"


def test_check_resolve_exits_1_with_the_reason(auto_stub, tmp_path):
    stub = auto_stub(registration=(201, {"client_id": "never-asked"}), metadata_resource="https://api.example.test/mcp")
    status, out, _ = check_resolve(tmp_path, stub)
    assert status == 1, out
    assert f"  resource: {stub.resource}\n" in out, out
    assert "  cannot resolve: resource_mismatch: the protected resource metadata at " in out and '"https://api.example.test/mcp"' in out, out
    assert_chain(stub, None, registers=None)


# ---------------------------------------------------------------------------------------------
# A registered client in use: invalid_client, step-up, Redis, RFC 7592 deletion.

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def registered(client_id: str, **extra) -> tuple[int, dict]:
    """A registration's 201 for a public client."""
    return 201, {"client_id": client_id, "token_endpoint_auth_method": "none", **extra}


def issued(access_token: str, scope: str, refresh_token: str) -> tuple[int, dict]:
    return 200, {"access_token": access_token, "token_type": "Bearer", "expires_in": 3600, "scope": scope,
                 "refresh_token": refresh_token}


def start_resolved_relay(start_relay, stub: AutoStub, store: dict, **auto):
    """A relay with only an `auto` route to the stub's resource; returns (relay, AdminClient,
    identity name, its view) once the identity resolved."""
    routes = [{"match": {"pathPrefix": "/mcp/"}, "upstream": stub.resource, "identity": "auto"}]
    relay, admin = start_with_admin(start_relay, routes, store=store, **({"auto": auto} if auto else {}))
    name = f"auto-{LOOPBACK}-{stub.port}-mcp"
    view = wait_until(lambda: (v := identity_view(admin, name)).get("auto") and v, RESOLVE_SECONDS, "the auto identity's resolution")
    return relay, admin, name, view


def received(stub: AutoStub, method: str, path: str) -> list[dict]:
    return [r for r in stub.recorded() if r["method"] == method and r["path"] == path]


def form(request: dict) -> dict[str, str]:
    assert request["headers"].get("content-type") == "application/x-www-form-urlencoded", request["headers"]
    return dict(parse_qsl(request["body"].decode(), keep_blank_values=True))


def assert_registration(request: dict, redirect_uri: str | None, initial_access_token: str | None = None) -> None:
    """A registration's headers and every member of its body (a public client, scope mcp.read)."""
    headers = request["headers"]
    assert headers.get("content-type") == "application/json" and headers.get("accept") == "application/json", headers
    expected_authorization = f"Bearer {initial_access_token}" if initial_access_token else None
    assert headers.get("authorization") == expected_authorization, "the registration's Authorization header"
    browser = {"redirect_uris": [redirect_uri], "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}
    device = {"grant_types": [DEVICE_GRANT, "refresh_token"]}
    assert json.loads(request["body"]) == {"client_name": "oauth-relay", **(browser if redirect_uri else device),
                                           "token_endpoint_auth_method": "none", "scope": "mcp.read"}, request["body"]


def assert_code_exchange(request: dict, client_id: str, code: str, login: dict, relay, stub: AutoStub) -> None:
    """A code exchange of a public client (PKCE; RFC 8707: the resource again): every field."""
    assert "authorization" not in request["headers"], request["headers"]
    fields = form(request)
    verifier = fields.pop("code_verifier")
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert challenge == login["code_challenge"], "the code_verifier is not the login's"
    assert fields == {"grant_type": "authorization_code", "code": code, "redirect_uri": f"{relay.url}{CALLBACK_PATH}",
                      "client_id": client_id, "resource": stub.resource}, fields


def log_in(browser: RawBrowser, name: str, stub: AutoStub, code: str) -> dict:
    """A browser login through the relay's login start; the stub's authorization endpoint is not
    asked: its redirect back (code, state, iss) is made here. Returns the authorization request."""
    login = browser.start_login(name)
    assert login["authorization_endpoint"] == f"{stub.issuer}/authorize", login
    browser.callback({"code": code, "state": login["state"], "iss": stub.issuer})
    return login


def test_invalid_client_drops_the_registration_registers_again_with_the_current_initial_access_token(
        start_relay, auto_stub, tmp_path, sensitive):
    """A client that got a token and is then refused with `invalid_client` (the server forgot it)
    is dropped and registered again, with the initial access token the file holds then. (One
    refused before its first token is not: test_a_client_just_registered_….)"""
    first_token = sensitive.add("initial access token as loaded", "iat1-5c0f93ad71e2b846")
    second_token = sensitive.add("initial access token rewritten", "iat2-0d7e61b9a4f35c28")
    sensitive.add("issued access token", "at-5f1c9e2b7d40")
    sensitive.add("issued refresh token", "rt-93a0d4c8e1b6")
    token_file = tmp_path / "initial-access-token"
    token_file.write_text(first_token + "\n")
    token_file.chmod(0o600)
    stub = auto_stub(registration=[registered("client-one"), registered("client-two")],
                     tokens=[issued("at-5f1c9e2b7d40", "mcp.read", "rt-93a0d4c8e1b6"),
                             (401, {"error": "invalid_client", "error_description": "unknown client"})])
    store = tmp_path / "token-store"
    relay, admin, name, view = start_resolved_relay(start_relay, stub, {"path": str(store), "key": STORE_KEY},
                                                    initialAccessTokenFile=str(token_file), allowedIssuers=[stub.issuer])
    assert view["auto"]["clientId"] == "client-one" and view["state"] == "needs-login", view
    kept = store / f"client-{name}.registration"
    first_record = kept.read_bytes()
    # The file changes after the load: the next registration sends what it holds then.
    token_file.write_text(second_token + "\n")

    login = log_in(RawBrowser(relay, sensitive), name, stub, "code-one")
    assert login["client_id"] == "client-one", login
    wait_until(lambda: identity_view(admin, name)["state"] == "valid", RESOLVE_SECONDS, "the login's token")
    # The server has forgotten the client: the next token request (a refresh) is refused.
    assert admin.request("POST", f"/identities/{name}/refresh").status in (200, 202, 204)
    view = wait_until(lambda: (v := identity_view(admin, name)).get("auto", {}).get("clientId") == "client-two" and v,
                      RESOLVE_SECONDS, "the second registration in use")
    assert view["state"] == "needs-login" and view["auto"]["clientIdSource"] == "registration", view
    assert kept.read_bytes() != first_record, "the dropped registration is still kept"

    assert [(r["method"], r["path"]) for r in stub.recorded() if r["method"] == "POST"] == [
        ("POST", "/register"), ("POST", "/token"), ("POST", "/token"), ("POST", "/register")]
    first, second = received(stub, "POST", "/register")
    assert_registration(first, f"{relay.url}{CALLBACK_PATH}", first_token)
    assert_registration(second, f"{relay.url}{CALLBACK_PATH}", second_token)
    exchange, refresh = received(stub, "POST", "/token")
    assert_code_exchange(exchange, "client-one", "code-one", login, relay, stub)
    assert form(refresh) == {"grant_type": "refresh_token", "refresh_token": "rt-93a0d4c8e1b6", "client_id": "client-one"}, form(refresh)
    # A person logs in again, to the new client.
    assert_problem(get(relay, "/mcp/tools"), 401)
    assert RawBrowser(relay, sensitive).start_login(name)["client_id"] == "client-two"
    assert not [r for r in stub.recorded() if r["path"].startswith("/mcp")], "a request reached the resource without a token"


def test_a_step_up_scope_is_kept_with_the_registration_and_a_restart_finds_its_login(start_relay, auto_stub, tmp_path, sensitive):
    for value in ("narrow-access-token-1", "wide-access-token-2", "narrow-refresh-token-1", "wide-refresh-token-2"):
        sensitive.add(f"issued {value}", value)
    # The resource names its metadata in its 401 with the scope it wants first; the metadata
    # supports more, which bounds what a step-up may ask for.
    stub = auto_stub(registration=registered("client-one"),
                     tokens=[issued("narrow-access-token-1", "mcp.read", "narrow-refresh-token-1"),
                             issued("wide-access-token-2", "mcp.read mcp.write", "wide-refresh-token-2")],
                     well_known=False, probe=(401, ['Bearer resource_metadata="{issuer}/meta", scope="mcp.read"']))
    stub.scopes_supported = ["mcp.read", "mcp.write"]
    stub.insufficient["narrow-access-token-1"] = "mcp.read mcp.write"
    store = {"path": str(tmp_path / "token-store"), "key": STORE_KEY}
    relay, admin, name, view = start_resolved_relay(start_relay, stub, store)
    assert view["auto"]["scope"] == "mcp.read", view
    browser = RawBrowser(relay, sensitive)
    log_in(browser, name, stub, "code-one")
    wait_until(lambda: identity_view(admin, name)["state"] not in ("needs-login", "login-pending"), RESOLVE_SECONDS, "the first login")
    # The resource asks for more: the next login asks for the scope joined.
    assert_problem(get(relay, "/mcp/tools"), 401)
    login = log_in(browser, name, stub, "code-two")
    assert login["scope"] == "mcp.read mcp.write", login
    resp = wait_until(lambda: (r := get(relay, "/mcp/tools")).status == 200 and r, RESOLVE_SECONDS, "the widened token in use")
    assert resp.json() == {"token": "wide-access-token-2"}

    assert relay.stop() == 0
    relay.start()
    wait_until(lambda: can_connect(LOOPBACK, admin.port), 5, "the admin listener after the restart")
    view = wait_until(lambda: (v := identity_view(admin, name)).get("auto") and v, RESOLVE_SECONDS, "the resolution after the restart")
    assert view["auto"]["clientId"] == "client-one" and view["auto"]["clientIdSource"] == "store", view
    assert view["auto"]["scope"] == "mcp.read mcp.write" and view["auto"]["scopeSource"] == "store", view
    resp = wait_until(lambda: (r := get(relay, "/mcp/tools")).status == 200 and r, RESOLVE_SECONDS, "the stored login in use")
    assert resp.json() == {"token": "wide-access-token-2"}
    assert len(received(stub, "POST", "/register")) == 1
    assert len(received(stub, "POST", "/token")) == 2, "the restart asked for a token instead of reading the login kept"


def assert_device_requests(stub: AutoStub, client_ids: list[str]) -> None:
    """Each device authorization and poll names the client in use then, and nothing else."""
    for request, client_id in zip(received(stub, "POST", "/device"), client_ids):
        assert "authorization" not in request["headers"], request["headers"]
        assert form(request) == {"client_id": client_id, "scope": "mcp.read", "resource": stub.resource}, request["body"]


def test_relays_sharing_redis_share_one_registration_and_the_login_of_a_registration_made_again(
        start_relay, auto_stub, tmp_path, sensitive, redis):
    for value in ("fleet-access-token-0", "fleet-refresh-token-0", "fleet-access-token-1", "fleet-refresh-token-1"):
        sensitive.add(f"issued {value}", value)
    stub = auto_stub(registration=[registered("client-one"), registered("client-two")],
                     tokens=[issued("fleet-access-token-0", "mcp.read", "fleet-refresh-token-0"), (401, {"error": "invalid_client"}),
                             issued("fleet-access-token-1", "mcp.read", "fleet-refresh-token-1")])

    def store(n: int) -> dict:
        return {"path": str(tmp_path / f"token-store-{n}"), "key": STORE_KEY, "redis": redis.url}

    first, first_admin, name, view = start_resolved_relay(start_relay, stub, store(1), grant="device_code")
    assert view["auto"]["clientId"] == "client-one" and view["auto"]["clientIdSource"] == "registration", view
    # A device login to the first client (its first poll is granted)...
    assert first_admin.request("POST", f"/identities/{name}/login").status == 202
    wait_until(lambda: get(first, "/mcp/tools").status == 200, RESOLVE_SECONDS, "the login to the first client")
    # ...then the server forgets that client: its refresh is refused, and the client is registered again.
    assert first_admin.request("POST", f"/identities/{name}/refresh").status in (200, 202, 204)
    wait_until(lambda: identity_view(first_admin, name).get("auto", {}).get("clientId") == "client-two", RESOLVE_SECONDS,
               "the second registration in use")
    assert first_admin.request("POST", f"/identities/{name}/login").status == 202
    wait_until(lambda: get(first, "/mcp/tools").json() == {"token": "fleet-access-token-1"}, RESOLVE_SECONDS,
               "the login to the second client")

    # Another relay, with a file store of its own: the registration and the login are Redis's.
    second, second_admin, _, view = start_resolved_relay(start_relay, stub, store(2), grant="device_code")
    assert view["auto"]["clientId"] == "client-two" and view["auto"]["clientIdSource"] == "store", view
    resp = wait_until(lambda: (r := get(second, "/mcp/tools")).status == 200 and r, RESOLVE_SECONDS, "the shared login")
    assert resp.json() == {"token": "fleet-access-token-1"}
    assert len(received(stub, "POST", "/device")) == 2, "the second relay started a login of its own"
    assert len(received(stub, "POST", "/register")) == 2, "the second relay registered a client of its own"
    for request in received(stub, "POST", "/register"):
        assert_registration(request, None)
    assert_device_requests(stub, ["client-one", "client-two"])
    polls = [form(r) for r in received(stub, "POST", "/token")]
    assert polls == [
        {"grant_type": DEVICE_GRANT, "device_code": "device-code-1", "client_id": "client-one", "resource": stub.resource},
        {"grant_type": "refresh_token", "refresh_token": "fleet-refresh-token-0", "client_id": "client-one"},
        {"grant_type": DEVICE_GRANT, "device_code": "device-code-1", "client_id": "client-two", "resource": stub.resource},
    ], polls
    assert not list((tmp_path / "token-store-2").glob("client-*")), "the second relay registered into its file store"
    # `check --resolve` finds the registration in Redis too (its file store has none), and registers nothing.
    done = run_cli("check", "--resolve", "--config", str(second.config_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  client id: client-two (store, none)\n" in done.stdout, done.stdout
    assert len(received(stub, "POST", "/register")) == 2


def test_logout_forget_client_waits_for_a_deletion_slower_than_the_usual_admin_wait(start_relay, auto_stub, tmp_path, sensitive):
    access = sensitive.add("registration access token", "rat-91c4e07fa2d35b68")
    stub = auto_stub(registration=registered("client-one"), delete_delay=12)
    # Its registration_client_uri names the stub's own port.
    stub.registrations = [registered("client-one", registration_access_token=access,
                                     registration_client_uri=f"{stub.issuer}/register/client-one")]
    relay, admin, name, _ = start_resolved_relay(start_relay, stub, {"path": str(tmp_path / "token-store"), "key": STORE_KEY})
    began = time.monotonic()
    done = run_cli("logout", "--forget-client", "--config", str(relay.config_path), name, timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - began >= 12
    assert "deleted at the authorization server" in done.stderr, done.stderr
    deletion, = received(stub, "DELETE", "/register/client-one")
    assert deletion["headers"].get("authorization") == f"Bearer {access}" and deletion["body"] == b"", deletion
    assert not list((tmp_path / "token-store").glob("client-*")), "the registration is still kept"


# ---------------------------------------------------------------------------------------------
# The probe, and retrying what only configuration seemed able to fix.

def assert_requests(stub: AutoStub, expected: list[tuple[str, str]]) -> None:
    """The stub received exactly `expected` (method, path) in order, each GET without a credential
    (the probe of `/mcp` too: it carries no token), with `Accept: application/json` on every GET of
    a JSON document, and each registration as assert_chain checks it (the members it sends)."""
    seen = stub.recorded()
    assert [(r["method"], r["path"]) for r in seen] == expected, [(r["method"], r["path"]) for r in seen]
    for request in seen:
        headers = request["headers"]
        assert headers["host"] == f"{LOOPBACK}:{stub.port}", headers
        assert request["body"] == b"" or request["method"] == "POST", request
        if request["method"] == "GET":
            assert "authorization" not in headers and "cookie" not in headers and "dpop" not in headers, headers
            if request["path"] != "/mcp":
                assert headers.get("accept") == "application/json", headers
            continue
        assert headers.get("content-type") == "application/json" and headers.get("accept") == "application/json", headers
        assert "authorization" not in headers, headers
        body = json.loads(request["body"])
        assert body["grant_types"] == ["authorization_code", "refresh_token"] and body["response_types"] == ["code"], body
        assert body["token_endpoint_auth_method"] == "none" and body["scope"] == "mcp.read", body
        assert body["client_name"] == "oauth-relay" and len(body["redirect_uris"]) == 1, body
        assert body["redirect_uris"][0].endswith(CALLBACK_PATH), body
        assert set(body) == {"client_name", "redirect_uris", "grant_types", "response_types", "token_endpoint_auth_method", "scope"}, body


WELL_KNOWN = ("GET", "/.well-known/oauth-protected-resource/mcp")
PROBE = ("GET", "/mcp")
DISCOVERY = [("GET", "/.well-known/openid-configuration"), ("GET", "/.well-known/oauth-authorization-server")]


def test_the_probe_reads_resource_metadata_from_a_bearer_challenge_after_a_dpop_one(start_relay, auto_stub, tmp_path):
    stub = auto_stub(registration=(400, {"error": "invalid_client_metadata"}), well_known=False,
                     probe=(401, ['DPoP algs="ES256", Bearer resource_metadata="{issuer}/meta", scope="mcp.read"']))
    relay, admin, name = start_auto_relay(start_relay, stub, tmp_path)
    view = identity_view(admin, name)
    assert view["lastError"]["code"] == "registration_refused", view
    assert_requests(stub, [WELL_KNOWN, PROBE, ("GET", "/meta"), *DISCOVERY, ("POST", "/register")])


def test_needs_configuration_is_tried_again_at_once_on_a_logout_and_on_an_unchanged_reload(start_relay, auto_stub, tmp_path):
    stub = auto_stub(registration=(201, {"client_id": "c-after-reload", "token_endpoint_auth_method": "none"}), well_known=False,
                     probe=(200, []))
    relay, admin, name = start_auto_relay(start_relay, stub, tmp_path)
    view = identity_view(admin, name)
    assert view["state"] == "needs-configuration", view
    assert view["lastError"]["code"] == "no_resource_metadata", view
    assert "published no protected resource metadata" in view["lastError"]["description"], view
    problem = assert_problem(get(relay, "/mcp/tools"), 502)
    assert problem["type"].endswith("needs-configuration"), problem
    assert_requests(stub, [WELL_KNOWN, PROBE])

    # A logout asks again at once (the long retry is 10 minutes away).
    assert admin.request("DELETE", f"/identities/{name}/token").status == 204
    wait_until(lambda: len(stub.recorded()) >= 4, RESOLVE_SECONDS, "the chain run again after the logout")
    wait_until(lambda: identity_view(admin, name)["state"] == "needs-configuration", RESOLVE_SECONDS, "needs-configuration again")
    assert_requests(stub, [WELL_KNOWN, PROBE] * 2)

    # The resource now publishes its metadata: a reload of the same file resolves the identity.
    stub.well_known = True
    admin.reload_applied()
    wait_until(lambda: identity_view(admin, name).get("auto"), RESOLVE_SECONDS, "the identity resolved after the reload")
    view = identity_view(admin, name)
    assert view["auto"]["clientId"] == "c-after-reload", view
    assert view["state"] != "needs-configuration", view
    assert_requests(stub, [WELL_KNOWN, PROBE] * 2 + [WELL_KNOWN, *DISCOVERY, ("POST", "/register")])


# A client just registered and refused: no second registration.

REGISTRATION_ACCESS_TOKEN = "Qz7xK2mV4pL8wN3b5b0e9f3c1d2a4e67"


def test_a_client_just_registered_that_the_device_endpoint_refuses_is_not_registered_again(start_relay, auto_stub, tmp_path,
                                                                                           sensitive):
    sensitive.add("registration access token", REGISTRATION_ACCESS_TOKEN)
    stub = auto_stub(registration=(201, {"client_id": "dev-client-1", "token_endpoint_auth_method": "none",
                                         "registration_client_uri": "", "registration_access_token": REGISTRATION_ACCESS_TOKEN}),
                     device=(401, {"error": "invalid_client", "error_description": "client unknown"}))
    stub.registrations[0][1]["registration_client_uri"] = f"{stub.issuer}/register/dev-client-1"
    routes = [{"match": {"pathPrefix": "/mcp/"}, "upstream": stub.resource, "identity": "auto"}]
    relay, admin = start_with_admin(start_relay, routes, store={"path": str(tmp_path / "token-store"), "key": STORE_KEY},
                                    auto={"grant": "device_code"})
    name = f"auto-{LOOPBACK}-{stub.port}-mcp"
    wait_until(lambda: identity_view(admin, name).get("auto") or identity_view(admin, name).get("lastError"), RESOLVE_SECONDS,
               "the auto identity's resolution")
    get(relay, "/mcp/tools")  # a device login starts at a client's request
    wait_until(lambda: identity_view(admin, name)["state"] == "needs-configuration", RESOLVE_SECONDS, "needs-configuration")
    view = identity_view(admin, name)
    assert view["lastError"]["code"] == "registered_client_refused", view
    assert view["lastError"]["description"].startswith(
        f'the server refused the client it just registered: "{stub.issuer}" answered invalid_client'), view
    assert_refused(relay, stub, 502, "the server refused the client it just registered")
    wait_until(lambda: [r for r in stub.recorded() if r["method"] == "DELETE"], RESOLVE_SECONDS, "the RFC 7592 deletion")
    seen = stub.recorded()
    assert [(r["method"], r["path"]) for r in seen] == [
        ("GET", "/.well-known/oauth-protected-resource/mcp"), ("GET", "/.well-known/openid-configuration"),
        ("GET", "/.well-known/oauth-authorization-server"), ("POST", "/register"), ("POST", "/device"),
        ("DELETE", "/register/dev-client-1"),
    ], seen
    for request in seen:
        assert request["headers"]["host"] == f"{LOOPBACK}:{stub.port}", request
    registration, device, deletion = seen[3], seen[4], seen[5]
    assert "authorization" not in registration["headers"], registration
    assert json.loads(registration["body"]) == {
        "client_name": "oauth-relay", "grant_types": ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token"],
        "token_endpoint_auth_method": "none", "scope": "mcp.read",
    }, registration["body"]
    assert device["headers"].get("content-type") == "application/x-www-form-urlencoded", device
    assert "authorization" not in device["headers"], device
    assert parse_qs(device["body"].decode(), strict_parsing=True) == {
        "client_id": ["dev-client-1"], "scope": ["mcp.read"], "resource": [stub.resource],
    }, device["body"]
    assert deletion["headers"].get("authorization") == f"Bearer {REGISTRATION_ACCESS_TOKEN}", deletion
    assert deletion["body"] == b"", deletion
    assert not list((tmp_path / "token-store").glob("client-*")), "the refused client was kept"


# ---------------------------------------------------------------------------------------------
# oauth-relay logout without a running relay: registers nothing.

def test_an_offline_logout_registers_no_client_to_log_out(auto_stub, tmp_path):
    stub = auto_stub(registration=(201, {"client_id": "never-asked"}))
    listen = f"{LOOPBACK}:{free_port()}"
    routes = [{"match": {"pathPrefix": "/mcp/"}, "upstream": stub.resource, "identity": "auto"}]
    config = write_config(tmp_path / "logout.json", relay_config(listen, routes, store={"path": str(tmp_path / "token-store"),
                                                                                         "key": STORE_KEY}))
    name = f"auto-{LOOPBACK}-{stub.port}-mcp"
    done = run_cli("logout", "--forget-client", "--config", str(config), name)
    assert done.returncode == 0, done.stderr
    assert (f"oauth-relay logout: identity {name} did not resolve: no_client_kept: no registered client is kept, and this "
            f"command registers none (it would register at {stub.issuer}/register)") in done.stderr, done.stderr
    assert f"Logged out of identity {name}.\n" in done.stderr, done.stderr
    assert f"Registered client of identity {name}: no registered client was held.\n" in done.stderr, done.stderr
    assert_chain(stub, None, registers=False)
    assert not list((tmp_path / "token-store").glob("client-*")), done.stderr


# ---------------------------------------------------------------------------------------------
# The probe reads the resource's status and headers only.

def test_a_resource_that_answers_an_endless_event_stream_needs_configuration(start_relay, auto_stub, tmp_path):
    stub = auto_stub(registration=(201, {"client_id": "never-asked"}), stream_resource=True)
    relay, admin, name = start_auto_relay(start_relay, stub, tmp_path)
    view = identity_view(admin, name)
    assert view["state"] == "needs-configuration", view
    assert view["lastError"]["code"] == "no_resource_metadata", view
    assert f"without a token, {stub.resource} answered HTTP 200, not 401" in view["lastError"]["description"], view
    assert stub.streaming_ended.wait(RESOLVE_SECONDS), "the relay kept reading the stream"
    seen = stub.recorded()
    assert [(r["method"], r["path"]) for r in seen] == [("GET", "/.well-known/oauth-protected-resource/mcp"), ("GET", "/mcp")], seen
    for request in seen:
        assert request["headers"]["host"] == f"{LOOPBACK}:{stub.port}", request
        assert "authorization" not in request["headers"] and "cookie" not in request["headers"], request
        assert request["body"] == b"", request
    assert seen[0]["headers"].get("accept") == "application/json", seen[0]


# ---------------------------------------------------------------------------------------------
# Forgetting the client: its login is revoked and removed first.

REFRESH_TOKEN = "Rf9kT2wQ7zL4xN8mC3vB6pJ1hG5dS0aE"


def test_forgetting_the_client_revokes_and_removes_its_login_first(start_relay, auto_stub, tmp_path, sensitive):
    sensitive.add("refresh token", REFRESH_TOKEN)
    sensitive.add("registration access token", REGISTRATION_ACCESS_TOKEN)
    stub = auto_stub(registration=(201, {"client_id": "dev-client-2", "token_endpoint_auth_method": "none",
                                         "registration_access_token": REGISTRATION_ACCESS_TOKEN}),
                     device=(200, {"device_code": "dc-1", "user_code": "ABCD-EFGH", "verification_uri": "https://example.test/device",
                                   "expires_in": 600, "interval": 1}))
    stub.registrations[0][1]["registration_client_uri"] = f"{stub.issuer}/register/dev-client-2"
    stub.token = (200, {"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600, "refresh_token": REFRESH_TOKEN})
    routes = [{"match": {"pathPrefix": "/mcp/"}, "upstream": stub.resource, "identity": "auto"}]
    store = tmp_path / "token-store"
    relay, admin = start_with_admin(start_relay, routes, store={"path": str(store), "key": STORE_KEY}, auto={"grant": "device_code"})
    name = f"auto-{LOOPBACK}-{stub.port}-mcp"
    wait_until(lambda: identity_view(admin, name).get("auto"), RESOLVE_SECONDS, "the auto identity's resolution")
    get(relay, "/mcp/tools")  # starts the device login; the stub grants it at the first poll
    wait_until(lambda: identity_view(admin, name).get("hasRefreshToken"), RESOLVE_SECONDS * 2, "the device login's token")
    wait_until(lambda: list(store.glob("identity-*.token")), RESOLVE_SECONDS, "the login kept in the store")
    assert admin.request("DELETE", f"/identities/{name}/client").status == 200
    wait_until(lambda: [r for r in stub.recorded() if r["method"] == "DELETE"], RESOLVE_SECONDS, "the RFC 7592 deletion")
    wait_until(lambda: [r for r in stub.recorded() if r["path"] == "/revoke"], RESOLVE_SECONDS, "the revocation")
    seen = stub.recorded()
    paths = [(r["method"], r["path"]) for r in seen]
    assert paths.index(("POST", "/revoke")) < paths.index(("DELETE", "/register/dev-client-2")), paths
    revocation = next(r for r in seen if r["path"] == "/revoke")
    assert parse_qs(revocation["body"].decode(), strict_parsing=True) == {
        "token": [REFRESH_TOKEN], "token_type_hint": ["refresh_token"], "client_id": ["dev-client-2"],
    }, revocation["body"]
    assert "authorization" not in revocation["headers"], revocation
    deletion = next(r for r in seen if r["method"] == "DELETE")
    assert deletion["headers"].get("authorization") == f"Bearer {REGISTRATION_ACCESS_TOKEN}", deletion
    assert not list(store.glob("identity-*.token")), "the forgotten client's login stayed in the store"
    assert not list(store.glob("client-*")), "the forgotten client stayed in the store"
