"""private_key_jwt and client_secret_jwt against Glewlwyd (idp_glewlwyd.py), which checks every
client assertion itself (signature with the registered key or secret, iss, sub, aud = its token
endpoint, exp, a jti never seen before) and issues signed JWT access tokens the test verifies."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from deadlines import wait_until
from idp_glewlwyd import PASSWORD, SCOPE, USERNAME
from key_files import key_file, pem
from idp_relay import assert_oauth_problem, bearer, oauth_route

pytestmark = pytest.mark.oauth

JWT_SECRET = "glewlwyd-client-secret-of-more-than-32-bytes"


@pytest.mark.parametrize("kind, alg", [("ec", None), ("rsa", None), ("rsa", "PS256")])
def test_private_key_jwt_client_credentials_token_from_glewlwyd(start_glewlwyd, upstream, start_relay, tmp_path,
                                                                 sensitive, kind, alg):
    idp = start_glewlwyd()
    key = ec.generate_private_key(ec.SECP256R1()) if kind == "ec" else rsa.generate_private_key(65537, 2048)
    idp.add_client("relay-pkjwt", "private_key_jwt", public_key_pem=pem(key, False))
    options = {"clientAuth": "private_key_jwt", "clientKeyFile": key_file(tmp_path, sensitive, key), "clientKeyId": "k1"}
    if alg:
        options["clientAssertionAlg"] = alg
    relay = start_relay([oauth_route(upstream, "/", "svc")], identities={"svc": idp.identity("relay-pkjwt", **options)},
                        args=("--log-level", "trace"))
    token = bearer(relay.request("GET", "/x"))
    sensitive.add("the token glewlwyd issued", token)
    claims = idp.access_token_claims(token)
    assert claims["client_id"] == "relay-pkjwt", claims
    assert claims["scope"] == SCOPE
    assert idp.issued_to("relay-pkjwt") == 1


def test_client_secret_jwt_token_from_glewlwyd(start_glewlwyd, upstream, start_relay, sensitive):
    idp = start_glewlwyd()
    sensitive.add("the client_secret_jwt secret", JWT_SECRET)
    idp.add_client("relay-csjwt", "client_secret_jwt", secret=JWT_SECRET)
    relay = start_relay([oauth_route(upstream, "/", "svc")], args=("--log-level", "trace"), identities={
        "svc": idp.identity("relay-csjwt", clientAuth="client_secret_jwt", clientSecret=JWT_SECRET)})
    token = bearer(relay.request("GET", "/x"))
    sensitive.add("the token glewlwyd issued", token)
    assert idp.access_token_claims(token)["client_id"] == "relay-csjwt"


def test_every_refresh_carries_a_new_assertion_glewlwyd_accepts(start_glewlwyd, upstream, start_relay, tmp_path,
                                                                sensitive):
    """Glewlwyd checks any client assertion a token request carries, whatever the grant, and refuses
    a jti it has seen (401): refreshes it accepts had fresh, valid assertions. (For the password
    and refresh_token grants it does not tie the tokens to the client, so the stub test checks that
    the refresh carries an assertion at all.)"""
    idp = start_glewlwyd(access_token_seconds=3)
    key = ec.generate_private_key(ec.SECP256R1())
    idp.add_client("relay-pw", "private_key_jwt", public_key_pem=pem(key, False), grants=("password", "refresh_token"))
    relay = start_relay([oauth_route(upstream, "/", "svc")], args=("--log-level", "debug"), identities={
        "svc": idp.identity("relay-pw", grant="password", username=USERNAME, password=PASSWORD,
                        clientAuth="private_key_jwt", clientKeyFile=key_file(tmp_path, sensitive, key))})
    first = bearer(relay.request("GET", "/x"))
    wait_until(lambda: idp.issued_for_user(USERNAME) >= 3, 15, "two refreshes at glewlwyd")
    later = bearer(relay.request("GET", "/x"))
    assert later != first
    assert idp.access_token_claims(later)["scope"] == SCOPE
    log = relay.log()
    assert log.count('"purpose":"refresh"') >= 2, "the relay did not refresh with the refresh token"
    assert "token request failed" not in log


def test_glewlwyd_refusing_the_assertion_is_a_502(start_glewlwyd, upstream, start_relay, tmp_path, sensitive):
    idp = start_glewlwyd()
    registered, used = (ec.generate_private_key(ec.SECP256R1()) for _ in range(2))
    idp.add_client("relay-pkjwt", "private_key_jwt", public_key_pem=pem(registered, False))
    relay = start_relay([oauth_route(upstream, "/", "svc")], identities={"svc": idp.identity(
        "relay-pkjwt", clientAuth="private_key_jwt", clientKeyFile=key_file(tmp_path, sensitive, used))})
    resp = relay.request("GET", "/x")
    sensitive.add_output("problem body", resp.body)
    doc = assert_oauth_problem(resp, 502, identity="svc")
    assert "403" in doc["detail"] or doc.get("oauthError") == "invalid_client", doc
    assert idp.issued_to("relay-pkjwt") == 0
