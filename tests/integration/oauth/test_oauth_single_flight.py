"""Single flight: any number of concurrent requests on any worker cause exactly one token request,
counted at django-oauth-toolkit. The IdP holds token requests, so that all of them are inside the
relay while the one fetch is under way."""

import time
from collections import Counter

import pytest

from deadlines import scaled, wait_until
from idp_processes import sha256
from idp_relay import bearer, burst, oauth_route

pytestmark = pytest.mark.oauth

BURST = 500
WORKERS = 4


def fingerprints(answers) -> set[str]:
    statuses = Counter(a.status for a in answers)
    assert statuses == {200: len(answers)}, f"statuses {dict(statuses)}; first non-200: " + next(
        (repr(a.body[:300]) for a in answers if a.status != 200), "")
    return {sha256(bearer(a)) for a in answers}


def test_500_concurrent_requests_without_a_token_cause_one_token_request(django_idp, upstream, start_relay):
    django_idp.hold(int(scaled(1500)))
    relay = start_relay([oauth_route(upstream, "/", "orders")], workers=WORKERS,
                        identities={"orders": django_idp.identity("orders-cc")})
    injected = fingerprints(burst(relay, BURST, "/burst"))
    records = django_idp.token_requests()
    assert len(records) == 1
    assert injected == {records[0]["access_token_sha256"]}


def test_500_concurrent_requests_right_after_expiry_cause_one_token_request(start_django_idp, upstream, start_relay):
    lifetime, hold = 4, 3
    idp = start_django_idp(access_token_seconds=lifetime)
    relay = start_relay([oauth_route(upstream, "/", "orders")], workers=WORKERS,
                        identities={"orders": idp.identity("orders-cc")})
    first = sha256(bearer(relay.request("GET", "/first")))
    [issued] = idp.token_requests()
    assert issued["access_token_sha256"] == first
    # The next token request is answered `hold` seconds after it arrives. A refresh sent before
    # expiry at the latest lifetime/2 early (so, here, from 2 s on) is then answered after the
    # first token expired (> 4 s), with a token that is still valid however the relay counts its
    # lifetime (from sending or from receiving): the burst finds no valid token and one fetch in
    # flight. (A relay without early refresh fetches when the burst comes: one request as well.)
    idp.hold(int(scaled(hold * 1000)))
    expired_at = issued["answered"] + lifetime + 0.2
    wait_until(lambda: time.time() > expired_at, lifetime + 2, "the first token's expiry", interval=0.01)
    injected = fingerprints(burst(relay, BURST, "/burst"))
    records = idp.token_requests()
    assert len(records) == 2, f"{len(records)} token requests"
    assert injected == {records[1]["access_token_sha256"]}


def test_a_connection_whose_request_waited_for_the_token_serves_the_next_request(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "expires_in": 3600, "delay_ms": 300})
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": stub_idp.identity()})
    with relay.connect() as conn:
        first = sha256(bearer(conn.request("GET", "/first")))   # parked until the token arrives
        second = sha256(bearer(conn.request("GET", "/second")))
    assert first == second
    assert len(stub_idp.token_requests()) == 1
