"""routes[].inbound with introspection: the relay takes callers' opaque tokens, asking
django-oauth-toolkit's RFC 7662 endpoint (/o/introspect/) about each as the client of its own
identity (`billing-cc`, client_secret_basic), before anything reaches the upstream.

The callers' tokens are real ones DOT issues to another application (`orders-cc`, client
credentials); one is revoked at DOT, another made up. Each question is counted by the relay's
metrics (oauth_relay_inbound_introspections_total), and every token is registered as sensitive:
none may show in a relay log (conftest.py).
"""

from __future__ import annotations

import json
import secrets
import urllib.parse
import urllib.request

import pytest

from admin_client import start_with_admin
from http_client import RawConnection, assert_problem
from processes import route

pytestmark = pytest.mark.oauth

CLAIM_HEADERS = {"client_id": "X-Forwarded-Client", "scope": "X-Forwarded-Scope", "username": "X-Forwarded-User"}


def caller_token(idp, client: str = "orders-cc", scope: str = "orders.read") -> str:
    """An access token DOT issues to `client` (client credentials, client_secret_post)."""
    c = idp.clients[client]
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": c.client_id, "client_secret": c.client_secret,
                                   "scope": scope}).encode()
    with urllib.request.urlopen(urllib.request.Request(idp.token_url, data=form), timeout=10) as answer:
        return json.loads(answer.read())["access_token"]


def revoke(idp, token: str, client: str = "orders-cc") -> None:
    c = idp.clients[client]
    form = urllib.parse.urlencode({"token": token, "client_id": c.client_id, "client_secret": c.client_secret}).encode()
    with urllib.request.urlopen(urllib.request.Request(idp.revocation_url, data=form), timeout=10) as answer:
        assert answer.status == 200


def introspecting_relay(start_relay, idp, upstream, **inbound):
    rules = {"issuer": idp.issuer, "audiences": ["orders"], "introspectionUrl": f"{idp.url}/o/introspect/",
             "requiredScopes": ["orders.read"], "claimHeaders": CLAIM_HEADERS, **inbound}
    return start_with_admin(start_relay, [route(upstream, "/", name="opaque", identity="billing", inbound=rules)],
                            identities={"billing": idp.identity("billing-cc", clientAuth="basic")})


def send(conn: RawConnection, token: str, *headers):
    return conn.request("GET", "/orders", headers=[("Authorization", f"Bearer {token}"), *headers])


def introspections(admin) -> dict:
    return admin.scrape().by("oauth_relay_inbound_introspections_total", "outcome", identity="billing")


def test_an_active_token_is_introspected_once_and_its_caller_passed_on(start_django_idp, upstream, start_relay, sensitive):
    idp = start_django_idp()
    relay, admin = introspecting_relay(start_relay, idp, upstream)
    token = sensitive.add("the caller's opaque token", caller_token(idp))
    with RawConnection(relay.host, relay.port) as conn:
        resp = send(conn, token, ("X-Forwarded-Client", "forged"))
        assert resp.status == 200, resp.body
        assert resp.echo_headers("X-Forwarded-Client") == [idp.clients["orders-cc"].client_id]
        assert resp.echo_headers("X-Forwarded-Scope") == ["orders.read"]
        for _ in range(99):
            assert send(conn, token).status == 200
    assert introspections(admin) == {"active": 1}
    outcomes = admin.scrape().by("oauth_relay_inbound_validations_total", "outcome", route="opaque")
    assert outcomes == {"introspected": 1, "cache_hit": 99}, outcomes
    assert upstream.stats()["requests_started"] == 100


def test_revoked_and_made_up_tokens_are_refused_and_the_upstream_sees_nothing(start_django_idp, upstream, start_relay, sensitive):
    idp = start_django_idp()
    # A route whose answers are not reused: the revocation shows at the next request.
    relay, admin = introspecting_relay(start_relay, idp, upstream, introspectionCacheSeconds=0)
    token = sensitive.add("the caller's opaque token", caller_token(idp))
    made_up = sensitive.add("a made-up opaque token", secrets.token_urlsafe(24))
    with RawConnection(relay.host, relay.port) as conn:
        assert send(conn, token).status == 200
        seen = upstream.stats()["requests_started"]
        revoke(idp, token)
        for refused in (token, made_up):
            resp = send(conn, refused)
            doc = assert_problem(resp, 401, route="opaque")
            assert doc["detail"] == "the token is not active"
            assert resp.header_all("www-authenticate") == [
                'Bearer realm="oauth-relay", error="invalid_token", error_description="the token is not active"']
        assert upstream.stats()["requests_started"] == seen, "a refused token reached the upstream"
    assert introspections(admin) == {"active": 1, "inactive": 2}


def test_missing_scope_is_403_and_a_failing_endpoint_is_503(start_django_idp, upstream, start_relay, sensitive):
    idp = start_django_idp()
    relay, admin = introspecting_relay(start_relay, idp, upstream, requiredScopes=["orders.read", "orders.write"])
    token = sensitive.add("the caller's opaque token", caller_token(idp))
    with RawConnection(relay.host, relay.port) as conn:
        resp = send(conn, token)
        assert assert_problem(resp, 403, route="opaque")["detail"] == "the token lacks the scope orders.write"
    broken, broken_admin = introspecting_relay(start_relay, idp, upstream, introspectionUrl=f"{idp.url}/o/no-such-endpoint/")
    with RawConnection(broken.host, broken.port) as conn:
        resp = send(conn, token)
        doc = assert_problem(resp, 503, route="opaque")
        assert doc["detail"].startswith("the caller's token cannot be checked now"), doc
        assert int(resp.header("retry-after")) >= 1
    assert introspections(broken_admin) == {"failed": 1}
    assert upstream.stats()["requests_started"] == 0


def test_without_introspection_an_opaque_token_stays_invalid(start_django_idp, upstream, start_relay, sensitive):
    idp = start_django_idp()
    token = sensitive.add("the caller's opaque token", caller_token(idp))
    relay = start_relay([route(upstream, "/", name="jwt-only", inbound={"issuer": idp.issuer, "audiences": ["orders"],
                                                                        "jwksUrl": idp.jwks_url})])
    with RawConnection(relay.host, relay.port) as conn:
        assert assert_problem(send(conn, token), 401, route="jwt-only")["detail"] == "the token is not a well-formed signed JWT"
    assert upstream.stats()["requests_started"] == 0
