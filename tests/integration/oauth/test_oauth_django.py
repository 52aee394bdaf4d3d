"""Grants against a real authorization server the project did not write: django-oauth-toolkit.
Every token the relay injects is shown to be one that server accepts (its /api/whoami, checked by
DOT's own code, sits in the upstream position or is asked directly)."""

import pytest

from deadlines import wait_until
from idp_processes import sha256
from idp_relay import bearer, oauth_route

pytestmark = pytest.mark.oauth


def start_orders_relay(start_relay, idp, upstream, **identity_options):
    """/echo/ -> the echo upstream and /api/ -> django, both with identity `orders`."""
    return start_relay([oauth_route(upstream, "/echo/", "orders"), oauth_route(idp, "/api/", "orders")],
                       identities={"orders": idp.identity("orders-cc", **identity_options)})


def whoami(relay) -> dict:
    resp = relay.request("GET", "/api/whoami")
    assert resp.status == 200, f"django refused the injected token: {resp.status} {resp.body[:300]!r}"
    return resp.json()


@pytest.mark.parametrize("client_auth", ["basic", "post"])
def test_client_credentials_token_reaches_the_upstream_and_django_accepts_it(django_idp, upstream, start_relay,
                                                                             client_auth):
    relay = start_orders_relay(start_relay, django_idp, upstream, clientAuth=client_auth)
    injected = sha256(bearer(relay.request("GET", "/echo/orders/42")))
    who = whoami(relay)
    assert who["application"] == "orders-cc"
    assert who["token_sha256"] == injected
    [record] = django_idp.token_requests()
    assert record["grant_type"] == "client_credentials"
    assert record["client_auth"] == client_auth
    assert record["status"] == 200
    assert record["access_token_sha256"] == injected


def test_client_secret_post_puts_id_and_secret_in_the_form(django_idp, upstream, start_relay):
    relay = start_orders_relay(start_relay, django_idp, upstream, clientAuth="post")
    whoami(relay)
    [record] = django_idp.token_requests()
    assert {"client_id", "client_secret", "grant_type"} <= set(record["form_keys"])
    assert record["client_id"] == django_idp.clients["orders-cc"].client_id


def test_secrets_from_files_work(django_idp, upstream, start_relay):
    relay = start_orders_relay(start_relay, django_idp, upstream, secret_files=True)
    assert whoami(relay)["application"] == "orders-cc"


def test_scope_is_sent_and_the_token_carries_only_that_scope(django_idp, upstream, start_relay):
    relay = start_orders_relay(start_relay, django_idp, upstream, scope="orders.read")
    who = whoami(relay)
    [record] = django_idp.token_requests()
    assert record["scope"] == "orders.read"
    assert who["scope"] == "orders.read"


def test_public_client_password_grant_sends_its_client_id_without_a_secret(django_idp, start_relay):
    relay = start_relay([oauth_route(django_idp, "/api/", "mobile")],
                        identities={"mobile": django_idp.identity("mobile-pw", clientAuth="none")})
    who = whoami(relay)
    assert who["application"] == "mobile-pw"
    assert who["user"] == django_idp.username
    [record] = django_idp.token_requests()
    assert record["grant_type"] == "password"
    assert record["client_auth"] == "none"
    assert "client_secret" not in record["form_keys"]


def test_password_grant_is_followed_by_a_refresh_token_grant_after_expiry(start_django_idp, start_relay):
    idp = start_django_idp(access_token_seconds=2)
    # django-oauth-toolkit revokes the old access token as it processes a refresh, so a request
    # that already carries the old token while the refresh is under way meets a 401; the
    # default retryOnStatus replays it with the new token, as a real deployment would.
    relay = start_relay([oauth_route(idp, "/api/", "legacy")],
                        identities={"legacy": idp.identity("legacy-pw", secret_files=True)})
    assert whoami(relay)["user"] == idp.username
    [password_grant] = idp.token_requests(grant_type="password")
    assert password_grant["status"] == 200 and password_grant["issued_refresh_token_sha256"]
    refresh = wait_until(lambda: idp.token_requests(grant_type="refresh_token"), 8,
                         "a refresh_token grant at django")[0]
    assert refresh["refresh_token_sha256"] == password_grant["issued_refresh_token_sha256"]
    assert refresh["status"] == 200
    wait_until(lambda: whoami(relay)["token_sha256"] == refresh["access_token_sha256"], 3,
               "the refreshed token on requests")
    assert len(idp.token_requests(grant_type="password")) == 1


def test_a_rotated_refresh_token_is_used_for_the_next_refresh(start_django_idp, start_relay):
    idp = start_django_idp(access_token_seconds=2, rotate_refresh_token=True)
    relay = start_relay([oauth_route(idp, "/api/", "legacy")],
                        identities={"legacy": idp.identity("legacy-pw")})
    whoami(relay)
    refreshes = wait_until(lambda: (r := idp.token_requests(grant_type="refresh_token"))[1:] and r, 12,
                           "two refresh_token grants at django")
    first, second = refreshes[:2]
    [password_grant] = idp.token_requests(grant_type="password")
    assert first["refresh_token_sha256"] == password_grant["issued_refresh_token_sha256"]
    assert first["issued_refresh_token_sha256"] != password_grant["issued_refresh_token_sha256"], \
        "django did not rotate the refresh token"
    assert second["refresh_token_sha256"] == first["issued_refresh_token_sha256"]
    assert [r["status"] for r in (first, second)] == [200, 200]


def test_an_expired_token_is_never_injected(start_django_idp, start_relay):
    # No replay on 401 here: a request that reaches django with an expired token shows as a 401.
    idp = start_django_idp(access_token_seconds=2)
    relay = start_relay([oauth_route(idp, "/api/", "orders", retryOnStatus=[])],
                        identities={"orders": idp.identity("orders-cc")})
    seen = set()
    refused = []

    def three_tokens_seen():
        resp = relay.request("GET", "/api/whoami")
        if resp.status != 200:
            refused.append(resp.status)
        else:
            seen.add(resp.json()["token_sha256"])
        return len(seen) >= 3 or refused

    wait_until(three_tokens_seen, 12, "three successive tokens", interval=0.01)
    assert not refused, f"django refused requests through the relay: {refused}"


def test_upstream_401_fetches_a_new_token_and_replays_the_request(django_idp, upstream, start_relay, sensitive):
    relay = start_orders_relay(start_relay, django_idp, upstream)
    first = bearer(relay.request("GET", "/echo/"))
    sensitive.add("the revoked token", first)  # revoked tokens leave django's database
    first_sha = sha256(first)
    django_idp.revoke(first, "orders-cc")
    assert django_idp.whoami(first).status == 401
    who = whoami(relay)
    assert who["token_sha256"] != first_sha
    assert len(django_idp.token_requests()) == 2
