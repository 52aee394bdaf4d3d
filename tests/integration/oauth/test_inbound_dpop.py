"""routes[].inbound with DPoP-bound callers (RFC 9449 §7.1): `Authorization: DPoP <token>` with one
`DPoP` proof, the proof checked per request against the request the relay received (method, the
URI the client used, the token's hash, the key the token's `cnf.jkt` names, a `jti` never seen
within its window), before anything reaches the upstream.

The access tokens are JWTs this test signs with its own issuer (test_inbound_jwt.TestIssuer, whose
JWKS the relay reads), bound to a P-256 key of the test's; the proofs are signed here with
jwcrypto (a JOSE implementation the relay did not write). Every token and proof is registered as
sensitive: none may show in a relay log (conftest.py).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time

import pytest
from jwcrypto import jwk, jws

from dpop_proofs import access_token_hash, b64url
from http_client import RawConnection, assert_problem
from processes import route
from test_inbound_jwt import AUDIENCE, TestIssuer, issuer, segment  # noqa: F401 (issuer: the fixture)

pytestmark = pytest.mark.oauth

ALGS = "ES256 RS256 PS256 EdDSA"
PATH = "/orders/42"


def proof(key: jwk.JWK, method: str, url: str, token: str, alg: str = "ES256", **changes) -> str:
    """A DPoP proof signed with `key`; `changes` replace claims (None removes one)."""
    claims = {"jti": secrets.token_urlsafe(16), "htm": method, "htu": url, "iat": int(time.time()), "ath": access_token_hash(token)}
    for name, value in changes.items():
        if value is None:
            claims.pop(name)
        else:
            claims[name] = value
    signed = jws.JWS(json.dumps(claims))
    signed.add_signature(key, alg=alg, protected=json.dumps({"typ": "dpop+jwt", "alg": alg, "jwk": key.export_public(as_dict=True)}))
    return signed.serialize(compact=True)


def unsigned_proof(key: jwk.JWK, url: str, token: str, alg: str) -> str:
    """`alg: none`, or HS256 keyed with the bytes of the header's public key."""
    header = {"typ": "dpop+jwt", "alg": alg, "jwk": key.export_public(as_dict=True)}
    claims = {"jti": secrets.token_urlsafe(16), "htm": "GET", "htu": url, "iat": int(time.time()), "ath": access_token_hash(token)}
    signing_input = f"{segment(header)}.{segment(claims)}"
    if alg == "none":
        return signing_input + "."
    secret = json.dumps(key.export_public(as_dict=True)).encode()
    return f"{signing_input}.{b64url(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())}"


@pytest.fixture
def relay_and_url(issuer, upstream, start_relay):  # noqa: F811 (the imported fixture)
    rules = {"issuer": issuer.url, "audiences": [AUDIENCE], "jwksUrl": f"{issuer.url}/jwks", "claimHeaders": {"sub": "X-Forwarded-User"}}
    relay = start_relay([route(upstream, "/", name="dpop", inbound=rules),
                         route(upstream, "/required/", name="required", inbound={**rules, "dpop": "required"})])
    return relay, f"http://{relay.host}:{relay.port}"


def get(conn, relay, headers, target: str = PATH, method: str = "GET"):
    return conn.request(method, target, headers=headers, host=f"{relay.host}:{relay.port}")


def test_a_bound_token_with_a_valid_proof_is_admitted_and_the_proof_not_forwarded(issuer, relay_and_url, upstream, sensitive):  # noqa: F811
    relay, origin = relay_and_url
    key = jwk.JWK.generate(kty="EC", crv="P-256")
    token = sensitive.add("a DPoP-bound token", issuer.sign(issuer.claims(cnf={"jkt": key.thumbprint()})))
    with RawConnection(relay.host, relay.port) as conn:
        for _ in range(3):
            dpop = sensitive.add("a proof", proof(key, "GET", origin + PATH, token))
            resp = get(conn, relay, [("Authorization", f"DPoP {token}"), ("DPoP", dpop)], target=PATH + "?page=2")
            assert resp.status == 200, resp.body
            assert resp.echo_headers("X-Forwarded-User") == ["alice"]
            assert resp.echo_headers("DPoP") == [], "the caller's proof is the relay's, not the upstream's"
        # A token bound to no key still goes as Bearer on a route that allows both.
        plain = sensitive.add("an unbound token", issuer.sign())
        assert get(conn, relay, [("Authorization", f"Bearer {plain}")]).status == 200
        resp = get(conn, relay, [("Authorization", f"Bearer {plain}")], target="/required/x")
        assert_problem(resp, 401, route="required")
        assert resp.header_all("www-authenticate") == [
            f'DPoP error="invalid_token", error_description="this route takes DPoP-bound tokens only '
            f'(Authorization: DPoP with a DPoP proof)", algs="{ALGS}"']
        resp = get(conn, relay, [])
        assert resp.header_all("www-authenticate") == ['Bearer realm="oauth-relay"', f'DPoP algs="{ALGS}"']


def test_each_bad_presentation_is_refused_before_the_upstream(issuer, relay_and_url, upstream, sensitive):  # noqa: F811
    relay, origin = relay_and_url
    url = origin + PATH
    key = jwk.JWK.generate(kty="EC", crv="P-256")
    other = jwk.JWK.generate(kty="EC", crv="P-256")
    token = sensitive.add("a DPoP-bound token", issuer.sign(issuer.claims(cnf={"jkt": key.thumbprint()})))
    auth = ("Authorization", f"DPoP {token}")
    replayed = sensitive.add("a proof", proof(key, "GET", url, token))
    now = int(time.time())
    cases = {
        "no proof": ([auth], "invalid_dpop_proof", "the request has no DPoP proof (one DPoP header field)"),
        "two DPoP headers": ([auth, ("DPoP", proof(key, "GET", url, token)), ("DPoP", proof(key, "GET", url, token))],
                             "invalid_dpop_proof", "the request has more than one DPoP header field"),
        "wrong htm": ([auth, ("DPoP", proof(key, "POST", url, token))], "invalid_dpop_proof",
                      "the DPoP proof's htm does not match the request method"),
        "wrong htu": ([auth, ("DPoP", proof(key, "GET", origin + "/orders/43", token))], "invalid_dpop_proof",
                      "the DPoP proof's htu does not match the request URI"),
        "another scheme in htu": ([auth, ("DPoP", proof(key, "GET", url.replace("http://", "https://"), token))], "invalid_dpop_proof",
                                  "the DPoP proof's htu does not match the request URI"),
        "a query in htu": ([auth, ("DPoP", proof(key, "GET", url + "?page=2", token))], "invalid_dpop_proof",
                           "the DPoP proof's htu has a query or a fragment"),
        "replayed jti": ([auth, ("DPoP", replayed)], "invalid_dpop_proof", "the DPoP proof was used before (jti)"),
        "stale iat": ([auth, ("DPoP", proof(key, "GET", url, token, iat=now - 120))], "invalid_dpop_proof",
                      "the DPoP proof was issued too long ago (iat)"),
        "iat ahead": ([auth, ("DPoP", proof(key, "GET", url, token, iat=now + 120))], "invalid_dpop_proof",
                      "the DPoP proof was issued in the future (iat)"),
        "signed by another key (jkt mismatch)": ([auth, ("DPoP", proof(other, "GET", url, token))], "invalid_token",
                                                 "the DPoP proof's key is not the key the token is bound to"),
        "ath mismatch": ([auth, ("DPoP", proof(key, "GET", url, token, ath=access_token_hash("another token")))], "invalid_dpop_proof",
                         "the DPoP proof's ath does not match the access token"),
        "no ath": ([auth, ("DPoP", proof(key, "GET", url, token, ath=None))], "invalid_dpop_proof", "the DPoP proof has no ath claim"),
        "alg none": ([auth, ("DPoP", unsigned_proof(key, url, token, "none"))], "invalid_dpop_proof",
                     "the DPoP proof's alg is not an allowed asymmetric algorithm for its key"),
        "HS256": ([auth, ("DPoP", unsigned_proof(key, url, token, "HS256"))], "invalid_dpop_proof",
                  "the DPoP proof's alg is not an allowed asymmetric algorithm for its key"),
        "bound token as Bearer": ([("Authorization", f"Bearer {token}")], "invalid_token",
                                  "the token is DPoP-bound but came without a DPoP proof"),
    }
    with RawConnection(relay.host, relay.port) as conn:
        assert get(conn, relay, [auth, ("DPoP", replayed)]).status == 200
        seen = upstream.stats()["requests_started"]
        for label, (headers, error, description) in cases.items():
            for name, value in headers:
                sensitive.add(f"{label}: {name}", value)
            resp = get(conn, relay, headers)
            doc = assert_problem(resp, 401, route="dpop")
            assert doc["detail"] == description, (label, doc)
            assert resp.header_all("www-authenticate") == [
                f'DPoP error="{error}", error_description="{description}", algs="{ALGS}"'], label
        assert upstream.stats()["requests_started"] == seen, "a refused request reached the upstream"
