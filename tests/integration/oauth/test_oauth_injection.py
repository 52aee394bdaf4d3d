"""Where the token goes: the header (replacing the client's own), a custom header and prefix, a
query parameter (replacing every one of that name the client sent); and never to another route's
upstream."""

from urllib.parse import parse_qs, parse_qsl, urlsplit

import pytest

from idp_processes import sha256
from idp_relay import bearer, oauth_route, received

pytestmark = pytest.mark.oauth


def issued(stub) -> list[str]:
    """Fingerprints of the access tokens the stub issued, in order."""
    return [sha256(r["issued"]["access_token"]) for r in stub.token_requests() if r["issued"]]


def test_the_default_injection_is_authorization_bearer(stub_idp, upstream, start_relay):
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": stub_idp.identity()})
    injected = sha256(bearer(relay.request("GET", "/orders/1")))
    assert issued(stub_idp) == [injected]


def test_the_clients_own_authorization_is_replaced(stub_idp, upstream, start_relay):
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": stub_idp.identity()})
    resp = relay.request("GET", "/orders/1", headers=[("Authorization", "Bearer the-clients-own-token")])
    injected = sha256(bearer(resp))
    assert issued(stub_idp) == [injected]
    assert b"the-clients-own-token" not in resp.body


def test_a_custom_header_and_prefix_replace_only_that_header(stub_idp, upstream, start_relay):
    relay = start_relay([oauth_route(upstream, "/", "orders", inject={"header": "X-Api-Token", "prefix": "Token"})],
                        identities={"orders": stub_idp.identity()})
    resp = relay.request("GET", "/x", headers=[("X-Api-Token", "client-value"), ("Authorization", "Basic Y2xpZW50")])
    [value] = received(resp, "X-Api-Token")
    scheme, _, token = value.partition(" ")
    assert scheme == "Token"
    injected = sha256(token)
    assert issued(stub_idp) == [injected]
    assert received(resp, "Authorization") == ["Basic Y2xpZW50"]


def test_query_injection_adds_access_token_to_the_query(stub_idp, upstream, start_relay):
    relay = start_relay([oauth_route(upstream, "/", "orders", inject={"query": "access_token"})],
                        identities={"orders": stub_idp.identity()})
    resp = relay.request("GET", "/orders/search?status=open&tag=a%20b")
    assert resp.status == 200
    target = urlsplit(resp.json()["target"])
    query = parse_qs(target.query, keep_blank_values=True)
    assert target.path == "/orders/search"
    assert query.pop("status") == ["open"] and query.pop("tag") == ["a b"]
    assert list(query) == ["access_token"] and len(query["access_token"]) == 1
    injected = sha256(query["access_token"][0])
    assert issued(stub_idp) == [injected]
    assert received(resp, "Authorization") == []


def test_query_injection_removes_every_access_token_the_client_sent(stub_idp, upstream, start_relay):
    relay = start_relay([oauth_route(upstream, "/", "orders", inject={"query": "access_token"})],
                        identities={"orders": stub_idp.identity()})
    sent = ("access_token=client-one&status=open&access%5Ftoken=client-two&tag=a%20b&&access_token"
            "&Access_Token=other&access_token2=x")
    resp = relay.request("GET", "/orders/search?" + sent)
    assert resp.status == 200
    path, _, query = resp.json()["target"].partition("?")
    kept, _, token = query.rpartition("&access_token=")
    assert path == "/orders/search"
    assert kept == "status=open&tag=a%20b&&Access_Token=other&access_token2=x"  # the rest, byte for byte
    assert [name for name, _ in parse_qsl(query, keep_blank_values=True)].count("access_token") == 1
    assert issued(stub_idp) == [sha256(token)]


def test_a_routes_token_never_reaches_another_routes_upstream(django_idp, upstream, start_relay):
    relay = start_relay([oauth_route(upstream, "/orders/", "orders"), oauth_route(upstream, "/billing/", "billing"),
                         oauth_route(upstream, "/public/")],
                        identities={"orders": django_idp.identity("orders-cc"),
                                    "billing": django_idp.identity("billing-cc")})
    seen: dict[str, set[str]] = {"orders": set(), "billing": set()}
    tokens: set[str] = set()
    public_bodies = []
    for target in ["/orders/0", "/billing/0"]:  # both tokens fetched (each request on its own connection)
        tokens.add(bearer(relay.request("GET", target)))
    # Then one client connection, so the relay may reuse upstream connections across the routes.
    with relay.connect() as conn:
        for target in ["/orders/1", "/public/1", "/billing/1", "/public/2", "/orders/2", "/billing/2", "/public/3"]:
            resp = conn.request("GET", target)
            prefix = target.split("/")[1]
            if prefix == "public":
                assert received(resp, "Authorization") == [], f"{target} got an Authorization header"
                public_bodies.append(resp.body)
            else:
                token = bearer(resp)
                tokens.add(token)
                seen[prefix].add(sha256(token))
    leaked = any(t.encode() in body for t in tokens for body in public_bodies)
    assert not leaked, "a token reached the public route's upstream"
    assert len(seen["orders"]) == 1 and len(seen["billing"]) == 1
    assert seen["orders"] != seen["billing"]
    by_client = {r["client_id"]: r["access_token_sha256"] for r in django_idp.token_requests()}
    assert {by_client[django_idp.clients["orders-cc"].client_id]} == seen["orders"]
    assert {by_client[django_idp.clients["billing-cc"].client_id]} == seen["billing"]
