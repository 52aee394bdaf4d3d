"""Tokens per caller against a real RFC 8693 server: idpyoidc (idp_idpyoidc.py). Its `frontend`
client gets the callers' tokens (alice's, bob's); the relay, as client `orders-relay`, exchanges
each caller's token for a token of that caller addressed to the upstream, its endpoints found by
discovery. The echo upstream reports what it received, and the test checks the token's signature
and claims with idpyoidc's JWKS: `sub` is the caller's, `aud` what the identity asks for,
`client_id` the relay's. idpyoidc's recorder counts the exchanges.

The caller-by-caller faults (a refusal of one subject, an outage, 300 concurrent requests held at
the server) are in test_caller_exchange.py, against a stub that verifies every field."""

from __future__ import annotations

import pytest

from idp_idpyoidc import ACCESS_TOKEN_TYPE
from idp_relay import bearer, oauth_route
from http_client import assert_problem

pytestmark = pytest.mark.oauth


def get(relay, caller: str):
    return relay.request("GET", "/orders", headers=[("Authorization", f"Bearer {caller}")])


def test_each_callers_token_is_exchanged_for_its_own_on_a_validated_route(start_idpyoidc, upstream, start_relay, sensitive):
    idp = start_idpyoidc()
    audience = idp.exchange_audiences[0]
    relay = start_relay([oauth_route(upstream, "/", "orders", name="orders-api", inbound=idp.inbound())],
                        identities={"orders": idp.identity(scope="orders.read")})
    alice, bob = idp.caller_token("alice"), idp.caller_token("bob")

    tokens = {}
    for name, caller in (("alice", alice), ("bob", bob)):
        token = bearer(get(relay, caller))
        assert bearer(get(relay, caller)) == token, f"{name}'s second request did not reuse the token exchanged for it"
        claims = idp.verify(token)
        assert (claims["sub"], claims["aud"], claims["client_id"], claims["scope"]) == (name, [audience], "orders-relay", "orders.read")
        tokens[name] = token
    assert tokens["alice"] != tokens["bob"]

    records = idp.exchanges()
    assert [(r["status"], r["client_auth"]) for r in records] == [(200, "basic"), (200, "basic")]
    assert {dict(r["form"])["subject_token_type"] for r in records} == {ACCESS_TOKEN_TYPE}


def test_a_route_without_validation_lets_the_server_refuse_a_forged_subject(start_idpyoidc, upstream, start_relay, sensitive):
    idp = start_idpyoidc()
    resource = idp.exchange_resources[0]
    identity = idp.identity(audience=None, resource=[resource], clientAuth="post")
    relay = start_relay([oauth_route(upstream, "/", "orders", name="orders-api")], identities={"orders": identity})
    alice = idp.caller_token("alice")
    forged = alice[:-4] + "AAAA"

    resp = get(relay, forged)
    doc = assert_problem(resp, 401, route="orders-api")
    assert doc["oauthError"] == "invalid_request", doc
    sensitive.add_output("the refusal's problem", resp.body)
    claims = idp.verify(bearer(get(relay, alice)))
    assert (claims["sub"], claims["aud"]) == ("alice", [resource])
    assert [(r["status"], r["client_auth"]) for r in idp.exchanges()] == [(400, "post"), (200, "post")]
