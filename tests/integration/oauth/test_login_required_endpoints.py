"""An identity whose provider metadata lacks an endpoint its grant or scope needs (and whose
configuration does not name it) is `failing`, naming the missing member, instead of taking an ID
token it cannot check or showing a login page that refreshes forever:

- a browser login with `openid` and no `jwks_uri`: no login starts, so no ID token, not even one
  signed with a key the IdP never published, is ever taken;
- a browser login without `authorization_endpoint`, a device login without
  `device_authorization_endpoint`;
- a configured endpoint stands in for a member the document lacks.
"""

from __future__ import annotations

import pytest

from idp_relay import assert_oauth_problem, bearer
from login_relay import RawBrowser, at_stub, browse, get, start_login_relay, wait_for_state

pytestmark = pytest.mark.oauth


def assert_failing_for_want_of(admin, name: str, member: str) -> dict:
    view = wait_for_state(admin, name, "failing")
    assert view["lastError"]["code"] == "discovery_endpoint_missing", view
    assert f"has no {member}, which " in view["lastError"]["description"], view
    return view


@pytest.mark.parametrize("member,grant,scope", [
    ("jwks_uri", "authorization_code", "openid profile"),
    ("authorization_endpoint", "authorization_code", "profile"),
])
def test_a_browser_login_whose_metadata_lacks_what_it_needs_is_failing_and_starts_nothing(stub_idp, upstream, start_relay,
                                                                                        member, grant, scope):
    stub_idp.script(discovery={"kind": "metadata", "members": {member: None}},
                    default={"kind": "token", "expires_in": 3600, "id_token": {"key": "attacker"}})
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity(grant, scope=scope)})
    assert_failing_for_want_of(admin, "me", member)
    assert_oauth_problem(get(relay, "/x"), 503, identity="me")
    page = browse(relay, "/.oauth-relay/login/me")
    body = page.body.decode()
    assert page.status == 503 and member in body, body[:500]
    assert 'http-equiv="refresh"' not in body and page.header("retry-after") is None, "a page that can only wait forever"
    assert not stub_idp.endpoint_requests(endpoint="authorize") and not stub_idp.token_requests()


def test_a_device_login_whose_metadata_lacks_its_endpoint_is_failing_and_asks_nothing(stub_idp, upstream, start_relay):
    stub_idp.script(discovery={"kind": "metadata", "members": {"device_authorization_endpoint": None}})
    relay, admin = start_login_relay(start_relay, upstream, {"tv": stub_idp.login_identity("device_code")})
    assert_failing_for_want_of(admin, "tv", "device_authorization_endpoint")
    assert_oauth_problem(get(relay, "/x"), 503, identity="tv")
    status = browse(relay, "/.oauth-relay/status/tv").body.decode()
    assert "device_authorization_endpoint" in status, status[:500]
    assert not stub_idp.endpoint_requests(endpoint="device")


def test_a_configured_jwks_url_stands_in_for_the_member_the_metadata_lacks(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(discovery={"kind": "metadata", "members": {"jwks_uri": None}},
                    default={"kind": "token", "expires_in": 3600, "refresh_token": "new", "id_token": {}})
    relay, admin = start_login_relay(start_relay, upstream,
                                     {"me": stub_idp.login_identity(scope="openid profile", jwksUrl=f"{stub_idp.url}/jwks")})
    wait_for_state(admin, "me", "needs-login")
    browser = RawBrowser(relay, sensitive)
    assert browser.callback(at_stub(stub_idp, browser.start_login("me"))).status == 302
    view = wait_for_state(admin, "me", "valid")
    assert view["loggedInAs"] == "stub-person", "the ID token was checked with the configured JWKS"
    assert stub_idp.endpoint_requests(endpoint="jwks")
    assert bearer(get(relay, "/x"))
