"""The login fixtures proved without the relay: django-oauth-toolkit's OpenID Connect discovery,
its authorization code + PKCE flow driven in headless Chromium (login form, consent, a loopback
redirect catcher standing in for the relay's callback), its device grant approved by a scripted
person, its revocation endpoint; and the stub's scripted login endpoints. ID tokens are checked
with jwcrypto, a JOSE library the relay did not write.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, quote_plus, urlencode, urlsplit

import pytest
from jwcrypto import jwk, jwt

from browser import chromium, consent, login_at_dot, wait_for_url  # noqa: F401 (chromium is a fixture)
from idp_processes import DEVICE_GRANT, sha256
from processes import LOOPBACK

pytestmark = pytest.mark.oauth


class RedirectCatcher:
    """A loopback HTTP server standing in for a client's redirect URI: records the query of each
    GET /callback and answers a small page."""

    def __init__(self) -> None:
        self.queries: list[dict[str, list[str]]] = []
        catcher = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urlsplit(self.path)
                if parts.path == "/callback":
                    pairs = parse_qsl(parts.query, keep_blank_values=True)
                    catcher.queries.append({k: [v for n, v in pairs if n == k] for k, _ in pairs})
                body = b"<!DOCTYPE html><title>caught</title><p>back at the client"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # no query (it holds the code) in any log
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def redirect_uri(self) -> str:
        return f"http://{LOOPBACK}:{self.server.server_address[1]}/callback"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def catcher():
    c = RedirectCatcher()
    yield c
    c.close()


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(32)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def get_json(idp, url: str) -> dict:
    resp = idp.request("GET", urlsplit(url).path, headers=[("Connection", "close")], host=f"{LOOPBACK}:{idp.port}")
    assert resp.status == 200, f"GET {url}: {resp.status} {resp.body[:200]!r}"
    return resp.json()


def post_form(idp, path: str, form: dict, basic: tuple[str, str] | None = None):
    headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Connection", "close")]
    if basic:
        pair = f"{quote_plus(basic[0])}:{quote_plus(basic[1])}"
        headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode()).decode()))
    return idp.request("POST", path, headers=headers, body=urlencode(form).encode(), host=f"{LOOPBACK}:{idp.port}")


def verified_id_token(token: str, jwks: dict, issuer: str, audience: str, nonce: str | None) -> dict:
    """The claims of `token` after jwcrypto verified its signature against `jwks` and its iss,
    aud and exp (raises otherwise)."""
    keys = jwk.JWKSet.from_json(json.dumps(jwks))
    checked = jwt.JWT(jwt=token, key=keys, algs=["RS256", "PS256", "ES256"],
                      check_claims={"iss": issuer, "aud": audience, "exp": None})
    claims = json.loads(checked.claims)
    assert claims.get("nonce") == nonce, "the ID token's nonce is not the one sent"
    return claims


# ---------------------------------------------------------------------------------------------
# django-oauth-toolkit

def test_dot_publishes_discovery_for_its_issuer(django_idp):
    document = get_json(django_idp, django_idp.discovery_url)
    assert document["issuer"] == django_idp.issuer
    assert document["token_endpoint"] == django_idp.token_url
    assert document["authorization_endpoint"] == django_idp.authorize_url
    assert document["jwks_uri"] == django_idp.jwks_url
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert "RS256" in document["id_token_signing_alg_values_supported"]
    # RFC 8414 §3.1: the well-known path between the host and the issuer's path.
    oauth = get_json(django_idp, f"{django_idp.url}/.well-known/oauth-authorization-server/o")
    assert oauth["issuer"] == django_idp.issuer
    assert oauth["revocation_endpoint"] == django_idp.revocation_url
    assert oauth["authorization_response_iss_parameter_supported"] is True
    keys = get_json(django_idp, django_idp.jwks_url)["keys"]
    assert [(k["kty"], k["alg"], bool(k.get("kid"))) for k in keys] == [("RSA", "RS256", True)]


@pytest.mark.parametrize("client", ["cli-code", "web-code"])
def test_dot_authorization_code_with_pkce_in_a_browser(start_django_idp, catcher, chromium, client):  # noqa: F811
    idp = start_django_idp()
    idp.set_redirect_uris(client, [catcher.redirect_uri])
    app, person = idp.clients[client], idp.person
    verifier, challenge = pkce_pair()
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    chromium.get(idp.authorize_url + "?" + urlencode({
        "response_type": "code", "client_id": app.client_id, "redirect_uri": catcher.redirect_uri,
        "scope": "openid profile email orders.read", "state": state, "nonce": nonce,
        "code_challenge": challenge, "code_challenge_method": "S256"}))
    login_at_dot(chromium, person.username, person.password)
    consent(chromium)
    wait_for_url(chromium, lambda url: url.startswith(catcher.redirect_uri), "the redirect back to the client")
    [query] = catcher.queries
    assert query["state"] == [state]
    assert query["iss"] == [idp.issuer], "RFC 9207: DOT names itself in the authorization response"
    [code] = query["code"]

    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": catcher.redirect_uri, "code_verifier": verifier}
    if app.client_secret is None:
        resp = post_form(idp, "/o/token/", {**form, "client_id": app.client_id})
    else:
        resp = post_form(idp, "/o/token/", form, basic=(app.client_id, app.client_secret))
    assert resp.status == 200, resp.body[:300]
    answer = resp.json()
    claims = verified_id_token(answer["id_token"], get_json(idp, idp.jwks_url), idp.issuer, app.client_id, nonce)
    assert (claims["preferred_username"], claims["email"]) == (person.username, person.email)
    assert idp.whoami(answer["access_token"]).json()["user"] == person.username
    assert answer["refresh_token"]

    [authorization] = idp.authorizations(method="POST")
    assert authorization["code_challenge_method"] == "S256"
    assert authorization["to_client"]["code_sha256"] == sha256(code)
    [exchange] = idp.token_requests(grant_type="authorization_code")
    assert (exchange["code_sha256"], exchange["code_verifier_sha256"]) == (sha256(code), sha256(verifier))
    assert exchange["id_token_sha256"] == sha256(answer["id_token"])
    assert exchange["client_auth"] == ("none" if app.client_secret is None else "basic")
    issued = dict(idp.issued_secrets())
    assert (issued["authorization_code"], issued["id_token"]) == (code, answer["id_token"])


def test_dot_code_is_refused_without_its_verifier(start_django_idp, catcher, chromium):  # noqa: F811
    idp = start_django_idp()
    idp.set_redirect_uris("cli-code", [catcher.redirect_uri])
    app = idp.clients["cli-code"]
    _, challenge = pkce_pair()
    chromium.get(idp.authorize_url + "?" + urlencode({
        "response_type": "code", "client_id": app.client_id, "redirect_uri": catcher.redirect_uri, "scope": "orders.read",
        "state": "s" * 43, "code_challenge": challenge, "code_challenge_method": "S256"}))
    login_at_dot(chromium, idp.person.username, idp.person.password)
    consent(chromium)
    wait_for_url(chromium, lambda url: url.startswith(catcher.redirect_uri), "the redirect back to the client")
    [code] = catcher.queries[0]["code"]
    other_verifier, _ = pkce_pair()
    resp = post_form(idp, "/o/token/", {"grant_type": "authorization_code", "code": code, "client_id": app.client_id,
                                         "redirect_uri": catcher.redirect_uri, "code_verifier": other_verifier})
    assert (resp.status, resp.json()["error"]) == (400, "invalid_grant")


def test_dot_cancelled_consent_redirects_with_access_denied(start_django_idp, catcher, chromium):  # noqa: F811
    idp = start_django_idp()
    idp.set_redirect_uris("cli-code", [catcher.redirect_uri])
    _, challenge = pkce_pair()
    chromium.get(idp.authorize_url + "?" + urlencode({
        "response_type": "code", "client_id": idp.clients["cli-code"].client_id, "redirect_uri": catcher.redirect_uri,
        "scope": "openid", "state": "t" * 43, "code_challenge": challenge, "code_challenge_method": "S256"}))
    login_at_dot(chromium, idp.person.username, idp.person.password)
    consent(chromium, allow=False)
    wait_for_url(chromium, lambda url: url.startswith(catcher.redirect_uri), "the redirect back to the client")
    [query] = catcher.queries
    assert (query["error"], query["state"], query.get("code")) == (["access_denied"], ["t" * 43], None)


def start_device_login(idp) -> dict:
    resp = post_form(idp, "/o/device-authorization/", {"client_id": idp.clients["tv-device"].client_id,
                                                        "scope": "openid orders.read"})
    assert resp.status == 200, resp.body[:300]
    return resp.json()


def poll(idp, device_code: str):
    return post_form(idp, "/o/token/", {"grant_type": DEVICE_GRANT, "device_code": device_code,
                                        "client_id": idp.clients["tv-device"].client_id})


def test_dot_device_grant_approved_by_a_scripted_person(django_idp):
    started = start_device_login(django_idp)
    assert started["verification_uri"] == f"{django_idp.url}/o/device/"
    assert started["verification_uri_complete"] == f"{django_idp.url}/o/device/?user_code={started['user_code']}"
    assert started["interval"] == django_idp.device_interval
    pending = poll(django_idp, started["device_code"])
    assert (pending.status, pending.json()["error"]) == (400, "authorization_pending")
    assert django_idp.approve_device(started["user_code"]) == "authorized"
    resp = poll(django_idp, started["device_code"])
    assert resp.status == 200, resp.body[:300]
    tokens = resp.json()
    assert tokens["scope"] == "openid orders.read"
    assert django_idp.whoami(tokens["access_token"]).json()["user"] == django_idp.person.username
    [record] = django_idp.device_authorizations()
    assert (record["user_code"], record["device_code_sha256"]) == (started["user_code"], sha256(started["device_code"]))
    polls = django_idp.token_requests(grant_type=DEVICE_GRANT)
    assert [p["status"] for p in polls] == [400, 200]
    assert {p["device_code_sha256"] for p in polls} == {sha256(started["device_code"])}

    # Logout: RFC 7009 revocation of the refresh token, then it no longer refreshes.
    revoked = post_form(django_idp, "/o/revoke_token/", {"token": tokens["refresh_token"], "token_type_hint": "refresh_token",
                                                         "client_id": django_idp.clients["tv-device"].client_id})
    assert revoked.status == 200
    [revocation] = django_idp.revocations()
    assert (revocation["token_sha256"], revocation["token_type_hint"], revocation["status"]) == (
        sha256(tokens["refresh_token"]), "refresh_token", 200)
    refresh = post_form(django_idp, "/o/token/", {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                                  "client_id": django_idp.clients["tv-device"].client_id})
    assert (refresh.status, refresh.json()["error"]) == (400, "invalid_grant")


def test_dot_device_grant_denied_by_the_person(django_idp):
    started = start_device_login(django_idp)
    assert django_idp.approve_device(started["user_code"], action="deny") == "denied"
    resp = poll(django_idp, started["device_code"])
    assert (resp.status, resp.json()["error"]) == (400, "access_denied")


def test_dot_refuses_an_unknown_user_code(django_idp):
    resp = django_idp.request("POST", "/_test/approve-device", headers=[("Content-Type", "application/json"), ("Connection", "close")],
                              body=json.dumps({"user_code": "NOTACODE", "username": django_idp.person.username}).encode())
    assert resp.status == 400
    assert resp.json()["form_errors"] == ["Incorrect user code"]


# ---------------------------------------------------------------------------------------------
# The stub's login endpoints

def stub_get(stub, target: str):
    return stub.request("GET", target, headers=[("Connection", "close")], host=f"{LOOPBACK}:{stub.port}")


def test_stub_discovery_is_its_own_metadata_unless_scripted(stub_idp):
    document = stub_get(stub_idp, "/.well-known/openid-configuration").json()
    assert document["issuer"] == stub_idp.issuer
    assert document["jwks_uri"] == f"{stub_idp.issuer}/jwks"
    assert stub_get(stub_idp, "/.well-known/oauth-authorization-server").status == 404
    stub_idp.script(discovery={"kind": "metadata", "members": {"issuer": "https://evil.example", "jwks_uri": None}},
                    oauth_metadata={"kind": "metadata"})
    wrong = stub_get(stub_idp, "/.well-known/openid-configuration").json()
    assert wrong["issuer"] == "https://evil.example" and "jwks_uri" not in wrong
    assert stub_get(stub_idp, "/.well-known/oauth-authorization-server").json()["issuer"] == stub_idp.issuer
    stub_idp.script(discovery=[{"kind": "raw", "status": 503, "retry_after": 7}, {"kind": "metadata"}])
    first = stub_get(stub_idp, "/.well-known/openid-configuration")
    assert (first.status, first.header("Retry-After")) == (503, "7")
    assert stub_get(stub_idp, "/.well-known/openid-configuration").status == 200
    assert [r["endpoint"] for r in stub_idp.endpoint_requests()].count("discovery") == 4


def test_stub_authorize_redirects_with_a_code_or_an_error(stub_idp):
    _, challenge = pkce_pair()
    query = urlencode({"response_type": "code", "client_id": stub_idp.client_id, "redirect_uri": "http://127.0.0.1:1/cb?x=1",
                       "state": "st4te-st4te-st4te", "nonce": "n", "code_challenge": challenge, "code_challenge_method": "S256"})
    resp = stub_get(stub_idp, f"/authorize?{query}")
    assert resp.status == 302
    location = urlsplit(resp.header("Location"))
    back = dict(parse_qsl(location.query))
    assert (location.netloc, location.path, back["x"], back["state"], back["iss"]) == (
        "127.0.0.1:1", "/cb", "1", "st4te-st4te-st4te", stub_idp.issuer)
    [record] = stub_idp.endpoint_requests(endpoint="authorize")
    assert record["issued"]["code"] == back["code"]

    stub_idp.script(authorize={"kind": "redirect", "error": "access_denied", "error_description": "no", "iss": None})
    back = dict(parse_qsl(urlsplit(stub_get(stub_idp, f"/authorize?{query}").header("Location")).query))
    assert back == {"x": "1", "error": "access_denied", "error_description": "no", "state": "st4te-st4te-st4te"}


def code_exchange(stub, code: str, verifier: str):
    return stub.request("POST", "/token", headers=[("Content-Type", "application/x-www-form-urlencoded"), ("Connection", "close")],
                        body=urlencode({"grant_type": "authorization_code", "code": code, "client_id": stub.client_id,
                                        "redirect_uri": "http://127.0.0.1:1/cb", "code_verifier": verifier}).encode())


@pytest.mark.parametrize("script, problem", [
    ({}, None),
    ({"key": "ec"}, None),
    ({"key": "attacker"}, "signature"),
    ({"key": "rotated"}, "unknown kid"),
    ({"aud": "another-client"}, "Invalid 'aud' value"),
    ({"nonce": "not-the-nonce-sent"}, "nonce is not the one sent"),
    ({"exp_in": -120, "iat_in": -400}, "Expired at"),
])
def test_stub_id_tokens_are_signed_as_scripted(stub_idp, script, problem):
    verifier, challenge = pkce_pair()
    nonce = secrets.token_urlsafe(16)
    query = urlencode({"response_type": "code", "client_id": stub_idp.client_id, "redirect_uri": "http://127.0.0.1:1/cb",
                       "state": "s", "nonce": nonce, "code_challenge": challenge, "code_challenge_method": "S256"})
    code = dict(parse_qsl(urlsplit(stub_get(stub_idp, f"/authorize?{query}").header("Location")).query))["code"]
    stub_idp.script(default={"kind": "token", "expires_in": 300, "refresh_token": "new", "id_token": script},
                    jwks={"kind": "jwks", "keys": ["published", "ec"]})
    resp = code_exchange(stub_idp, code, verifier)
    assert resp.status == 200
    id_token = resp.json()["id_token"]
    [record] = stub_idp.token_requests(grant_type="authorization_code")
    assert record["code_binding"] == {"client_id": stub_idp.client_id, "redirect_uri_ok": True, "pkce_ok": True, "nonce_sent": True}
    jwks = stub_get(stub_idp, "/jwks").json()
    if problem is None:
        claims = verified_id_token(id_token, jwks, stub_idp.issuer, stub_idp.client_id, nonce)
        assert claims["sub"] == "stub-person"
        return
    with pytest.raises((jwt.JWException, AssertionError)) as refused:
        verified_id_token(id_token, jwks, stub_idp.issuer, stub_idp.client_id, nonce)
    kid = json.loads(base64.urlsafe_b64decode(id_token.split(".")[0] + "=="))["kid"]
    published = {key["kid"] for key in jwks["keys"]}
    if problem == "signature":
        # A key the JWKS names (the kid of the published one), but not the key that signed.
        assert isinstance(refused.value, jwt.JWTMissingKey) and kid in published
    elif problem == "unknown kid":
        assert isinstance(refused.value, jwt.JWTMissingKey) and kid not in published
    else:
        assert problem in str(refused.value)
    if problem == "unknown kid":
        # The key rotation a relay must survive: after a JWKS refetch the token verifies.
        stub_idp.script(jwks={"kind": "jwks", "keys": ["published", "ec", "rotated"]})
        verified_id_token(id_token, stub_get(stub_idp, "/jwks").json(), stub_idp.issuer, stub_idp.client_id, nonce)


def test_stub_pkce_check_notices_a_wrong_verifier(stub_idp):
    _, challenge = pkce_pair()
    query = urlencode({"response_type": "code", "client_id": stub_idp.client_id, "redirect_uri": "http://127.0.0.1:1/cb",
                       "code_challenge": challenge, "code_challenge_method": "S256"})
    code = dict(parse_qsl(urlsplit(stub_get(stub_idp, f"/authorize?{query}").header("Location")).query))["code"]
    code_exchange(stub_idp, code, pkce_pair()[0])
    [record] = stub_idp.token_requests(grant_type="authorization_code")
    assert record["code_binding"]["pkce_ok"] is False
    assert record["code_binding"]["redirect_uri_ok"] is True


def test_stub_device_answers_and_polls_as_scripted(stub_idp):
    stub_idp.script({"kind": "oauth_error", "error": "authorization_pending"}, {"kind": "oauth_error", "error": "slow_down"},
                    {"kind": "oauth_error", "error": "access_denied"},
                    by_grant={DEVICE_GRANT: {"kind": "oauth_error", "error": "expired_token"}},
                    device={"kind": "device", "user_code": "WDJB-MJHT", "interval": 2, "url_member": True, "complete": False})
    resp = stub_idp.request("POST", "/device", headers=[("Content-Type", "application/x-www-form-urlencoded"), ("Connection", "close")],
                            body=urlencode({"client_id": stub_idp.client_id, "scope": "openid"}).encode())
    answer = resp.json()
    assert (answer["user_code"], answer["verification_url"], answer["interval"]) == ("WDJB-MJHT", f"{stub_idp.issuer}/verify", 2)
    assert "verification_uri" not in answer and "verification_uri_complete" not in answer
    errors = []
    for _ in range(4):
        poll = stub_idp.request("POST", "/token", headers=[("Content-Type", "application/x-www-form-urlencoded"), ("Connection", "close")],
                                body=urlencode({"grant_type": DEVICE_GRANT, "device_code": answer["device_code"]}).encode())
        errors.append(poll.json()["error"])
    assert errors == ["authorization_pending", "slow_down", "access_denied", "expired_token"]
    [record] = stub_idp.endpoint_requests(endpoint="device")
    assert record["issued"]["device_code"] == answer["device_code"]


def test_stub_records_revocations(stub_idp):
    token = secrets.token_urlsafe(32)
    resp = stub_idp.request("POST", "/revoke", headers=[("Content-Type", "application/x-www-form-urlencoded"), ("Connection", "close")],
                            body=urlencode({"token": token, "token_type_hint": "refresh_token"}).encode())
    assert (resp.status, resp.body) == (200, b"")
    [record] = stub_idp.endpoint_requests(endpoint="revoke")
    assert record["form"] == [["token", token], ["token_type_hint", "refresh_token"]]
    stub_idp.script(revoke={"kind": "raw", "status": 503, "retry_after": 3})
    busy = stub_idp.request("POST", "/revoke", headers=[("Connection", "close")])
    assert (busy.status, busy.header("Retry-After")) == (503, "3")
