"""What goes wrong in a login (issue 11), with the real relay: forged, replayed and cross-browser
callbacks (400, and the real login in progress still completes), ID tokens that fail a check
(wrong signature, audience, nonce, expired), the IdP's `access_denied`, device logins that slow
down, expire or are refused, discovery metadata for another issuer, `check` refusing a person's
identity on a network listener or a redirect URI no listener serves, and login pages that answer
only to the listener's own names. The scripted stub plays the IdP where django-oauth-toolkit
cannot be told to misbehave; the refused device login is DOT's own.
"""

from __future__ import annotations

import json
import secrets
import time

import pytest

from deadlines import scaled, wait_until
from http_client import assert_problem
from idp_processes import DEVICE_GRANT, sha256
from idp_relay import assert_oauth_problem, bearer, oauth_route
from login_relay import (CALLBACK_PATH, ID_TOKEN_OK, RawBrowser, at_stub, browse, get, identity_view,
                         start_login_relay, wait_for_state)
from processes import relay_config, run_check

pytestmark = pytest.mark.oauth

def stub_login_relay(start_relay, upstream, stub, token=ID_TOKEN_OK, grant="authorization_code", **login_script):
    stub.script(default=token, **login_script)
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub.login_identity(grant)})
    wait_for_state(admin, "me", "needs-login")  # discovery answered: a login can start
    return relay, admin


def page_title(resp) -> str:
    body = resp.body.decode()
    return body.split("<title>", 1)[1].split("</title>", 1)[0]


def assert_refused_callback(resp, why: str) -> None:
    assert resp.status == 400, f"callback answered {resp.status}: {resp.body[:300]!r}"
    assert (resp.header("content-type") or "").startswith("text/html")
    assert page_title(resp) == "This login cannot be completed"
    assert why in resp.body.decode(), resp.body.decode()


def completes(browser, stub, callback: dict, relay, returns: str = "/orders") -> str:
    """The login's own callback is accepted and its token reaches the route; the token."""
    resp = browser.callback(callback)
    assert (resp.status, resp.header("location")) == (302, returns), resp.body[:300]
    token = bearer(browse(relay, returns, browser.cookies))
    [exchange] = [r for r in stub.token_requests(grant_type="authorization_code") if r["status"] == 200]
    assert sha256(exchange["issued"]["access_token"]) == sha256(token)
    assert exchange["code_binding"]["pkce_ok"] and exchange["code_binding"]["redirect_uri_ok"]
    return token


# ---------------------------------------------------------------------------------------------
# Callbacks that are not the login's own

def test_a_forged_state_is_refused_and_the_login_in_progress_completes(stub_idp, upstream, start_relay, sensitive):
    relay, admin = stub_login_relay(start_relay, upstream, stub_idp)
    browser = RawBrowser(relay, sensitive)
    callback = at_stub(stub_idp, browser.start_login("me", returns="/orders"))
    forged = {**callback, "state": sensitive.add("a forged state", secrets.token_urlsafe(32))}
    assert_refused_callback(browser.callback(forged), "this login is unknown or was already completed")
    assert stub_idp.token_requests() == [], "a forged callback's code went to the token endpoint"
    completes(browser, stub_idp, callback, relay)


def test_a_replayed_callback_is_refused(stub_idp, upstream, start_relay, sensitive):
    relay, admin = stub_login_relay(start_relay, upstream, stub_idp)
    browser = RawBrowser(relay, sensitive)
    callback = at_stub(stub_idp, browser.start_login("me", returns="/orders"))
    cookies = dict(browser.cookies)
    token = completes(browser, stub_idp, callback, relay)
    browser.cookies = cookies  # even with the login's cookie, a state works once
    assert_refused_callback(browser.callback(callback), "this login is unknown or was already completed")
    assert len(stub_idp.token_requests(grant_type="authorization_code")) == 1
    assert sha256(bearer(get(relay, "/orders"))) == sha256(token), "the replay disturbed the login"


def test_a_callback_in_another_browser_is_refused_and_the_real_login_completes(stub_idp, upstream, start_relay, sensitive):
    relay, admin = stub_login_relay(start_relay, upstream, stub_idp)
    victim = RawBrowser(relay, sensitive)
    callback = at_stub(stub_idp, victim.start_login("me", returns="/orders"))
    # Login CSRF: the callback (with someone's code) opened in a browser that did not start it.
    other = RawBrowser(relay, sensitive)
    assert_refused_callback(other.callback(callback), "was started in another browser")
    # A cookie of another login does not do either.
    other.start_login("me")
    assert_refused_callback(other.callback(callback), "was started in another browser")
    assert stub_idp.token_requests() == []
    completes(victim, stub_idp, callback, relay)
    assert identity_view(admin, "me")["loggedInAs"] == "stub-person"


def test_a_callback_after_login_timeout_seconds_is_refused(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default=ID_TOKEN_OK)
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity(loginTimeoutSeconds=1)})
    wait_for_state(admin, "me", "needs-login")  # discovery answered: a login can start
    browser = RawBrowser(relay, sensitive)
    login = browser.start_login("me", returns="/orders")
    [cookie] = login_cookies(browser)
    callback = at_stub(stub_idp, login)
    time.sleep(1.2)  # the login's timeout passes (the condition under test, not a race)
    assert_refused_callback(browser.callback(callback), "was not completed within 1 s")
    assert stub_idp.token_requests() == []
    assert cookie not in list(browser.cookies), "the expired login's cookie was not cleared"


def login_cookies(browser) -> list[str]:
    return [name for name in browser.cookies if name.startswith("oauth_relay_login_")]


# ---------------------------------------------------------------------------------------------
# ID tokens that fail a check, and the IdP's refusal

@pytest.mark.parametrize("id_token, reason", [
    ({"key": "attacker"}, "signature"),
    ({"aud": "another-client"}, "aud"),
    ({"nonce": "not-the-nonce-of-this-login"}, "nonce"),
    ({"exp_in": -300, "iat_in": -600}, "expired"),
])
def test_an_id_token_that_fails_a_check_ends_the_login_without_a_token(stub_idp, upstream, start_relay, sensitive,
                                                                      id_token, reason):
    relay, admin = stub_login_relay(start_relay, upstream, stub_idp, token={**ID_TOKEN_OK, "id_token": id_token})
    browser = RawBrowser(relay, sensitive)
    callback = at_stub(stub_idp, browser.start_login("me", returns="/orders"))
    resp = browser.callback(callback)
    assert resp.status == 302
    # Back at the page, the browser is shown why instead of being sent round again.
    page = browse(relay, "/orders", browser.cookies)
    sensitive.add_output("the failed login's page", page.body)
    assert page.status == 401 and page_title(page) == "Login needed", page.body[:400]
    text = page.body.decode()
    assert "The last login failed" in text and reason in text.lower(), text
    view = wait_for_state(admin, "me", "needs-login")
    assert reason in view["lastLoginFailure"].lower() and "loggedInAs" not in view, view
    doc = assert_oauth_problem(get(relay, "/orders"), 401, identity="me")
    assert doc["type"] == "urn:oauth-relay:problem:login-required"
    assert upstream.stats()["requests_started"] == 0, "a request reached the upstream"
    log = relay.log()
    assert "ID token refused" in log


def test_the_idp_refusing_the_login_gets_a_page_that_says_so(stub_idp, upstream, start_relay, sensitive):
    relay, admin = stub_login_relay(start_relay, upstream, stub_idp, authorize={
        "kind": "redirect", "error": "access_denied", "error_description": "The person declined"})
    browser = RawBrowser(relay, sensitive)
    callback = at_stub(stub_idp, browser.start_login("me", returns="/orders"))
    resp = browser.callback(callback)
    assert resp.status == 403 and page_title(resp) == "Login declined", resp.body[:400]
    assert "with access_denied: The person declined" in resp.body.decode()
    assert stub_idp.token_requests() == []
    view = identity_view(admin, "me")
    assert view["state"] == "needs-login" and "access_denied" in view["lastLoginFailure"]


# ---------------------------------------------------------------------------------------------
# Device logins that do not end with a token

DEVICE_PENDING = {"kind": "oauth_error", "error": "authorization_pending"}


def device_polls(stub) -> list[dict]:
    return stub.token_requests(grant_type=DEVICE_GRANT)


def test_slow_down_makes_the_polls_5_seconds_further_apart(stub_idp, upstream, start_relay, sensitive):
    relay, admin = stub_login_relay(start_relay, upstream, stub_idp, None, "device_code")
    stub_idp.script(DEVICE_PENDING, {"kind": "oauth_error", "error": "slow_down"},
                    {"kind": "token", "expires_in": 3600, "refresh_token": "new"}, device={"kind": "device", "interval": 1})
    doc = assert_problem(get(relay, "/x"), 401)
    sensitive.add_output("the device 401", json.dumps(doc))
    assert doc["userCode"]
    token = bearer(wait_until(lambda: (r := get(relay, "/x")).status == 200 and r, 15, "the token after three polls"))
    polls = device_polls(stub_idp)
    assert [p["kind"] for p in polls] == ["oauth_error", "oauth_error", "token"]
    assert sha256(polls[-1]["issued"]["access_token"]) == sha256(token)
    gaps = [round(b["time"] - a["time"], 2) for a, b in zip(polls, polls[1:])]
    # The interval of 1 s, then 6 s after slow_down.
    assert 0.9 <= gaps[0] < 1 + scaled(2) and 5.9 <= gaps[1] < 6 + scaled(2), gaps
    # Waiting for the person is not a failure: nothing above info in the log.
    assert not [line for line in relay.log().splitlines() if '"level":"warning"' in line or '"level":"error"' in line]


@pytest.mark.parametrize("error, shown", [("expired_token", "expired"), ("access_denied", "refused")])
def test_a_device_login_the_idp_ends_is_over_with_its_reason(stub_idp, upstream, start_relay, sensitive, error, shown):
    relay, admin = stub_login_relay(start_relay, upstream, stub_idp, None, "device_code")
    stub_idp.script(DEVICE_PENDING, by_grant={DEVICE_GRANT: {"kind": "oauth_error", "error": error}},
                    device={"kind": "device", "interval": 1})
    assert assert_problem(get(relay, "/x"), 401)["userCode"]
    view = wait_until(lambda: (v := identity_view(admin, "me")).get("lastLoginFailure") and v, 10, "the login's end")
    assert view["state"] == "needs-login" and "deviceLogin" not in view
    assert shown in view["lastLoginFailure"], view
    # Another poll would come one interval (1 s) after the last: none comes in 1.5 intervals.
    time.sleep(scaled(1.5))  # a window for what must not happen, not a wait for a condition
    assert len(device_polls(stub_idp)) == 2, "polls went on after the login ended"
    # The status page says so.
    status = browse(relay, "/.oauth-relay/status/me")
    assert status.status == 200 and shown in status.body.decode()


def test_a_device_login_the_person_refuses_at_dot_ends(django_idp, upstream, start_relay, sensitive):
    relay, admin = start_login_relay(start_relay, upstream, {"tv": django_idp.identity("tv-device")})
    code = assert_problem(get(relay, "/x"), 401)["userCode"]
    assert django_idp.approve_device(code, action="deny") == "denied"
    view = wait_until(lambda: (v := identity_view(admin, "tv")).get("lastLoginFailure") and v, 10, "the login's end")
    assert "refused" in view["lastLoginFailure"] and view["state"] == "needs-login", view
    assert [p["error"] for p in django_idp.token_requests(grant_type=DEVICE_GRANT)][-1] == "access_denied"


# ---------------------------------------------------------------------------------------------
# Discovery, configuration, Host

def test_discovery_naming_another_issuer_makes_the_identity_failing(stub_idp, upstream, start_relay):
    stub_idp.script(discovery={"kind": "metadata", "members": {"issuer": "https://evil.example"}})
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    view = wait_for_state(admin, "me", "failing")
    assert view["lastError"]["code"] == "issuer_mismatch", view
    assert 'names the issuer "https://evil.example"' in view["lastError"]["description"], view
    assert_oauth_problem(get(relay, "/x"), 503, identity="me")
    login = browse(relay, "/.oauth-relay/login/me")
    assert login.status == 503 and "endpoints are not known" in login.body.decode()
    assert not stub_idp.endpoint_requests(endpoint="authorize") and not stub_idp.token_requests()


def person_config(upstream, listen: str, **identity) -> dict:
    me = {"issuer": "https://idp.example.com", "grant": "authorization_code", "clientId": "relay-dev",
          "scope": "openid", **identity}
    return relay_config(listen, [oauth_route(upstream, "/", "me")], identities={"me": me})


def test_check_refuses_a_persons_identity_on_a_network_listener_unless_allowed(tmp_path, upstream):
    code, out = run_check(tmp_path, person_config(upstream, "0.0.0.0:18180"))
    assert code == 1
    assert "$.identities.me" in out and "acts for a person" in out and "allowRemoteUse" in out, out
    code, out = run_check(tmp_path, person_config(upstream, "0.0.0.0:18180", allowRemoteUse=True))
    assert code == 0, out
    assert run_check(tmp_path, person_config(upstream, "127.0.0.1:18180"))[0] == 0


def test_check_refuses_a_redirect_uri_no_listener_serves(tmp_path, upstream):
    code, out = run_check(tmp_path, person_config(upstream, "127.0.0.1:18180", redirectUri="http://127.0.0.1:18999/cb"))
    assert code == 1
    assert "$.identities.me.redirectUri" in out and "served by no listener" in out, out
    assert run_check(tmp_path, person_config(upstream, "127.0.0.1:18180", redirectUri="http://localhost:18180/cb"))[0] == 0


@pytest.mark.parametrize("page", ["/.oauth-relay/login/me", "/.oauth-relay/status/me", CALLBACK_PATH + "?code=c&state=s"])
def test_login_pages_refuse_a_foreign_host(stub_idp, upstream, start_relay, page):
    relay, admin = stub_login_relay(start_relay, upstream, stub_idp)
    refused = browse(relay, page, host=f"evil.example:{relay.port}")
    assert refused.status == 421 and "Wrong host name" in refused.body.decode()
    assert set_cookie_free(refused)
    assert browse(relay, page, host=f"localhost:{relay.port}").status != 421
    assert not stub_idp.endpoint_requests(endpoint="authorize")


def set_cookie_free(resp) -> bool:
    return not resp.header_all("set-cookie")
