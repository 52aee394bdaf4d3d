"""The idpyoidc fixture (idp_idpyoidc.py) is a real RFC 8693 server, asked directly with `requests`
(no relay): a caller's token from client A is exchanged by client B for a token of the same
caller, signed with the keys of its JWKS, for the audience or resource asked; the recorder counts
each exchange, and idpyoidc's refusals come back as RFC 6749 §5.2 errors."""

from __future__ import annotations

import pytest

from idp_idpyoidc import ACCESS_TOKEN_TYPE, EXCHANGE_GRANT, fingerprint

pytestmark = pytest.mark.oauth


def test_discovery_names_the_token_endpoint_jwks_and_token_exchange(start_idpyoidc):
    idp = start_idpyoidc()
    metadata = idp.http.get(idp.discovery_url, timeout=10).json()
    assert metadata["issuer"] == idp.issuer
    assert metadata["token_endpoint"] == idp.token_url
    assert metadata["jwks_uri"] == idp.jwks_url
    assert EXCHANGE_GRANT in metadata["grant_types_supported"]
    assert {"client_secret_basic", "client_secret_post"} <= set(metadata["token_endpoint_auth_methods_supported"])
    caller = idp.verify(idp.caller_token("alice"))
    assert (caller["sub"], caller["aud"], caller["email"]) == ("alice", ["orders-relay"], "alice@example.test")


def test_a_callers_token_exchanged_with_client_secret_basic_is_that_callers(start_idpyoidc):
    idp = start_idpyoidc()
    alice, bob = idp.caller_token("alice"), idp.caller_token("bob")
    audience = idp.exchange_audiences[0]

    resp = idp.exchange(bob, "basic", audience=audience, scope="orders.read")

    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert (answer["token_type"], answer["issued_token_type"]) == ("Bearer", ACCESS_TOKEN_TYPE)
    assert 0 < answer["expires_in"] <= 3600
    claims = idp.verify(answer["access_token"])
    assert (claims["sub"], claims["aud"], claims["client_id"], claims["scope"]) == \
        ("bob", [audience], "orders-relay", "orders.read")
    assert idp.exchange_count() == 1
    [record] = idp.exchanges()
    assert (record["status"], record["client_auth"], record["client_id"]) == (200, "basic", "orders-relay")
    form = dict(record["form"])
    assert form["subject_token"] == fingerprint(bob) != fingerprint(alice)
    assert (form["subject_token_type"], form["audience"]) == (ACCESS_TOKEN_TYPE, audience)


def test_client_secret_post_and_resource_and_the_refusals_are_counted(start_idpyoidc):
    idp = start_idpyoidc()
    alice = idp.caller_token("alice")
    resource = idp.exchange_resources[0]

    resp = idp.exchange(alice, "post", resource=resource)
    assert resp.status_code == 200, resp.text
    claims = idp.verify(resp.json()["access_token"])
    assert (claims["sub"], claims["aud"]) == ("alice", [resource])

    refusals = {
        "a subject token it did not issue": (idp.exchange(alice[:-4] + "AAAA", "basic"), 400, "invalid_request"),
        "an audience outside the policy": (idp.exchange(alice, "basic", audience="https://elsewhere.test"), 400,
                                           "invalid_target"),
        "a wrong client secret": (idp.http.post(idp.token_url, auth=("orders-relay", "not-the-secret"), timeout=10, data={
            "grant_type": EXCHANGE_GRANT, "subject_token": alice, "subject_token_type": ACCESS_TOKEN_TYPE}),
            401, "invalid_client"),
    }
    for what, (answer, status, error) in refusals.items():
        assert (answer.status_code, answer.json()["error"]) == (status, error), f"{what}: {answer.text}"
    assert idp.exchange_count() == 4
    assert [r["status"] for r in idp.exchanges()] == [200, 400, 400, 401]
    assert idp.exchange_count(status=200, client_auth="post") == 1
