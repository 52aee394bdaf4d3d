"""Browser logins (issue 11, authorization code + PKCE) with the real relay, django-oauth-toolkit
and headless Chromium: a person browses to a route, lands on DOT's login form, logs in, consents
and ends on the upstream with their own token; the relay's status page and `/identities` name
who logged in; two logins in flight at once both complete; the endpoints come from discovery
(only `issuer` configured) or from the configuration (nothing discovered). A curl user gets the
401 problem with the URL to open.
"""

from __future__ import annotations

import pytest

from browser import chromium, consent, login_at_dot, start_chromium, wait_for_url  # noqa: F401 (chromium is a fixture)
from http_client import assert_problem
from idp_processes import sha256
from idp_relay import bearer, oauth_route
from login_relay import (LOGIN_REQUIRED, at_dot_login_form, callback_url, echoed, echoed_bearer, get,
                         identity_view, log_in_at_dot, page_text, start_login_relay, wait_for_title)

pytestmark = pytest.mark.oauth


def dot_login_relay(start_relay, upstream, idp, client="cli-code", name="me", **options):
    relay, admin = start_login_relay(start_relay, upstream, {name: idp.identity(client, **options)})
    idp.set_redirect_uris(client, [callback_url(relay)])
    return relay, admin


def assert_persons_token(idp, token: str, client: str = "cli-code") -> None:
    """DOT itself accepts `token` as an access token of `client` for the person who logged in."""
    resp = idp.whoami(token)
    assert resp.status == 200, f"DOT refused the injected token: {resp.status}"
    who = resp.json()
    assert (who["user"], who["client_id"]) == (idp.person.username, idp.clients[client].client_id)


@pytest.mark.parametrize("client", ["cli-code", "web-code"])
def test_a_person_logs_in_in_a_browser_and_the_route_carries_their_token(django_idp, upstream, start_relay, chromium,  # noqa: F811
                                                                         sensitive, client):
    relay, admin = dot_login_relay(start_relay, upstream, django_idp, client)
    chromium.get(relay.url + "/orders/42?page=2")
    log_in_at_dot(chromium, django_idp, sensitive, relay.url)
    wait_for_url(chromium, lambda url: url == relay.url + "/orders/42?page=2", "the page first asked for")
    assert echoed(chromium)["target"] == "/orders/42?page=2"
    token = echoed_bearer(chromium)
    assert_persons_token(django_idp, token, client)

    # What DOT was asked: one authorization with PKCE S256 and a nonce, one code exchange by
    # this client with the verifier, the token it issued is the one injected.
    [consented] = django_idp.authorizations(method="POST")
    assert (consented["code_challenge_method"], consented["redirect_uri"]) == ("S256", callback_url(relay))
    assert consented["nonce_sha256"] and consented["state_sha256"]
    [exchange] = django_idp.token_requests(grant_type="authorization_code")
    assert exchange["code_sha256"] == consented["to_client"]["code_sha256"]
    assert exchange["code_verifier_sha256"] and exchange["redirect_uri"] == callback_url(relay)
    assert exchange["client_auth"] == ("none" if client == "cli-code" else "basic")
    assert exchange["access_token_sha256"] == sha256(token)

    # Later requests (a script, another tab) carry the same token without asking DOT again.
    assert sha256(bearer(get(relay, "/orders/43"))) == sha256(token)
    assert len(django_idp.token_requests()) == 1


def test_the_status_page_and_identities_name_who_logged_in(django_idp, upstream, start_relay, chromium, sensitive):  # noqa: F811
    relay, admin = dot_login_relay(start_relay, upstream, django_idp)
    before = identity_view(admin, "me")
    assert before["state"] == "needs-login" and "loggedInAs" not in before
    chromium.get(relay.url + "/.oauth-relay/login/me")
    log_in_at_dot(chromium, django_idp, sensitive, relay.url)
    # Without a page to go back to, the login ends on the status page.
    wait_for_url(chromium, lambda url: url == relay.url + "/.oauth-relay/status/me", "the status page")
    title = wait_for_title(chromium, lambda t: t.startswith("Logged in"), "the status page to say who logged in")
    assert title == f"Logged in as {django_idp.person.username}"
    assert "Identity me holds a valid token" in page_text(chromium)
    view = identity_view(admin, "me")
    assert (view["state"], view["loggedInAs"]) == ("valid", django_idp.person.username)
    assert view.get("lastLoginFailure") is None
    assert_persons_token(django_idp, bearer(get(relay, "/x")))


def test_a_script_gets_a_401_problem_with_the_url_that_starts_the_login(django_idp, upstream, start_relay, sensitive):
    relay, _ = dot_login_relay(start_relay, upstream, django_idp)
    resp = get(relay, "/orders/1", [("Accept", "application/json")])
    sensitive.add_output("the 401 problem", resp.body)
    doc = assert_problem(resp, 401)
    login_url = f"{relay.url}/.oauth-relay/login/me"
    assert (doc["type"], doc["identity"], doc["loginUrl"]) == (LOGIN_REQUIRED, "me", login_url)
    assert resp.header("www-authenticate") == f'OAuth-Relay-Login identity="me", login_url="{login_url}"'
    # A browser is sent to that login, with the page to come back to.
    browser = get(relay, "/orders/1", [("Accept", "text/html")])
    assert (browser.status, browser.header("location")) == (302, "/.oauth-relay/login/me?return=%2Forders%2F1")
    assert django_idp.authorizations() == [], "no login starts before the browser follows the redirect"


def test_two_logins_in_flight_at_once_in_two_tabs_both_complete(django_idp, upstream, start_relay, chromium, sensitive):  # noqa: F811
    relay, admin = dot_login_relay(start_relay, upstream, django_idp)
    first = chromium.current_window_handle
    chromium.get(relay.url + "/tab-one")
    at_dot_login_form(chromium, django_idp, sensitive)
    chromium.switch_to.new_window("tab")
    chromium.get(relay.url + "/tab-two")
    at_dot_login_form(chromium, django_idp, sensitive)
    # The second tab logs in first; the first tab's login is still in flight and completes after.
    login_at_dot(chromium, django_idp.person.username, django_idp.person.password)
    consent(chromium)
    wait_for_url(chromium, lambda url: url == relay.url + "/tab-two", "tab two back at its page")
    second_token = echoed_bearer(chromium)
    chromium.switch_to.window(first)
    chromium.refresh()  # the form's CSRF token changed with the other tab's login
    login_at_dot(chromium, django_idp.person.username, django_idp.person.password)
    consent(chromium)
    wait_for_url(chromium, lambda url: url == relay.url + "/tab-one", "tab one back at its page")
    first_token = echoed_bearer(chromium)
    assert len(django_idp.token_requests(grant_type="authorization_code", status=200)) == 2
    assert_persons_token(django_idp, first_token)
    # Tab one came back after its own login: its page carries that login's token, not tab two's.
    [_, last] = django_idp.token_requests(grant_type="authorization_code", status=200)
    assert sha256(first_token) == last["access_token_sha256"] != sha256(second_token)


def test_two_identities_log_in_at_once_in_two_browsers(django_idp, upstream, start_relay, tmp_path, sensitive):
    identities = {"cli": django_idp.identity("cli-code"), "web": django_idp.identity("web-code")}
    relay, admin = start_login_relay(start_relay, upstream, identities,
                                     routes=[oauth_route(upstream, "/cli/", "cli"), oauth_route(upstream, "/web/", "web")])
    for client in ("cli-code", "web-code"):
        django_idp.set_redirect_uris(client, [callback_url(relay)])
    one = start_chromium(tmp_path / "profile-one")
    two = start_chromium(tmp_path / "profile-two")
    try:
        one.get(relay.url + "/cli/a")
        two.get(relay.url + "/web/b")
        at_dot_login_form(one, django_idp, sensitive)
        at_dot_login_form(two, django_idp, sensitive)
        for driver, path in ((two, "/web/b"), (one, "/cli/a")):
            login_at_dot(driver, django_idp.person.username, django_idp.person.password)
            consent(driver)
            wait_for_url(driver, lambda url, p=path: url == relay.url + p, f"the browser back at {path}")
        assert_persons_token(django_idp, echoed_bearer(one), "cli-code")
        assert_persons_token(django_idp, echoed_bearer(two), "web-code")
    finally:
        one.quit()
        two.quit()
    assert {identity_view(admin, n)["state"] for n in ("cli", "web")} == {"valid"}


@pytest.mark.parametrize("endpoints", ["discovered", "configured"])
def test_endpoints_come_from_discovery_or_from_the_configuration(django_idp, upstream, start_relay, chromium, sensitive,  # noqa: F811
                                                                 endpoints):
    if endpoints == "discovered":
        # Only `issuer`: token, authorization and JWKS endpoints from DOT's OpenID document.
        options = {"revocationUrl": None}
    else:
        options = {"explicit_endpoints": True}
    relay, admin = dot_login_relay(start_relay, upstream, django_idp, **options)
    chromium.get(relay.url + "/x")
    log_in_at_dot(chromium, django_idp, sensitive, relay.url)
    assert_persons_token(django_idp, echoed_bearer(chromium))
    assert identity_view(admin, "me")["loggedInAs"] == django_idp.person.username
    discovered = "endpoints discovered" in relay.log()
    assert discovered == (endpoints == "discovered"), relay.log()[-3000:]
