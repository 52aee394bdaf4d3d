"""Zero-configuration identities (issue 29): the refusals of the `auto` chain that a real server
cannot be made to answer, against a scripted stub that is the protected resource and its
authorization server at once: a registration endpoint answering 400 `invalid_client_metadata`,
a 200 without `client_id`, a registration endpoint over plain http on a host that is not loopback,
and resource metadata naming another resource. The happy path (and the refusals Glewlwyd can
give) are test_auto_identity.py's.

The stub verifies every request it receives: the paths in the chain's order (RFC 9728 §3.1's
well-known URL, the OpenID Connect document, RFC 8414's, the registration), `Accept:
application/json` on every GET and no credential on any, and the registration's headers and
every member of its JSON body. No request of a client reaches the resource without a token.
"""

from __future__ import annotations

import json
import threading
from urllib.parse import parse_qs
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from admin_client import start_with_admin
from deadlines import wait_until
from http_client import assert_problem
from login_relay import CALLBACK_PATH, get, identity_view
from processes import LOOPBACK, STORE_KEY, free_port, relay_config, run_cli, write_config

pytestmark = pytest.mark.oauth

RESOLVE_SECONDS = 10
INITIAL_ACCESS_TOKEN = "initial-access-token-7d1f0c9a2b8e4f65"


class AutoStub:
    """The protected resource `http://127.0.0.1:PORT/mcp` and its authorization server (issuer
    `http://127.0.0.1:PORT`), with the registration endpoint's answer (`registration`: status and
    JSON body) and the resource metadata's `resource` scripted."""

    def __init__(self, registration: tuple[int, dict], metadata_resource: str | None = None,
                 registration_endpoint: str | None = None, device: tuple[int, dict] | None = None,
                 stream_resource: bool = False) -> None:
        self.registration = registration
        self.device = device
        self.token: tuple[int, dict] | None = None
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

            def answer(self, status: int, body: dict | None) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
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
                if self.path == "/.well-known/oauth-protected-resource/mcp":
                    return self.answer(200, {"resource": stub.metadata_resource, "authorization_servers": [stub.issuer],
                                             "scopes_supported": ["mcp.read"]})
                if self.path == "/.well-known/oauth-authorization-server":
                    return self.answer(200, {
                        "issuer": stub.issuer, "authorization_endpoint": stub.issuer + "/authorize",
                        "token_endpoint": stub.issuer + "/token", "registration_endpoint": stub.registration_endpoint,
                        "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                        "device_authorization_endpoint": stub.issuer + "/device",
                        "revocation_endpoint": stub.issuer + "/revoke",
                    })
                self.answer(404, {"error": "not_found"})

            def do_POST(self) -> None:
                self.record()
                if self.path == "/register":
                    status, body = stub.registration
                    return self.answer(status, body)
                if self.path == "/device" and stub.device:
                    status, body = stub.device
                    return self.answer(status, body)
                if self.path == "/token" and stub.token:
                    return self.answer(*stub.token)
                if self.path == "/revoke":
                    return self.answer(200, None)
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

            def do_DELETE(self) -> None:
                self.record()
                self.answer(204, None)

        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.port = self.server.server_address[1]
        self.issuer = f"http://{LOOPBACK}:{self.port}"
        self.resource = f"{self.issuer}/mcp"
        self.metadata_resource = metadata_resource or self.resource
        self.registration_endpoint = registration_endpoint or f"{self.issuer}/register"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

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
# A client just registered and refused: no second registration.

REGISTRATION_ACCESS_TOKEN = "Qz7xK2mV4pL8wN3b5b0e9f3c1d2a4e67"


def test_a_client_just_registered_that_the_device_endpoint_refuses_is_not_registered_again(start_relay, auto_stub, tmp_path,
                                                                                           sensitive):
    sensitive.add("registration access token", REGISTRATION_ACCESS_TOKEN)
    stub = auto_stub(registration=(201, {"client_id": "dev-client-1", "token_endpoint_auth_method": "none",
                                         "registration_client_uri": "", "registration_access_token": REGISTRATION_ACCESS_TOKEN}),
                     device=(401, {"error": "invalid_client", "error_description": "client unknown"}))
    stub.registration[1]["registration_client_uri"] = f"{stub.issuer}/register/dev-client-1"
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
    stub.registration[1]["registration_client_uri"] = f"{stub.issuer}/register/dev-client-2"
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
