"""The token thread when events cross a request to the IdP, with the real relay and the scripted stub
(a slow endpoint is a fault only a script produces): stopping while an IdP request is under way
(discovery, device authorization, revocation, a login's JWKS with the fleet's Redis lease held)
ends at once and gives the lease back; a logout during a refresh is not undone by the refresh's
answer, whose rotated refresh token is revoked too; a second tab's login during the first one's
code exchange completes; a refused refresh token keeps who logged in in the store; and in a fleet,
the lease covers a holder's DPoP nonce retry, so no other replica sends a token request meanwhile,
while tokens bound to a key one replica generated are never shared.
"""

from __future__ import annotations

import base64
import time

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from admin_client import log_records, start_with_admin, wait_for_log
from deadlines import scaled, wait_until
from idp_processes import sha256
from idp_relay import bearer, oauth_route
from login_relay import (ID_TOKEN_OK, RawBrowser, at_stub, browse, get, identity_view, start_login_relay, store_entries,
                         wait_for_state)
from key_files import key_file

pytestmark = pytest.mark.oauth

KEY = base64.b64encode(bytes(range(64, 96))).decode()
HELD_MS = 30_000  # an IdP request the stub holds for longer than any stop may take
STOPS_WITHIN = 3  # seconds from SIGTERM to the exit, at most


def log_in(relay, stub, sensitive) -> None:
    """A person's login in a RawBrowser, with the stub as the IdP and its authorization endpoint
    answering at once; the callback's answer must be the redirect back."""
    browser = RawBrowser(relay, sensitive)
    resp = browser.callback(at_stub(stub, browser.start_login("me", returns="/orders")))
    assert (resp.status, resp.header("location")) == (302, "/orders"), resp.body[:300]


def answered(stub, **match) -> list[dict]:
    return [r for r in stub.token_requests(**match) if r["answered"] is not None]


def assert_stops_at_once(relay) -> None:
    started = time.monotonic()
    assert relay.stop(timeout=STOPS_WITHIN) == 0
    assert time.monotonic() - started < scaled(STOPS_WITHIN)


# ---------------------------------------------------------------------------------------------
# Stopping while an IdP request is under way

def test_stopping_during_discovery_does_not_wait_for_the_idp(stub_idp, upstream, start_relay):
    stub_idp.script(discovery={"kind": "metadata", "delay_ms": HELD_MS})
    relay = start_relay([oauth_route(upstream, "/", "me")], identities={"me": stub_idp.login_identity()})
    wait_until(lambda: stub_idp.endpoint_requests(endpoint="discovery"), 5, "the discovery request at the stub")
    assert_stops_at_once(relay)


def test_stopping_during_a_device_authorization_does_not_wait_for_the_idp(stub_idp, upstream, start_relay):
    stub_idp.script(device={"kind": "device", "delay_ms": HELD_MS})
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "tv")], identities={"tv": stub_idp.login_identity("device_code")})
    wait_for_state(admin, "tv", "needs-login")
    assert admin.request("POST", "/identities/tv/login").status == 202
    wait_until(lambda: stub_idp.endpoint_requests(endpoint="device"), 5, "the device authorization at the stub")
    assert_stops_at_once(relay)


def test_stopping_during_a_logouts_revocation_does_not_wait_for_the_idp(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default=ID_TOKEN_OK)
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    log_in(relay, stub_idp, sensitive)
    wait_for_state(admin, "me", "valid")
    stub_idp.script(default=ID_TOKEN_OK, revoke={"kind": "raw", "status": 200, "delay_ms": HELD_MS})
    assert admin.request("DELETE", "/identities/me/token").status == 204
    wait_until(lambda: stub_idp.endpoint_requests(endpoint="revoke"), 5, "the revocation at the stub")
    assert_stops_at_once(relay)


def test_stopping_during_a_logins_jwks_fetch_ends_and_gives_the_shared_lease_back(stub_idp, upstream, start_relay,
                                                                                 sensitive, redis):
    """The code exchange holds the fleet's lease on the identity's entry while its ID token's keys
    are fetched: stopping cancels that fetch, ends the exchange and releases the lease (before,
    the lease stayed held, the Redis connections kept the token loop alive, and the relay hung)."""
    stub_idp.script(default=ID_TOKEN_OK, jwks={"kind": "jwks", "delay_ms": HELD_MS})
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()},
                                     store={"redis": redis.url, "key": KEY})
    log_in(relay, stub_idp, sensitive)
    wait_until(lambda: stub_idp.endpoint_requests(endpoint="jwks"), 5, "the JWKS request at the stub")
    assert [r["status"] for r in stub_idp.token_requests(grant_type="authorization_code")] == [200]
    assert any(k.endswith(":lease") for k in redis.cli("--scan").split()), "the exchange did not hold the lease"
    assert_stops_at_once(relay)
    assert not any(k.endswith(":lease") for k in redis.cli("--scan").split()), "the lease outlived the relay"


# ---------------------------------------------------------------------------------------------
# A logout during a refresh

def test_a_logout_during_a_refresh_is_not_undone_by_its_answer(stub_idp, upstream, start_relay, sensitive, tmp_path):
    stub_idp.script(default=ID_TOKEN_OK)
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    log_in(relay, stub_idp, sensitive)
    wait_for_state(admin, "me", "valid")
    [login] = stub_idp.token_requests(grant_type="authorization_code")
    stub_idp.script(default=ID_TOKEN_OK, by_grant={"refresh_token": {"kind": "token", "expires_in": 3600, "refresh_token": "new",
                                                                     "delay_ms": 2000}})
    assert admin.request("POST", "/identities/me/refresh").status in (200, 202, 204)
    wait_until(lambda: stub_idp.token_requests(grant_type="refresh_token"), 5, "the refresh at the stub")
    assert admin.request("DELETE", "/identities/me/token").status == 204
    wait_until(lambda: answered(stub_idp, grant_type="refresh_token"), 10, "the refresh's answer")
    [refresh] = stub_idp.token_requests(grant_type="refresh_token")
    rotated = refresh["issued"]["refresh_token"]
    # Both refresh tokens end revoked: the one the logout found, and the one the refresh brought.
    wait_until(lambda: len(stub_idp.endpoint_requests(endpoint="revoke")) == 2, 10, "two revocations")
    revoked = {sha256(dict(r["form"])["token"]) for r in stub_idp.endpoint_requests(endpoint="revoke")}
    assert revoked == {sha256(login["issued"]["refresh_token"]), sha256(rotated)}
    view = identity_view(admin, "me")
    assert view["state"] == "needs-login" and not view["hasRefreshToken"] and "loggedInAs" not in view, view
    assert store_entries(tmp_path) == [], "the refresh's answer went to the store after the logout"
    assert get(relay, "/orders").status == 401
    assert log_records(relay, "token dropped: the identity was logged out while it was fetched")


# ---------------------------------------------------------------------------------------------
# Two tabs

def test_a_second_tabs_login_during_the_first_ones_code_exchange_completes(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default=ID_TOKEN_OK)
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    first, second = RawBrowser(relay, sensitive), RawBrowser(relay, sensitive)
    first_callback = at_stub(stub_idp, first.start_login("me", returns="/orders"))
    second_callback = at_stub(stub_idp, second.start_login("me", returns="/orders"))
    stub_idp.script(by_grant={"authorization_code": {**ID_TOKEN_OK, "delay_ms": 1500}})
    assert first.callback(first_callback).status == 302
    wait_until(lambda: stub_idp.token_requests(grant_type="authorization_code"), 5, "the first exchange at the stub")
    assert second.callback(second_callback).status == 302
    wait_until(lambda: len(answered(stub_idp, grant_type="authorization_code")) == 2, 10, "both exchanges")
    exchanges = stub_idp.token_requests(grant_type="authorization_code")
    assert [r["status"] for r in exchanges] == [200, 200]
    view = wait_for_state(admin, "me", "valid")
    assert view["loggedInAs"] == "stub-person"
    # The route carries the token of the login that finished last.
    assert sha256(bearer(browse(relay, "/orders", second.cookies))) == sha256(exchanges[1]["issued"]["access_token"])
    assert not log_records(relay, "ID token refused")


# ---------------------------------------------------------------------------------------------
# Who logged in survives a refused refresh token

def test_a_refused_refresh_token_keeps_who_logged_in_in_the_store(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default=ID_TOKEN_OK)
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    log_in(relay, stub_idp, sensitive)
    wait_for_state(admin, "me", "valid")
    stub_idp.script(default=ID_TOKEN_OK, by_grant={"refresh_token": {"kind": "oauth_error", "status": 400, "error": "invalid_grant"}})
    admin.request("POST", "/identities/me/refresh")
    wait_until(lambda: not identity_view(admin, "me")["hasRefreshToken"], 10, "the refused refresh token dropped")
    assert relay.stop() == 0
    again, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    view = wait_for_state(admin, "me", "valid")
    assert view.get("loggedInAs") == "stub-person", view


# ---------------------------------------------------------------------------------------------
# The fleet: the lease across a DPoP nonce retry, and generated DPoP keys

def replica(start_relay, upstream, identity: dict, redis, **top):
    """A relay of the fleet (identity `svc` on `/`, the shared store in `redis`), with `.admin`."""
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "svc")], identities={"svc": identity},
                                    store={"redis": redis.url, "key": KEY}, **top)
    relay.admin = admin
    return relay


def has_token(relay) -> bool:
    return identity_view(relay.admin, "svc")["hasValidToken"]


def test_replicas_with_generated_dpop_keys_share_no_tokens(stub_idp, upstream, start_relay, redis):
    """A token bound to the key replica A generated is useless to B (its proofs carry B's key):
    each replica fetches its own, and nothing of them goes to Redis."""
    stub_idp.script(default={"kind": "token", "token_type": "DPoP", "expires_in": 3600})
    identity = stub_idp.identity(dpop=True)
    first = replica(start_relay, upstream, identity, redis)
    wait_until(lambda: has_token(first), 10, "A's token")
    second = replica(start_relay, upstream, identity, redis)
    wait_until(lambda: has_token(second), 10, "B's token")
    issued = [r["issued"]["access_token"] for r in stub_idp.token_requests()]
    assert len(issued) == 2 and issued[0] != issued[1], "B took the token bound to A's key"
    assert redis.cli("--scan").split() == [], "a token bound to a generated key went to Redis"

def test_the_lease_covers_the_holders_dpop_nonce_retry(stub_idp, upstream, start_relay, sensitive, tmp_path, redis):
    """Replica A's token request is answered use_dpop_nonce after 1.5 s and its retry after 1.5 s
    more; one request may take 2.5 s (connect + response timeouts). Replica B, waiting for A's
    lease, must take A's token, not send its own when a lease sized for one request runs out."""
    key = key_file(tmp_path, sensitive, ec.generate_private_key(ec.SECP256R1()), "dpop.pem")
    challenge = {"kind": "oauth_error", "status": 400, "error": "use_dpop_nonce", "headers": [["DPoP-Nonce", "n-1"]],
                 "delay_ms": 1500}
    stub_idp.script(challenge, {"kind": "token", "token_type": "DPoP", "expires_in": 3600, "delay_ms": 1500},
                    default={"kind": "token", "token_type": "DPoP", "expires_in": 3600})
    identity = stub_idp.identity(dpop={"keyFile": key})
    limits = {"upstreamConnectTimeoutSeconds": 0.5, "upstreamResponseTimeoutSeconds": 2}
    fleet = []
    for _ in range(2):
        fleet.append(replica(start_relay, upstream, identity, redis, limits=limits))
        # B starts once A holds the lease and its first request is at the stub.
        wait_until(lambda: stub_idp.token_requests(), 5, "A's token request")
    wait_until(lambda: all(has_token(r) for r in fleet), 10, "a token on both replicas")
    requests = stub_idp.token_requests()
    assert [r["status"] for r in requests] == [400, 200], "another replica sent a token request while A still held the lease"
    wait_for_log(fleet[1], "token read from shared store", 1)


def test_a_logout_of_generated_dpop_key_tokens_does_not_go_through_redis(stub_idp, upstream, start_relay, redis):
    """Those tokens never went to Redis, so their logout is this replica's alone: answered 204
    with Redis gone (not 503 shared-store-unavailable), and nothing about it logged."""
    stub_idp.script(default={"kind": "token", "token_type": "DPoP", "expires_in": 3600})
    relay = replica(start_relay, upstream, stub_idp.identity(dpop=True), redis)
    wait_until(lambda: has_token(relay), 10, "the replica's token")
    redis.sigkill()
    answer = relay.admin.request("DELETE", "/identities/svc/token")
    assert answer.status == 204, answer.body
    assert not log_records(relay, "logout not shared")
