"""DPoP (RFC 9449) against Glewlwyd (idp_glewlwyd.py), a real server that checks the proofs
itself: at its token endpoint (every grant, refreshes included: the refresh must prove the key
the refresh token is bound to), demanding nonces (use_dpop_nonce, answered by the relay with one
retry), and at its userinfo endpoint as the upstream of a route with stripPrefix and a base path
(htm, htu, ath, an unseen jti, the nonce). The tokens it issues are JWTs whose cnf.jkt names the
relay's key, checked here against the key file. And Config/dpop.json as it is (private_key_jwt
with DPoP): Glewlwyd 2.7.5 answers a DPoP token request whose client assertion has no client_id
beside it with a 500, so this works because the relay sends client_id with every assertion.
"""

from __future__ import annotations

import json
import re
import secrets

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from deadlines import wait_until
from dpop_proofs import ProofChecker
from idp_glewlwyd import PASSWORD, SCOPE, USERNAME
from idp_relay import assert_oauth_problem, oauth_route
from key_files import key_file, pem, thumbprint
from processes import REPO

pytestmark = pytest.mark.oauth


def glewlwyd_client(idp, sensitive, client_id: str, grants=("client_credentials",)) -> dict:
    """A client_secret_basic client of `idp` and the relay's identity for it (private_key_jwt with
    DPoP: test_the_dpop_example_config_gets_a_bound_token_from_glewlwyd)."""
    secret = sensitive.add(f"client secret of {client_id}", "dpop-" + secrets.token_hex(16))
    idp.add_client(client_id, "client_secret_basic", secret=secret, grants=grants)
    return idp.identity(client_id, clientSecret=secret)


def dpop_key(tmp_path, sensitive, name: str = "dpop.pem"):
    key = ec.generate_private_key(ec.SECP256R1())
    return key, key_file(tmp_path, sensitive, key, name)


def userinfo_route(idp, name: str = "me") -> dict:
    """/me/... to Glewlwyd's OIDC plugin: /me/userinfo reaches /api/oidc/userinfo."""
    return oauth_route(f"{idp.issuer}", "/me/", name, stripPrefix=True, name=name)


def test_client_credentials_token_is_bound_to_the_relays_key(start_glewlwyd, start_relay, tmp_path, sensitive, upstream):
    idp = start_glewlwyd(dpop_nonce_counter=5)
    key, key_path = dpop_key(tmp_path, sensitive)
    svc = glewlwyd_client(idp, sensitive, "relay-dpop") | {"dpop": {"keyFile": key_path, "alg": "ES256"}}
    relay = start_relay([oauth_route(upstream, "/", "svc")], identities={"svc": svc}, args=("--log-level", "debug"))
    resp = relay.request("GET", "/x")
    assert resp.status == 200, resp.body[:500]
    [authorization] = resp.echo_headers("Authorization")
    scheme, _, token = authorization.partition(" ")
    sensitive.add("the token glewlwyd issued", token)
    assert scheme == "DPoP"
    claims = idp.access_token_claims(token)
    assert claims["cnf"] == {"jkt": thumbprint(key)}, "Glewlwyd bound the token to the key in dpop.keyFile"
    assert claims["client_id"] == "relay-dpop"
    # Glewlwyd demanded a nonce: one use_dpop_nonce answer, one retry, one token.
    log = relay.log()
    assert log.count("token endpoint asked for a DPoP nonce") == 1, log[-3000:]
    assert idp.issued_to("relay-dpop") == 1


def test_userinfo_checks_every_forwarded_proof_and_refreshes_prove_the_key(start_glewlwyd, start_relay, tmp_path,
                                                                           sensitive):
    """Glewlwyd's userinfo endpoint is the upstream: it checks htm, htu (its own URL: the relay
    stripped /me and added the /api/oidc base path), ath, the jti and its per-client nonce, which
    changes every 2 uses (the relay takes the new one from each answer, or replays once after a
    use_dpop_nonce 401). Refreshes (3 s tokens) carry proofs of the same generated key."""
    idp = start_glewlwyd(access_token_seconds=3, dpop_nonce_counter=2)
    svc = glewlwyd_client(idp, sensitive, "relay-user", grants=("password", "refresh_token")) | {
        "grant": "password", "username": USERNAME, "password": PASSWORD, "scope": f"openid {SCOPE}", "dpop": True}
    relay = start_relay([userinfo_route(idp)], identities={"me": svc}, args=("--log-level", "debug"))
    for _ in range(6):
        resp = relay.request("GET", "/me/userinfo?client=relay")
        assert resp.status == 200, resp.body[:500]
        assert json.loads(resp.body)["sub"], resp.body[:300]
    wait_until(lambda: idp.issued_for_user(USERNAME) >= 3, 15, "two refreshes at glewlwyd")
    resp = relay.request("POST", "/me/userinfo", body=b"")
    assert resp.status == 200, resp.body[:500]
    log = relay.log()
    assert log.count('"purpose":"refresh"') >= 2, "the relay did not refresh with the refresh token"
    assert "token request failed" not in log
    assert "upstream asked for a DPoP nonce" in log, "the userinfo endpoint's nonce challenge was replayed"


def test_glewlwyd_refusing_the_proof_surfaces_invalid_dpop_proof(start_glewlwyd, start_relay, tmp_path, sensitive,
                                                                 upstream):
    """A Glewlwyd that believes it is elsewhere (its external_url) refuses the relay's proofs,
    whose htu is the token URL the relay uses: invalid_dpop_proof reaches the client in the 502
    problem, and no token is issued."""
    idp = start_glewlwyd(external_url="https://idp.example.test")
    svc = glewlwyd_client(idp, sensitive, "relay-refused") | {"dpop": True}
    relay = start_relay([oauth_route(upstream, "/", "svc")], identities={"svc": svc})
    resp = relay.request("GET", "/x")
    sensitive.add_output("problem body", resp.body)
    doc = assert_oauth_problem(resp, 502, identity="svc", oauth_error="invalid_dpop_proof")
    assert "invalid_dpop_proof" in doc["detail"], doc
    assert idp.issued_to("relay-refused") == 0
    assert upstream.stats()["requests_served"] == 0


def filled_in(value, env: dict[str, str]):
    """`value` (from a Config/ example) with each `${NAME}` and `${NAME:-default}` replaced as the
    relay would: by env[NAME], else the default (a name without either fails the test)."""
    if isinstance(value, dict):
        return {key: filled_in(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [filled_in(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        assert name in env or default is not None, f"the example needs {name}"
        return env.get(name, default)
    return re.sub(r"\$\{([A-Z0-9_]+)(?::-([^}]*))?\}", one, value)


def test_the_dpop_example_config_gets_a_bound_token_from_glewlwyd(start_glewlwyd, start_relay, tmp_path, sensitive,
                                                                   upstream):
    """Config/dpop.json's identity and route as the file has them (private_key_jwt, a DPoP key file
    with ES256, stripPrefix to a base path), its ${...} filled in; only the scope is Glewlwyd's
    (api.read, the one scope its database has). Glewlwyd checks the assertion and the proof (and
    demands a nonce) and issues a DPoP-bound token, which the upstream receives with a proof of the
    same key. The relay of main before client_id went beside the assertion got a 500 from Glewlwyd
    here and answered the request 503."""
    example = json.loads((REPO / "Config" / "dpop.json").read_text())
    idp = start_glewlwyd(dpop_nonce_counter=5)
    client_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    idp.add_client("payments-relay", "private_key_jwt", public_key_pem=pem(client_key, False))
    dpop, dpop_path = dpop_key(tmp_path, sensitive)
    env = {"PAYMENTS_TOKEN_URL": idp.token_url, "PAYMENTS_CLIENT_ID": "payments-relay",
           "PAYMENTS_CLIENT_KEY_FILE": key_file(tmp_path, sensitive, client_key),
           "PAYMENTS_DPOP_KEY_FILE": dpop_path, "PAYMENTS_API_URL": f"{upstream.url}/v2"}
    identities = filled_in(example["identities"], env)
    assert set(identities) == {"payments"}
    payments = identities["payments"]
    assert (payments["clientAuth"], payments["dpop"]["alg"]) == ("private_key_jwt", "ES256"), payments
    assert "sendClientIdWithAssertion" not in payments, "the example relies on the default"
    payments["scope"] = SCOPE
    relay = start_relay(filled_in(example["routes"], env), identities=identities, args=("--log-level", "debug"))
    resp = relay.request("GET", "/payments/charges?limit=1")
    assert resp.status == 200, resp.body[:500]
    echo = resp.json()
    assert echo["target"] == "/v2/charges?limit=1"
    [authorization] = resp.echo_headers("Authorization")
    scheme, _, token = authorization.partition(" ")
    sensitive.add("the token glewlwyd issued", token)
    assert scheme == "DPoP"
    claims = idp.access_token_claims(token)
    assert claims["client_id"] == "payments-relay"
    assert claims["cnf"] == {"jkt": thumbprint(dpop)}, "Glewlwyd bound the token to the key in the DPoP key file"
    [proof] = resp.echo_headers("DPoP")
    ProofChecker().check(proof, "GET", f"{upstream.url}/v2/charges", access_token=token, jkt=thumbprint(dpop))
    assert idp.issued_to("payments-relay") == 1
    assert relay.log().count("token endpoint asked for a DPoP nonce") == 1
