"""Device logins (issue 11, RFC 8628) with the real relay and django-oauth-toolkit, the person
approving the code through DOT's own device pages (`approve_device`): the first request starts
the one device login and gets the code to enter, a browser gets the status page with it and moves
on by itself once the person approved, then every request carries the person's token, refreshed
across several short lifetimes while DOT rotates the refresh token.
"""

from __future__ import annotations

import pytest

from browser import chromium, wait_for_url  # noqa: F401 (chromium is a fixture)
from deadlines import scaled, wait_until
from idp_processes import DEVICE_GRANT, sha256
from idp_relay import burst, oauth_route
from http_client import assert_problem
from login_relay import (LOGIN_REQUIRED, approved_token, echoed_bearer, get, identity_view, start_login_relay,
                         wait_for_state, wait_for_title)

pytestmark = pytest.mark.oauth


def device_relay(start_relay, upstream, idp, name="tv"):
    routes = [oauth_route(upstream, "/", name), oauth_route(idp, "/api/", name)]
    return start_login_relay(start_relay, upstream, {name: idp.identity("tv-device")}, routes=routes)


def code_problem(resp, sensitive) -> dict:
    """The 401 of a device login waiting for the person: the problem with the code to enter."""
    sensitive.add_output(f"a device login's 401 problem ({len(sensitive.outputs)})", resp.body)
    doc = assert_problem(resp, 401)
    assert (doc["type"], doc["identity"]) == (LOGIN_REQUIRED, "tv"), doc
    return doc


def test_the_first_request_starts_the_device_login_and_gets_the_code(django_idp, upstream, start_relay, sensitive):
    relay, admin = device_relay(start_relay, upstream, django_idp)
    assert identity_view(admin, "tv")["state"] == "needs-login"
    # The first requests, all at once: one device login, shared; each gets its code.
    docs = [code_problem(resp, sensitive) for resp in burst(relay, 6, "/tv/1")]
    [started] = django_idp.device_authorizations()
    for doc in docs:
        assert (doc["userCode"], doc["verificationUri"], doc["verificationUriComplete"]) == (
            started["user_code"], started["verification_uri"], started["verification_uri_complete"])
        assert 0 < doc["expiresIn"] <= started["expires_in"]
    assert started["client_id"] == django_idp.clients["tv-device"].client_id
    assert started["scope"] == "openid profile email orders.read"
    assert code_problem(get(relay, "/tv/2"), sensitive)["userCode"] == started["user_code"]
    assert len(django_idp.device_authorizations()) == 1
    view = wait_for_state(admin, "tv", "login-pending")
    assert set(view["deviceLogin"]) == {"userCode", "verificationUri", "verificationUriComplete", "expiresIn"}
    assert view["deviceLogin"]["userCode"] == started["user_code"]
    sensitive.add_output("/identities", admin.request("GET", "/identities").body)

    assert django_idp.approve_device(started["user_code"]) == "authorized"
    token = approved_token(relay)
    who = django_idp.whoami(token).json()
    assert (who["user"], who["client_id"]) == (django_idp.person.username, django_idp.clients["tv-device"].client_id)
    # DOT itself accepts it on a route that goes to DOT.
    assert get(relay, "/api/whoami").json()["user"] == django_idp.person.username

    polls = django_idp.token_requests(grant_type=DEVICE_GRANT)
    assert [p["status"] for p in polls][-1] == 200 and {p["status"] for p in polls[:-1]} <= {400}
    assert {p["error"] for p in polls[:-1]} <= {"authorization_pending"}
    assert polls[-1]["access_token_sha256"] == sha256(token)
    gaps = [b["time"] - a["time"] for a, b in zip(polls, polls[1:])]
    assert all(gap >= 0.9 for gap in gaps), f"polls closer than DOT's interval of 1 s: {gaps}"
    assert identity_view(admin, "tv")["state"] == "valid"


def test_a_browser_gets_the_status_page_with_the_code_and_moves_on_after_the_approval(django_idp, upstream, start_relay,
                                                                                      chromium):  # noqa: F811
    relay, admin = device_relay(start_relay, upstream, django_idp)
    chromium.get(relay.url + "/tv/page?x=1")
    wait_for_url(chromium, lambda url: url.startswith(relay.url + "/.oauth-relay/status/tv"), "the status page")
    title = wait_for_title(chromium, lambda t: t.startswith("Enter the code"), "the code on the status page")
    [started] = django_idp.device_authorizations()
    assert title == f"Enter the code {started['user_code']}"
    from selenium.webdriver.common.by import By
    links = [a.get_attribute("href") for a in chromium.find_elements(By.TAG_NAME, "a")]
    assert started["verification_uri_complete"] in links
    assert django_idp.approve_device(started["user_code"]) == "authorized"
    # The page refreshes itself, and continues to the page first asked for.
    wait_for_url(chromium, lambda url: url == relay.url + "/tv/page?x=1", "the page first asked for", timeout=15)
    token = echoed_bearer(chromium)
    assert django_idp.whoami(token).json()["user"] == django_idp.person.username


def test_admin_login_starts_the_device_login(django_idp, upstream, start_relay, sensitive):
    relay, admin = device_relay(start_relay, upstream, django_idp)
    resp = admin.request("POST", "/identities/tv/login")
    assert (resp.status, resp.json()) == (202, {"identity": "tv", "grant": "device_code", "login": "started"})
    view = wait_until(lambda: (v := identity_view(admin, "tv")).get("deviceLogin") and v, 10, "the code in /identities")
    assert view["state"] == "login-pending"
    [started] = django_idp.device_authorizations()
    assert view["deviceLogin"]["userCode"] == started["user_code"]
    # A second start while it is under way starts nothing new.
    assert admin.request("POST", "/identities/tv/login").status == 202
    assert code_problem(get(relay, "/x"), sensitive)["userCode"] == started["user_code"]
    assert len(django_idp.device_authorizations()) == 1


def test_the_token_is_refreshed_across_short_lifetimes_while_dot_rotates_the_refresh_token(start_django_idp, upstream,
                                                                                           start_relay, sensitive):
    idp = start_django_idp(access_token_seconds=2, rotate_refresh_token=True)
    relay, admin = device_relay(start_relay, upstream, idp)
    code = code_problem(get(relay, "/x"), sensitive)["userCode"]
    assert idp.approve_device(code) == "authorized"
    approved_token(relay)
    refreshes = 3
    wait_until(lambda: len(idp.token_requests(grant_type="refresh_token")) >= refreshes, 3 * refreshes,
               f"{refreshes} refreshes of a 2 s token")
    # Each refresh is due at half the 2 s lifetime: it reaches DOT a second after the grant before it
    # was asked for (the relay counts the lifetime from its request), well before that token expires.
    chain = [r for r in idp.token_requests() if r["grant_type"] in (DEVICE_GRANT, "refresh_token") and r["status"] == 200]
    gaps = [(round(current["time"] - previous["time"], 2), round(current["time"] - previous["answered"], 2))
            for previous, current in zip(chain, chain[1:])]
    assert len(gaps) >= refreshes, gaps
    assert all(since_asked >= 0.9 and since_answered < scaled(1.8) for since_asked, since_answered in gaps), gaps
    # DOT checks every token the relay injects meanwhile.
    for _ in range(3):
        assert get(relay, "/api/whoami").json()["user"] == idp.person.username
    # The chain: each refresh presents the refresh token the answer before it issued (a rotated
    # token replaced the old one), and DOT refused none.
    grants = [r for r in idp.token_requests() if r["grant_type"] in (DEVICE_GRANT, "refresh_token") and r["status"] == 200]
    refreshed = idp.token_requests(grant_type="refresh_token")
    assert all(r["status"] == 200 for r in refreshed), [(r["status"], r["error"]) for r in refreshed]
    for previous, current in zip(grants, grants[1:]):
        assert current["refresh_token_sha256"] == previous["issued_refresh_token_sha256"]
        assert current["issued_refresh_token_sha256"] != previous["issued_refresh_token_sha256"], "DOT did not rotate"
    assert identity_view(admin, "tv")["state"] in ("valid", "refreshing")
