"""Zero-configuration identities (issue 29) against a real authorization server: a route that says
only `"identity": "auto"` and names its upstream, a resource server of the tests' own
(resource_server.py) that names Glewlwyd as its authorization server in its RFC 9728 metadata and
checks Glewlwyd's tokens itself (signature with Glewlwyd's JWKS, exp, iss, aud = its own URL), and
Glewlwyd (idp_glewlwyd.py with a `Registration`), where the relay registers its client (RFC 7591,
RFC 7592) and the person logs in (in headless Chromium, or by Glewlwyd's login API where the
browser proves nothing more).

The configuration has no identity settings at all: a listener, an admin listener, the route and a
`store`. The identity's name is the relay's (`auto-127.0.0.1-<port>-mcp`, from the upstream URL).

Glewlwyd 2.7.5 lists `client_secret_basic`, `client_secret_post` (and the JWT methods) in
`token_endpoint_auth_methods_supported`, never `none`, so an automatic client registers with
`client_secret_basic`: the secret it gets must then never reach a log, and neither may the
registration access token nor a refresh token, which Glewlwyd keeps only as hashes
(`hashed_secret_leaks`). (Glewlwyd 2.7.5 also stores a client registered with `none` as
confidential, so a public client could not get a token from it at all.)

Not here: a registration endpoint over plain http on a host that is not loopback cannot be set up
on loopback (the unit tests of the auto resolution cover it), and step-up has its own tests.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import replace
from urllib.parse import quote, urlencode

import pytest

from admin_client import start_with_admin
from browser import chromium, grant_at_glewlwyd, login_at_glewlwyd, wait_for, wait_for_url  # noqa: F401 (chromium is a fixture)
from deadlines import wait_until
from http_client import Response, assert_problem
from idp_glewlwyd import PASSWORD, REGISTER_SCOPE, SCOPE, USERNAME, GlewlwydIdP, Registration
from idp_relay import relay_logs
from login_relay import (CALLBACK_PATH, LOGIN_REQUIRED, RawBrowser, callback_url, get, identity_view,
                         note_login_cookies, page_text, query_of)
from processes import LOOPBACK, STORE_KEY, free_port, relay_config, run_cli, write_config

pytestmark = pytest.mark.oauth

NEEDS_CONFIGURATION = "urn:oauth-relay:problem:needs-configuration"
# How long an identity may take to learn its authorization server and client at start.
RESOLVE_SECONDS = 10


# ---------------------------------------------------------------------------------------------
# The servers and the relay.

def auto_servers(start_glewlwyd, protected_resource, registration: Registration | None = None,
                 metadata: str = "well-known", **options) -> GlewlwydIdP:
    """Glewlwyd letting clients register (`registration`, by default open to all) and issuing
    tokens for the protected resource, which names it as its authorization server (`metadata`
    and `options` as resource_server.py takes them)."""
    registration = replace(registration or Registration(), resources=(protected_resource.resource,))
    idp = start_glewlwyd(registration=registration)
    protected_resource.configure(idp, metadata=metadata, **options)
    return idp


def auto_name(resource) -> str:
    """The name the relay gives the identity of an `auto` route to `resource`'s URL."""
    return f"auto-{LOOPBACK}-{resource.port}-mcp"


def auto_routes(resource) -> list[dict]:
    return [{"match": {"pathPrefix": "/mcp/"}, "upstream": resource.resource, "identity": "auto"}]


def auto_store(tmp_path) -> dict:
    return {"path": str(tmp_path / "token-store"), "key": STORE_KEY}


def start_auto_relay(start_relay, resource, tmp_path):
    """A relay with only the `auto` route to `resource` and a store in tmp_path; returns (relay,
    AdminClient) once the identity left `resolving` (and `pending`)."""
    # At trace level: every line the relay may write is in the leak scans.
    relay, admin = start_with_admin(start_relay, auto_routes(resource), store=auto_store(tmp_path),
                                    args=("--log-level", "trace"))
    wait_until(lambda: identity_view(admin, auto_name(resource))["state"] not in ("resolving", "pending"),
               RESOLVE_SECONDS, "the auto identity to resolve (or fail)")
    return relay, admin


def auto_facts(admin, resource) -> dict:
    """What `/identities` shows the identity learnt (its `auto` member)."""
    view = identity_view(admin, auto_name(resource))
    assert isinstance(view.get("auto"), dict), f"no auto facts in /identities: {view}"
    return view["auto"]


def last_error_code(admin, resource) -> str:
    """The code of the identity's last failure, once `/identities` shows one."""
    return wait_until(lambda: (identity_view(admin, auto_name(resource)).get("lastError") or {}).get("code"),
                      RESOLVE_SECONDS, "the auto identity's lastError")


def unguarded_requests(resource) -> list[dict]:
    """Requests that reached the protected path without a token (the relay's probes)."""
    return [r for r in resource.requests(authorization="none") if r["target"].startswith(resource.path)]


def verified_claims(resp: Response) -> dict:
    """The claims of the token the resource server verified for a request the relay forwarded."""
    assert resp.status == 200, f"expected the resource's 200, got {resp.status}: {resp.body[:500]!r}"
    return resp.json()["claims"]


def assert_token_for(claims: dict, idp: GlewlwydIdP, resource, client_id: str) -> None:
    """A token Glewlwyd issued to `client_id` for the person, for `resource` (RFC 8707)."""
    assert claims["aud"] == resource.resource, claims
    assert (claims["iss"], claims["client_id"]) == (idp.issuer, client_id), claims
    assert SCOPE in claims["scope"].split(), claims


def assert_no_hashed_secrets(idp: GlewlwydIdP, tmp_path, sensitive, hashes: dict[str, str] | None = None) -> None:
    """No registration access token or refresh token Glewlwyd issued in the relay's logs or the
    outputs the test noted (Glewlwyd keeps them hashed: the sensitive scan cannot know them)."""
    leaks = idp.hashed_secret_leaks({**relay_logs(tmp_path), **sensitive.outputs}, hashes)
    assert not leaks, "secrets in the relay's output:\n  " + "\n  ".join(leaks)


# ---------------------------------------------------------------------------------------------
# A person at Glewlwyd without a browser.

class GlewlwydPerson:
    """The person logging in by Glewlwyd's login API, what its login page calls (POST /api/auth/,
    PUT /api/auth/grant/CLIENT), then following the relay's authorization request with
    `g_continue` (what the page adds once the person is in)."""

    def __init__(self, idp: GlewlwydIdP, sensitive) -> None:
        self.idp = idp
        self.sensitive = sensitive
        self.cookie: str | None = None

    def request(self, method: str, target: str, body: dict | None = None) -> Response:
        headers = [("Connection", "close")]
        if self.cookie:
            headers.append(("Cookie", self.cookie))
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            headers.append(("Content-Type", "application/json"))
        resp = self.idp.request(method, target, headers=headers, body=data, host=f"{LOOPBACK}:{self.idp.port}")
        for header in resp.header_all("set-cookie"):
            name, _, rest = header.partition("=")
            if name.strip() == "GLEWLWYD2_SESSION_ID":
                self.cookie = f"GLEWLWYD2_SESSION_ID={rest.split(';')[0]}"
        return resp

    def authorize(self, login: dict) -> dict:
        """Logs in, grants the scopes asked and answers the relay's authorization request
        (`login`, from RawBrowser.start_login): the query of Glewlwyd's redirect back."""
        assert login["authorization_endpoint"] == f"{self.idp.issuer}/auth", login["authorization_endpoint"]
        resp = self.request("POST", "/api/auth/", {"username": USERNAME, "password": PASSWORD})
        assert resp.status == 200, f"Glewlwyd's login API answered {resp.status}"
        resp = self.request("PUT", f"/api/auth/grant/{quote(login['client_id'])}", {"scope": login["scope"]})
        assert resp.status == 200, f"Glewlwyd's grant API answered {resp.status}"
        query = {k: v for k, v in login.items() if k != "authorization_endpoint"}
        resp = self.request("GET", "/api/oidc/auth?" + urlencode({**query, "g_continue": ""}))
        assert resp.status == 302, f"Glewlwyd's authorization endpoint answered {resp.status}: {resp.body[:300]!r}"
        back = query_of(resp.header("location"))
        assert "code" in back, f"Glewlwyd refused the authorization request: {back.get('error')}"
        self.sensitive.add("the code Glewlwyd issued", back["code"])
        return back


def log_in_by_api(relay, idp: GlewlwydIdP, resource, sensitive, returns: str = "/mcp/after-login") -> dict:
    """A login of the auto identity without a browser; returns the relay's authorization request."""
    browser = RawBrowser(relay, sensitive)
    login = browser.start_login(auto_name(resource), returns=returns)
    back = GlewlwydPerson(idp, sensitive).authorize(login)
    resp = browser.callback(back)
    assert resp.status == 302 and resp.header("location") == returns, \
        f"the relay's callback answered {resp.status} {resp.header('location')}: {resp.body[:300]!r}"
    return login


# ---------------------------------------------------------------------------------------------
# The stand-ins, without the relay: what the tests below rely on.

def test_glewlwyd_registers_a_client_and_the_resource_server_takes_only_its_tokens_for_itself(
        start_glewlwyd, protected_resource, sensitive):
    idp = auto_servers(start_glewlwyd, protected_resource)
    host = f"{LOOPBACK}:{idp.port}"
    discovery = idp.request("GET", "/api/oidc/.well-known/openid-configuration", headers=[("Connection", "close")],
                            host=host).json()
    assert discovery["registration_endpoint"] == f"{idp.issuer}/register"
    assert "none" not in discovery["token_endpoint_auth_methods_supported"]
    assert "client_secret_basic" in discovery["token_endpoint_auth_methods_supported"]
    assert discovery["code_challenge_methods_supported"] == ["S256"]
    # RFC 9728 metadata at the well-known URL, named by the 401 to a request without a token.
    meta = protected_resource.request("GET", "/.well-known/oauth-protected-resource/mcp", headers=[("Connection", "close")])
    assert meta.json()["resource"] == protected_resource.resource
    assert meta.json()["authorization_servers"] == [idp.issuer]
    bare = protected_resource.request("GET", "/mcp", headers=[("Connection", "close")])
    assert bare.status == 401
    assert bare.header("www-authenticate") == (f'Bearer resource_metadata="{protected_resource.url}'
                                               f'/.well-known/oauth-protected-resource/mcp", scope="{SCOPE}"')

    # A registration (RFC 7591) answered 200, with what the relay keeps.
    redirect_uri = f"http://{LOOPBACK}:{free_port()}{CALLBACK_PATH}"
    registered = idp.request("POST", "/api/oidc/register", headers=[("Connection", "close"), ("Content-Type", "application/json")],
                             body=json.dumps({"client_name": "oauth-relay", "redirect_uris": [redirect_uri],
                                              "grant_types": ["authorization_code", "refresh_token"],
                                              "token_endpoint_auth_method": "client_secret_basic"}).encode(), host=host)
    assert registered.status == 200, registered.body[:300]
    client = registered.json()
    for key in ("client_id", "client_secret", "registration_access_token", "registration_client_uri"):
        assert client.get(key), f"no {key} in Glewlwyd's registration answer"
    sensitive.add("the registered client's secret", client["client_secret"])
    assert idp.registrations_logged() == [client["client_id"]]

    def token_for(resource: str | None) -> str:
        verifier = "v" * 43
        login = {"authorization_endpoint": f"{idp.issuer}/auth", "response_type": "code", "client_id": client["client_id"],
                 "redirect_uri": redirect_uri, "scope": f"openid {SCOPE}", "state": "s", "nonce": "n",
                 "code_challenge": _s256(verifier), "code_challenge_method": "S256",
                 **({"resource": resource} if resource else {})}
        code = GlewlwydPerson(idp, sensitive).authorize(login)["code"]
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "code_verifier": verifier,
                **({"resource": resource} if resource else {})}
        basic = base64.b64encode(f"{client['client_id']}:{client['client_secret']}".encode()).decode()
        resp = idp.request("POST", "/api/oidc/token", host=host, body=urlencode(form).encode(), headers=[
            ("Connection", "close"), ("Authorization", f"Basic {basic}"), ("Content-Type", "application/x-www-form-urlencoded")])
        assert resp.status == 200, resp.body[:300]
        return sensitive.add(f"a token Glewlwyd issued ({len(sensitive.values)})", resp.json()["access_token"])

    # RFC 8707: asked for the resource, the token's aud is the resource, and the resource takes it.
    token = token_for(protected_resource.resource)
    assert idp.access_token_claims(token)["aud"] == protected_resource.resource
    answer = protected_resource.request("GET", "/mcp/x", headers=[("Connection", "close"), ("Authorization", f"Bearer {token}")])
    assert_token_for(verified_claims(answer), idp, protected_resource, client["client_id"])
    # A token for no resource (aud: the scopes) is refused, as is a token signed by another key.
    for wrong in (token_for(None), token[:-8] + ("A" * 8 if not token.endswith("A" * 8) else "B" * 8)):
        refused = protected_resource.request("GET", "/mcp/x", headers=[("Connection", "close"), ("Authorization", f"Bearer {wrong}")])
        assert refused.status == 401 and refused.header("www-authenticate").startswith('Bearer error="invalid_token"')

    # The leak scan finds a registration access token Glewlwyd keeps only hashed (until deleted).
    assert idp.hashed_secret_leaks({"a text": f"x\n {client['registration_access_token']}."}) == [
        "a registration access token Glewlwyd issued in a text, line 2"]
    # RFC 7592: the registration access token deletes the client.
    uri = client["registration_client_uri"]
    assert uri == f"{idp.issuer}/register/{client['client_id']}"
    deleted = idp.request("DELETE", uri[len(idp.url):], host=host, headers=[
        ("Connection", "close"), ("Authorization", f"Bearer {client['registration_access_token']}")])
    assert deleted.status == 200
    assert idp.deletions_logged() == [client["client_id"]]
    assert [c["enabled"] for c in idp.registered_clients()] == [False]


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


# ---------------------------------------------------------------------------------------------
# The happy path, in a browser.

def test_a_person_reaches_the_upstream_with_a_token_for_it_from_a_config_without_identity_settings(
        start_glewlwyd, protected_resource, start_relay, chromium, tmp_path, sensitive):  # noqa: F811
    idp = auto_servers(start_glewlwyd, protected_resource)
    relay, admin = start_auto_relay(start_relay, protected_resource, tmp_path)
    name = auto_name(protected_resource)
    assert identity_view(admin, name)["state"] == "needs-login"

    # One registration at Glewlwyd, of the relay's browser client, with what Glewlwyd lists.
    [client] = idp.registered_clients()
    assert client["redirect_uris"] == [callback_url(relay)]
    assert client["name"] == "oauth-relay" and "code" in client["grants"]
    assert client["token_endpoint_auth_method"] == ["client_secret_basic"] and client["confidential"]
    facts = auto_facts(admin, protected_resource)
    assert facts["resource"] == protected_resource.resource
    assert facts["resourceMetadataUrl"] == f"{protected_resource.url}/.well-known/oauth-protected-resource/mcp"
    assert facts["resourceMetadataSource"] == "well-known"
    assert (facts["authorizationServer"], facts["authorizationServerSource"]) == (idp.issuer, "resource-metadata")
    assert (facts["clientId"], facts["clientIdSource"]) == (client["client_id"], "registration")
    assert facts["tokenEndpointAuthMethod"] == "client_secret_basic"

    chromium.get(relay.url + "/mcp/tools?page=2")
    wait_for_url(chromium, lambda url: url.startswith(f"{idp.url}/login.html"), "Glewlwyd's login page")
    assert note_login_cookies(chromium, sensitive), "the relay set no login cookie before sending the browser to Glewlwyd"
    login_at_glewlwyd(chromium, USERNAME, PASSWORD)
    grant_at_glewlwyd(chromium)
    wait_for_url(chromium, lambda url: url == relay.url + "/mcp/tools?page=2", "the page first asked for")
    answer = wait_for(chromium, lambda d: _resource_answer(page_text(d)), "the protected resource's answer")
    assert answer["target"].endswith("/mcp/tools?page=2"), answer["target"]
    assert_token_for(answer["claims"], idp, protected_resource, client["client_id"])

    # A script's request now carries the same person's token, for the resource.
    assert_token_for(verified_claims(get(relay, "/mcp/status")), idp, protected_resource, client["client_id"])
    assert identity_view(admin, name)["state"] == "valid"
    # The relay learnt from the well-known URL: no request went to the resource without a token.
    assert unguarded_requests(protected_resource) == []
    assert len(idp.registered_clients()) == 1
    assert_no_hashed_secrets(idp, tmp_path, sensitive)


def _resource_answer(text: str) -> dict | None:
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and "claims" in doc else None


# ---------------------------------------------------------------------------------------------
# The registration and the login are kept.

def test_a_restart_reuses_the_registration_and_the_login(start_glewlwyd, protected_resource, start_relay,
                                                         tmp_path, sensitive):
    idp = auto_servers(start_glewlwyd, protected_resource)
    relay, admin = start_auto_relay(start_relay, protected_resource, tmp_path)
    login = log_in_by_api(relay, idp, protected_resource, sensitive)
    # RFC 8707: the authorization request names the resource; PKCE S256.
    assert login["resource"] == protected_resource.resource
    assert login["code_challenge_method"] == "S256" and login["redirect_uri"] == callback_url(relay)
    [client] = idp.registered_clients()
    assert login["client_id"] == client["client_id"]
    first = verified_claims(get(relay, "/mcp/x"))
    assert_token_for(first, idp, protected_resource, client["client_id"])

    # A second process on the same store and configuration (same port, so the same redirect URI).
    assert relay.stop() == 0
    relay.start()
    wait_until(lambda: identity_view(admin, auto_name(protected_resource))["state"] not in ("resolving", "pending"),
               RESOLVE_SECONDS, "the restarted relay's auto identity to resolve")
    again = verified_claims(get(relay, "/mcp/y"))
    assert_token_for(again, idp, protected_resource, client["client_id"])
    assert again["jti"] == first["jti"], "the restarted relay asked for a new token instead of the stored one"
    assert idp.registrations_logged() == [client["client_id"]], "the restarted relay registered again"
    assert len(idp.registered_clients()) == 1
    facts = auto_facts(admin, protected_resource)
    assert (facts["clientId"], facts["clientIdSource"]) == (client["client_id"], "store")
    assert identity_view(admin, auto_name(protected_resource))["state"] == "valid"
    assert_no_hashed_secrets(idp, tmp_path, sensitive)


# ---------------------------------------------------------------------------------------------
# Where the metadata comes from.

def test_metadata_named_only_in_the_401_still_resolves(start_glewlwyd, protected_resource, start_relay, tmp_path):
    idp = auto_servers(start_glewlwyd, protected_resource, metadata="challenge")
    relay, admin = start_auto_relay(start_relay, protected_resource, tmp_path)
    facts = auto_facts(admin, protected_resource)
    assert (facts["resourceMetadataSource"], facts["resourceMetadataUrl"]) == (
        "challenge", f"{protected_resource.url}/metadata/mcp")
    assert facts["authorizationServer"] == idp.issuer
    # The well-known URL was asked first (404), then the resource itself, once, without a token.
    well_known = protected_resource.requests(target="/.well-known/oauth-protected-resource/mcp")
    assert [r["status"] for r in well_known] == [404]
    [probe] = unguarded_requests(protected_resource)
    assert (probe["method"], probe["target"], probe["status"]) == ("GET", "/mcp", 401)
    # Resolved: a script is told to log in, as for any browser identity.
    resp = get(relay, "/mcp/x", [("Accept", "application/json")])
    doc = assert_problem(resp, 401)
    assert (doc["type"], doc["identity"]) == (LOGIN_REQUIRED, auto_name(protected_resource))
    assert len(unguarded_requests(protected_resource)) == 1, "the script's request went upstream without a token"
    assert len(idp.registered_clients()) == 1


def test_a_401_without_metadata_needs_configuration(start_glewlwyd, protected_resource, start_relay, tmp_path,
                                                    sensitive):
    idp = auto_servers(start_glewlwyd, protected_resource, metadata="none")
    relay, admin = start_auto_relay(start_relay, protected_resource, tmp_path)
    assert identity_view(admin, auto_name(protected_resource))["state"] == "needs-configuration"
    assert last_error_code(admin, protected_resource) == "no_resource_metadata"
    resp = get(relay, "/mcp/x")
    sensitive.add_output("the needs-configuration problem", resp.body)
    doc = assert_problem(resp, 502)
    assert (doc["type"], doc["identity"]) == (NEEDS_CONFIGURATION, auto_name(protected_resource))
    # It says what was tried at which URL.
    assert protected_resource.resource in doc["detail"], doc
    assert idp.registered_clients() == []


def test_metadata_for_another_resource_is_refused(start_glewlwyd, protected_resource, start_relay, tmp_path):
    other = protected_resource.resource + "/elsewhere"
    idp = auto_servers(start_glewlwyd, protected_resource, metadata_resource=other)
    relay, admin = start_auto_relay(start_relay, protected_resource, tmp_path)
    assert last_error_code(admin, protected_resource) == "resource_mismatch"
    resp = get(relay, "/mcp/x")
    doc = assert_problem(resp, 502)
    assert "resource_mismatch" in resp.body.decode(), doc
    assert other in doc["detail"] and protected_resource.resource in doc["detail"], doc
    # RFC 9728 §3.3: nothing of that metadata is used, not even its authorization server.
    assert idp.registered_clients() == []
    assert unguarded_requests(protected_resource) == []


def test_an_authorization_server_whose_metadata_names_another_issuer_is_refused(
        start_glewlwyd, protected_resource, start_relay, tmp_path):
    """The resource names `<resource server>/as`, whose metadata (RFC 8414 and OpenID Connect
    discovery, both served there) is Glewlwyd's own document: issuer Glewlwyd's URL, not `/as`."""
    idp = auto_servers(start_glewlwyd, protected_resource)
    discovery = idp.request("GET", "/api/oidc/.well-known/openid-configuration", headers=[("Connection", "close")],
                            host=f"{LOOPBACK}:{idp.port}")
    assert discovery.status == 200
    impostor = protected_resource.url + "/as"
    protected_resource.configure(idp, authorization_servers=[impostor], documents={
        "/.well-known/oauth-authorization-server/as": discovery.json(),
        "/as/.well-known/openid-configuration": discovery.json()})
    relay, admin = start_auto_relay(start_relay, protected_resource, tmp_path)
    assert last_error_code(admin, protected_resource) == "issuer_mismatch"
    resp = get(relay, "/mcp/x")
    doc = assert_problem(resp, 502)
    assert impostor in doc["detail"] and idp.issuer in doc["detail"], doc
    # Discovery was asked, and the registration endpoint it names never was.
    assert protected_resource.requests(reason="document"), "the relay never asked the impostor's metadata"
    assert idp.registered_clients() == []


@pytest.mark.parametrize("refusal", ["no-endpoint", "initial-access-token"])
def test_a_registration_refused_or_impossible_is_a_clear_502(start_glewlwyd, protected_resource, start_relay,
                                                            tmp_path, refusal):
    if refusal == "no-endpoint":
        # No registration_endpoint in the discovery document: only configuration can help.
        registration = Registration(allowed=False)
    else:
        # A registration must bring an initial access token (scope g_register): Glewlwyd's 401.
        registration = Registration(initial_access_scope=REGISTER_SCOPE)
    idp = auto_servers(start_glewlwyd, protected_resource, registration)
    relay, admin = start_auto_relay(start_relay, protected_resource, tmp_path)
    code = last_error_code(admin, protected_resource)
    resp = get(relay, "/mcp/x")
    doc = assert_problem(resp, 502)
    if refusal == "no-endpoint":
        assert code == "registration_unsupported"
        assert identity_view(admin, auto_name(protected_resource))["state"] == "needs-configuration"
        assert doc["type"] == NEEDS_CONFIGURATION and idp.issuer in doc["detail"], doc
    else:
        assert code == "registration_refused"
        assert f"{idp.issuer}/register" in doc["detail"] and "401" in doc["detail"], doc
    assert idp.registered_clients() == []


# ---------------------------------------------------------------------------------------------
# The commands.

def test_check_resolve_says_what_it_would_register_and_what_it_learnt(start_glewlwyd, protected_resource,
                                                                     start_relay, tmp_path, sensitive):
    idp = auto_servers(start_glewlwyd, protected_resource)
    name = auto_name(protected_resource)
    config = write_config(tmp_path / "check.json", relay_config(f"{LOOPBACK}:{free_port()}", auto_routes(protected_resource),
                                                                admin=None, store=auto_store(tmp_path)))
    # Read-only: nothing registered yet, and `check --resolve` registers nothing.
    first = run_cli("check", "--resolve", "--config", str(config))
    sensitive.add_output("oauth-relay check --resolve (before a registration)", first.stdout + first.stderr)
    assert first.returncode == 0, first.stdout + first.stderr
    for expected in (name, protected_resource.resource, idp.issuer, f"{idp.issuer}/register", "well-known"):
        assert expected in first.stdout, f"{expected!r} missing from check --resolve:\n{first.stdout}"
    assert idp.registered_clients() == []

    # Once a relay registered, it names the client kept in the store (never its secret).
    relay, _ = start_auto_relay(start_relay, protected_resource, tmp_path)
    [client] = idp.registered_clients()
    assert relay.stop() == 0
    second = run_cli("check", "--resolve", "--config", str(relay.config_path))
    sensitive.add_output("oauth-relay check --resolve (with a registration)", second.stdout + second.stderr)
    assert second.returncode == 0, second.stdout + second.stderr
    assert client["client_id"] in second.stdout and "store" in second.stdout, second.stdout

    # A resource whose metadata names another resource: the failure and its reason.
    protected_resource.configure(idp, metadata_resource=protected_resource.resource + "/elsewhere")
    failing = run_cli("check", "--resolve", "--config", str(relay.config_path))
    sensitive.add_output("oauth-relay check --resolve (failing)", failing.stdout + failing.stderr)
    assert failing.returncode != 0
    assert "resource_mismatch" in failing.stdout + failing.stderr
    assert len(idp.registered_clients()) == 1
    assert_no_hashed_secrets(idp, tmp_path, sensitive)


def test_logout_forget_client_deletes_the_registration_at_glewlwyd_and_in_the_store(
        start_glewlwyd, protected_resource, start_relay, tmp_path, sensitive):
    idp = auto_servers(start_glewlwyd, protected_resource)
    relay, admin = start_auto_relay(start_relay, protected_resource, tmp_path)
    log_in_by_api(relay, idp, protected_resource, sensitive)
    [client] = idp.registered_clients()
    verified_claims(get(relay, "/mcp/x"))
    assert relay.stop() == 0
    hashes = idp.secret_hashes()  # the registration access token's is gone once deleted

    done = run_cli("logout", "--forget-client", "--config", str(relay.config_path), auto_name(protected_resource))
    sensitive.add_output("oauth-relay logout --forget-client", done.stdout + done.stderr)
    assert done.returncode == 0, done.stdout + done.stderr
    # RFC 7592: DELETE of registration_client_uri with the registration access token; the
    # command registers nothing itself.
    assert idp.deletions_logged() == [client["client_id"]]
    assert idp.registrations_logged() == [client["client_id"]], "logout --forget-client registered a new client"
    assert [c["enabled"] for c in idp.registered_clients()] == [False]

    # The store forgot it too: the relay started again registers anew, and needs a login.
    relay.start()
    wait_until(lambda: len(idp.registrations_logged()) == 2, RESOLVE_SECONDS, "a new registration")
    wait_until(lambda: identity_view(admin, auto_name(protected_resource))["state"] == "needs-login",
               RESOLVE_SECONDS, "the identity to need a login again")
    new = idp.registrations_logged()[1]
    assert new != client["client_id"]
    assert auto_facts(admin, protected_resource)["clientId"] == new
    resp = get(relay, "/mcp/x", [("Accept", "application/json")])
    assert assert_problem(resp, 401)["type"] == LOGIN_REQUIRED
    assert_no_hashed_secrets(idp, tmp_path, sensitive, {**hashes, **idp.secret_hashes()})
