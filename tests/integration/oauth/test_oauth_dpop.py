"""DPoP (RFC 9449) with the scripted stub IdP (token requests: proofs, nonce challenges, what a
second challenge or a refused proof does) and the DPoP resource server (dpop_resource_server.py),
which checks every forwarded proof with jwcrypto: signature with the header's jwk, the key the
token is bound to (its cnf.jkt), htm, htu (the URL the upstream receives: stripPrefix and the
base path applied), ath, an unseen jti, and its nonce (a use_dpop_nonce 401 on the first call).
The relay's unit tests cover the same rules without sockets; here the proofs are checked by a
JOSE library the relay did not write.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import time

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from admin_client import start_with_admin
from deadlines import scaled, wait_until
from dpop_proofs import access_token_hash, unverified_claims
from http_client import RawConnection
from idp_relay import assert_oauth_problem, oauth_route
from key_files import key_file, thumbprint
from processes import LOOPBACK, STORE_KEY, run_check, run_cli, write_config

pytestmark = pytest.mark.oauth

NONCE_RETRIES = "oauth_relay_dpop_nonce_retries_total"


def dpop_identity(stub, **options) -> dict:
    return stub.identity(dpop=options.pop("dpop", True), **options)


def proofs(stub) -> list[dict]:
    """The DPoP outcome of every token request the stub received (verified header and claims, or why not)."""
    return [r.get("dpop", {}) for r in stub.token_requests()]


def rs_route(rs, prefix: str = "/", base: str = "", **options) -> dict:
    return oauth_route(rs.url + base, prefix, "svc", **options)


def served(rs) -> list[dict]:
    return rs.requests(status=200)


# ---------------------------------------------------------------------------------------------
# Token requests

def test_token_requests_carry_a_proof_and_one_nonce_challenge_is_answered(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "expires_in": 2}, dpop={"nonce": "n-1", "rotate_every": 1})
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "svc")], identities={"svc": dpop_identity(stub_idp)})
    assert relay.request("GET", "/x").status == 200
    wait_until(lambda: len(stub_idp.token_requests()) >= 4, 10, "two refreshes")
    records = stub_idp.token_requests()
    # The first proof had no nonce: 400 use_dpop_nonce, then the retry with it. Every later request
    # used the nonce the previous success brought (rotate_every 1): no further challenge.
    assert [r["status"] for r in records[:4]] == [400, 200, 200, 200], [r.get("dpop") for r in records]
    assert records[0]["kind"] == "use_dpop_nonce"
    verified = [r["dpop"] for r in records[1:4]]
    assert verified[0]["claims"]["nonce"] == "n-1"
    assert {v["claims"]["htm"] for v in verified} == {"POST"}
    assert {v["claims"]["htu"] for v in verified} == {stub_idp.token_url}
    assert len({v["header"]["thumbprint"] for v in verified}) == 1, "one key for every token request"
    assert all("ath" not in v["claims"] for v in verified)
    assert len({v["claims"]["jti"] for v in verified}) == 3
    assert admin.scrape().total(NONCE_RETRIES, identity="svc", server="token_endpoint") == 1


def test_a_second_nonce_challenge_is_not_retried_again(stub_idp, upstream, start_relay):
    challenge = {"kind": "oauth_error", "status": 400, "error": "use_dpop_nonce", "headers": [["DPoP-Nonce", "n-x"]]}
    stub_idp.script(challenge, challenge, challenge, default=challenge)
    relay = start_relay([oauth_route(upstream, "/", "svc")], identities={"svc": dpop_identity(stub_idp)})
    doc = assert_oauth_problem(relay.request("GET", "/x"), 502, identity="svc", oauth_error="use_dpop_nonce")
    assert "use_dpop_nonce" in doc["detail"]
    # One retry, then backoff (at least half a second), not a loop of retries: the next token
    # request is the fetch after the backoff.
    records = wait_until(lambda: (r := stub_idp.token_requests())[2:] and r, 10, "the fetch after the backoff")
    assert records[2]["time"] - records[1]["answered"] >= 0.4, "a third request at once"
    second = [v for k, v in records[1]["headers"] if k.lower() == "dpop"]
    assert len(second) == 1 and unverified_claims(second[0])["nonce"] == "n-x"


def test_the_idp_refusing_the_proof_is_a_502_naming_invalid_dpop_proof(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default={"kind": "oauth_error", "status": 400, "error": "invalid_dpop_proof",
                             "error_description": "Invalid DPoP"})
    relay = start_relay([oauth_route(upstream, "/", "svc")], identities={"svc": dpop_identity(stub_idp)})
    resp = relay.request("GET", "/x")
    sensitive.add_output("problem body", resp.body)
    doc = assert_oauth_problem(resp, 502, identity="svc", oauth_error="invalid_dpop_proof")
    assert doc["oauthErrorDescription"] == "Invalid DPoP"
    assert upstream.stats()["requests_served"] == 0


def test_a_bearer_token_of_a_dpop_identity_goes_as_bearer_without_a_proof(stub_idp, upstream, start_relay):
    """An IdP that does not bind (token_type Bearer) gets the proof and ignores it: the token goes
    as Bearer, and the client's own DPoP header does not go along."""
    stub_idp.script(default={"kind": "token", "expires_in": 3600, "token_type": "Bearer"})
    relay = start_relay([oauth_route(upstream, "/", "svc")], identities={"svc": dpop_identity(stub_idp)})
    resp = relay.request("GET", "/x", headers=[("DPoP", "client-proof")])
    assert resp.status == 200
    [authorization] = resp.echo_headers("Authorization")
    assert authorization.startswith("Bearer ")
    assert resp.echo_headers("DPoP") == []
    assert len([v for k, v in stub_idp.token_requests()[0]["headers"] if k.lower() == "dpop"]) == 1


def test_a_dpop_token_for_an_identity_without_dpop_is_refused(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "expires_in": 3600, "token_type": "DPoP"})
    relay = start_relay([oauth_route(upstream, "/", "svc")], identities={"svc": stub_idp.identity()})
    doc = assert_oauth_problem(relay.request("GET", "/x"), 502, identity="svc")
    assert "token_type DPoP, but the identity has no dpop key" in doc["detail"]


# ---------------------------------------------------------------------------------------------
# Forwarded requests

def test_a_nonce_challenge_upstream_is_replayed_with_the_same_token(stub_idp, dpop_rs, start_relay):
    stub_idp.script(dpop={"nonce": None})
    nonce = dpop_rs.configure(nonce=True)
    relay, admin = start_with_admin(start_relay, [rs_route(dpop_rs)], identities={"svc": dpop_identity(stub_idp)})
    resp = relay.request("GET", "/orders/1?page=2")
    assert resp.status == 200, resp.body[:400]
    records = dpop_rs.requests()
    assert [r["status"] for r in records] == [401, 200], records
    assert records[0]["reason"].startswith("use_dpop_nonce")
    assert records[1]["nonce"] == nonce
    assert records[1]["htu"] == f"{dpop_rs.url}/orders/1"
    assert len(stub_idp.token_requests()) == 1, "the token was kept: a nonce challenge is no refusal"
    metrics = admin.wait_for(lambda m: m.total(NONCE_RETRIES, server="upstream") == 1, "the upstream nonce retry counted")
    assert metrics.total(NONCE_RETRIES, identity="svc", server="token_endpoint") == 0


def test_htu_is_the_url_the_upstream_receives(stub_idp, dpop_rs, start_relay):
    stub_idp.script(dpop={"nonce": None})
    dpop_rs.configure(nonce=False)
    relay = start_relay([rs_route(dpop_rs, "/api/", base="/v1/base", stripPrefix=True)],
                        identities={"svc": dpop_identity(stub_idp)})
    for target, path in [("/api/orders/7?x=1&y=%20", "/v1/base/orders/7"), ("/api/", "/v1/base/"), ("/api/a%7Eb", "/v1/base/a%7Eb")]:
        resp = relay.request("GET", target)
        assert resp.status == 200, (target, resp.body[:400])
        assert resp.json()["htu"] == f"{dpop_rs.url}{path}", target


def test_a_request_body_is_sent_again_after_a_nonce_challenge(stub_idp, dpop_rs, start_relay):
    stub_idp.script(dpop={"nonce": None})
    dpop_rs.configure(nonce=True)
    relay = start_relay([rs_route(dpop_rs, retryOnStatus=[])], identities={"svc": dpop_identity(stub_idp)})
    body = bytes(range(256)) * 40
    resp = relay.request("POST", "/upload", headers=[("Content-Type", "application/octet-stream")], body=body)
    assert resp.status == 200, resp.body[:400]
    records = dpop_rs.requests()
    assert [r["status"] for r in records] == [401, 200]
    assert {r["body_sha256"] for r in records} == {hashlib.sha256(body).hexdigest()}
    assert [r["method"] for r in records] == ["POST", "POST"]


def test_rotating_nonces_are_followed_from_each_answer(stub_idp, dpop_rs, start_relay):
    stub_idp.script(dpop={"nonce": None})
    dpop_rs.configure(nonce=True, rotate_every=2)
    relay = start_relay([rs_route(dpop_rs)], identities={"svc": dpop_identity(stub_idp)})
    with relay.connect() as conn:
        for index in range(10):
            assert conn.request("GET", f"/r/{index}").status == 200
    statuses = [r["status"] for r in dpop_rs.requests()]
    assert statuses.count(401) == 1, f"only the first request lacked the nonce: {statuses}"
    assert len(served(dpop_rs)) == 10


def test_a_refused_dpop_token_is_fetched_anew(stub_idp, dpop_rs, start_relay):
    """A 401 that is no nonce challenge (here invalid_token, after a good proof) is a refused
    token: dropped, fetched anew, the request replayed with the new token and a new proof."""
    stub_idp.script(dpop={"nonce": None})
    dpop_rs.configure(nonce=False, refuse_first_token=True)
    relay = start_relay([rs_route(dpop_rs)], identities={"svc": dpop_identity(stub_idp)})
    resp = relay.request("GET", "/x")
    assert resp.status == 200, resp.body[:400]
    records = dpop_rs.requests()
    assert [r["status"] for r in records] == [401, 200]
    assert records[0]["reason"].startswith("invalid_token")
    assert len(stub_idp.token_requests()) == 2, "the refused token was replaced"


def test_ten_thousand_forwarded_proofs_all_verify_with_unique_jtis(stub_idp, dpop_rs, start_relay):
    """Two workers, eight keep-alive connections: every proof verifies (signature, the bound key,
    htm, htu, ath, nonce) at the resource server, and no jti repeats."""
    stub_idp.script(dpop={"nonce": None})
    dpop_rs.configure(nonce=True, rotate_every=1000)
    relay = start_relay([rs_route(dpop_rs)], identities={"svc": dpop_identity(stub_idp)}, workers=2, accessLog=False)
    total, connections = 10_000, 8
    deadline = time.monotonic() + scaled(60)

    def drive(worker: int) -> list[int]:
        statuses = []
        with RawConnection(relay.host, relay.port, timeout=10) as conn:
            for index in range(worker, total, connections):
                assert time.monotonic() < deadline, "the load did not finish in time"
                statuses.append(conn.request("GET", f"/load/{index}?w={worker}").status)
        return statuses

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(connections) as pool:
        statuses = [s for part in pool.map(drive, range(connections)) for s in part]
    elapsed = time.monotonic() - started
    assert statuses == [200] * total
    records = dpop_rs.requests()
    good = [r for r in records if r["status"] == 200]
    assert len(good) == total
    assert len({r["jti"] for r in good}) == total, "a jti repeated"
    challenges = [r for r in records if r["status"] == 401]
    assert all(r["reason"].startswith("use_dpop_nonce") for r in challenges), challenges[:3]
    # At each nonce (the first, and each rotation) the requests already on their way with the old
    # one are challenged: at most one per connection, each replayed once.
    assert len(challenges) <= connections * (1 + total // 1000), len(challenges)
    assert {r["htu"] for r in good[:5]} <= {f"{dpop_rs.url}/load/{i}" for i in range(total)}
    print(f"10,000 proofs verified in {elapsed:.1f}s")


# ---------------------------------------------------------------------------------------------
# Keys, the store, check

def test_a_key_file_signs_every_proof_and_its_tokens_survive_a_restart(stub_idp, dpop_rs, start_relay, tmp_path,
                                                                       sensitive):
    key = ec.generate_private_key(ec.SECP256R1())
    path = key_file(tmp_path, sensitive, key, "dpop.pem")
    expected = thumbprint(key)
    stub_idp.script(dpop={"nonce": None})
    dpop_rs.configure(nonce=False)
    store = {"path": str(tmp_path / "store"), "key": STORE_KEY}
    identity = dpop_identity(stub_idp, dpop={"keyFile": path})
    first = start_relay([rs_route(dpop_rs)], identities={"svc": identity}, store=store)
    assert first.request("GET", "/a").status == 200
    assert first.stop() == 0
    second = start_relay([rs_route(dpop_rs)], identities={"svc": identity}, store=store)
    assert second.request("GET", "/b").status == 200
    assert len(stub_idp.token_requests()) == 1, "the stored DPoP token was used after the restart"
    assert {r["thumbprint"] for r in served(dpop_rs)} == {expected}
    assert {r["dpop"]["header"]["thumbprint"] for r in stub_idp.token_requests()} == {expected}


def test_a_generated_key_keeps_its_tokens_out_of_the_store(stub_idp, dpop_rs, start_relay, tmp_path):
    stub_idp.script(dpop={"nonce": None})
    dpop_rs.configure(nonce=False)
    store = {"path": str(tmp_path / "store"), "key": STORE_KEY}
    first = start_relay([rs_route(dpop_rs)], identities={"svc": dpop_identity(stub_idp)}, store=store)
    assert first.request("GET", "/a").status == 200
    assert first.stop() == 0
    assert not list((tmp_path / "store").glob("identity-svc.*")), "a token bound to a per-process key was stored"
    second = start_relay([rs_route(dpop_rs)], identities={"svc": dpop_identity(stub_idp)}, store=store)
    assert second.request("GET", "/b").status == 200
    assert len(stub_idp.token_requests()) == 2, "the new process fetched a token for its own key"
    assert len({r["thumbprint"] for r in served(dpop_rs)}) == 2


def check(tmp_path, sensitive, identity: dict, routes=None) -> tuple[int, str]:
    code, out = run_check(tmp_path, {"identities": {"svc": {"tokenUrl": "https://idp.example.test/token", "clientId": "svc",
                                                             "clientSecret": "s3cret-value", **identity}},
                                     "routes": routes or []})
    sensitive.add_output("oauth-relay check output", out)
    return code, out


def test_check_validates_dpop_keys_without_printing_them(tmp_path, sensitive):
    ec_path = key_file(tmp_path, sensitive, ec.generate_private_key(ec.SECP256R1()), "ec.pem")
    rsa_path = key_file(tmp_path, sensitive, rsa.generate_private_key(65537, 2048), "rsa.pem")
    (tmp_path / "junk.pem").write_text("not a key\n")
    assert check(tmp_path, sensitive, {"dpop": {"keyFile": ec_path}})[0] == 0
    assert check(tmp_path, sensitive, {"dpop": {"keyFile": rsa_path, "alg": "PS256"}})[0] == 0
    cases = [
        ({"dpop": {"keyFile": ec_path, "alg": "PS256"}}, "$.identities.svc.dpop.alg: alg PS256 does not fit the EC P-256 key"),
        ({"dpop": {"keyFile": rsa_path, "alg": "ES256"}}, "$.identities.svc.dpop.alg: alg ES256 does not fit the RSA 2048 key"),
        ({"dpop": {"keyFile": str(tmp_path / "junk.pem")}}, "$.identities.svc.dpop.keyFile: not a usable PEM private key"),
        ({"dpop": {"keyFile": str(tmp_path / "absent.pem")}}, "$.identities.svc.dpop.keyFile: no such file"),
        ({"dpop": {"alg": "RS256"}}, "$.identities.svc.dpop.alg: RS256 needs an RSA keyFile"),
        ({"dpop": {"alg": "HS256"}}, "$.identities.svc.dpop.alg: expected one of ES256, PS256, RS256, EdDSA"),
    ]
    for identity, message in cases:
        code, out = check(tmp_path, sensitive, identity)
        assert code == 1 and message in out, out
        assert "PRIVATE KEY" not in out
    code, out = check(tmp_path, sensitive, {"dpop": True},
                      routes=[{"upstream": "https://api.example.test", "identity": "svc", "inject": {"query": "access_token"}}])
    assert code == 1 and "$.routes[0].inject: identity svc uses DPoP" in out, out


def test_the_token_command_says_a_dpop_token_needs_proofs(stub_idp, tmp_path, sensitive):
    stub_idp.script(dpop={"nonce": None})
    path = write_config(tmp_path / "token.json", {"identities": {"svc": dpop_identity(stub_idp)}})
    result = run_cli("token", "--config", str(path), "svc")
    sensitive.add_output("oauth-relay token stderr", result.stderr)
    assert result.returncode == 0, result.stderr
    sensitive.add("the printed token", result.stdout.strip())
    assert "DPoP-bound" in result.stderr and "a key this command generated" in result.stderr
    assert unverified_claims(result.stdout.strip())["cnf"]["jkt"]


def test_ath_is_the_hash_of_the_injected_token(stub_idp, upstream, start_relay):
    """What the upstream receives, read directly: Authorization: DPoP <token> and one DPoP proof whose
    ath hashes that token (the echo upstream checks nothing)."""
    stub_idp.script(dpop={"nonce": None})
    relay = start_relay([oauth_route(upstream, "/", "svc")], identities={"svc": dpop_identity(stub_idp)})
    resp = relay.request("GET", "/x", headers=[("DPoP", "client-proof"), ("Authorization", "Bearer client")])
    [authorization] = resp.echo_headers("Authorization")
    scheme, _, token = authorization.partition(" ")
    assert scheme == "DPoP"
    [proof] = resp.echo_headers("DPoP")
    claims = unverified_claims(proof)
    assert claims["ath"] == access_token_hash(token)
    assert claims["htu"] == f"{upstream.url}/x"
    assert claims["htm"] == "GET"
    assert LOOPBACK in claims["htu"]
