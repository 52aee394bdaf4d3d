"""The admin listener (issue 5): health, readiness that follows the identities' tokens, the
identities view (never a token), forced refresh and forgetting a token — against the IdP stub."""

import json

import pytest

from deadlines import wait_until
from http_client import curl
from idp_relay import bearer, oauth_route
from processes import free_port

pytestmark = pytest.mark.oauth


def start_with_admin(start_relay, stub_idp, upstream, **stub):
    stub_idp.script(default={"kind": "token", "expires_in": 3600, **stub})
    admin_port = free_port()
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": stub_idp.identity()},
                        admin=f"127.0.0.1:{admin_port}")
    return relay, f"http://127.0.0.1:{admin_port}"


def get(url):
    return curl(url, timeout=5)


def test_healthz_answers_while_the_relay_serves(stub_idp, upstream, start_relay):
    relay, admin = start_with_admin(start_relay, stub_idp, upstream)
    resp = get(admin + "/healthz")
    assert resp.status == 200
    assert json.loads(resp.body) == {"status": "serving"}


def test_readyz_is_503_until_the_identity_holds_a_token_then_200(stub_idp, upstream, start_relay):
    relay, admin = start_with_admin(start_relay, stub_idp, upstream, delay_ms=1500)
    first = get(admin + "/readyz")
    assert first.status == 503
    assert "orders" in json.loads(first.body)["detail"]
    wait_until(lambda: get(admin + "/readyz").status == 200, 10, "readyz to turn 200 once the token arrived")


def test_identities_shows_state_and_expiry_but_never_the_token(stub_idp, upstream, start_relay):
    relay, admin = start_with_admin(start_relay, stub_idp, upstream)
    token = bearer(relay.request("GET", "/x"))
    body = get(admin + "/identities").body.decode()
    [identity] = json.loads(body)["identities"]
    assert identity["name"] == "orders" and identity["state"] == "valid"
    assert identity["grant"] == "client_credentials"
    assert 3000 < identity["expiresInSeconds"] <= 3600
    assert token not in body and token[-8:] not in body


def test_post_refresh_fetches_a_new_token_and_requests_get_it(stub_idp, upstream, start_relay):
    relay, admin = start_with_admin(start_relay, stub_idp, upstream)
    before = bearer(relay.request("GET", "/x"))
    requests_before = len(stub_idp.token_requests())
    resp = curl(admin + "/identities/orders/refresh", "-X", "POST")
    assert resp.status == 202
    wait_until(lambda: len(stub_idp.token_requests()) == requests_before + 1, 5, "one more token request")
    wait_until(lambda: bearer(relay.request("GET", "/y")) != before, 5, "the refreshed token on requests")


def test_delete_token_forgets_it_and_the_next_request_carries_a_new_one(stub_idp, upstream, start_relay):
    relay, admin = start_with_admin(start_relay, stub_idp, upstream)
    before = bearer(relay.request("GET", "/x"))
    resp = curl(admin + "/identities/orders/token", "-X", "DELETE")
    assert resp.status == 204
    assert bearer(relay.request("GET", "/y")) != before


def test_unknown_identity_and_unknown_path_are_404_problems(stub_idp, upstream, start_relay):
    relay, admin = start_with_admin(start_relay, stub_idp, upstream)
    for path, method in (("/identities/nobody/refresh", "POST"), ("/nothing-here", "GET")):
        resp = curl(admin + path, "-X", method)
        assert resp.status == 404
        assert resp.header("Content-Type") == "application/problem+json"
