"""The upstream's DPoP nonce is shared by the relay's workers (RFC 9449 §9): with two workers and
one keep-alive connection on each, requests taking turns, the DPoP resource server
(dpop_resource_server.py, every proof checked with jwcrypto) rotates its nonce. A nonce one
worker hears — in a `use_dpop_nonce` 401, or with a 200 when the server announces its rotation —
is in the other worker's next proof: one challenge per rotation, not one per worker. An answer
the server made before a rotation, read after the other worker heard the new nonce, does not put
the old nonce back. A `use_dpop_nonce` challenge naming a nonce newer than the one the other
worker heard meanwhile is replayed with the nonce it names.
"""

from __future__ import annotations

import threading

import pytest

from admin_client import start_with_admin
from deadlines import wait_until
from idp_relay import oauth_route

pytestmark = pytest.mark.oauth

REQUESTS = "oauth_relay_requests_total"
NONCE_RETRIES = "oauth_relay_dpop_nonce_retries_total"


def by_worker(admin) -> dict[str, float]:
    return admin.scrape().by(REQUESTS, "worker")


def one_connection_per_worker(relay, admin) -> list:
    """Keep-alive connections until each of the two workers holds one (the kernel spreads them
    with SO_REUSEPORT), each told apart by the worker whose request count its first request
    moved; the others are closed."""
    held: dict[str, object] = {}
    for attempt in range(40):
        before = by_worker(admin)
        conn = relay.connect()
        assert conn.request("GET", f"/warm/{attempt}").status == 200
        after = admin.wait_for(lambda m: sum(m.by(REQUESTS, "worker").values()) == sum(before.values()) + 1,
                               "the request counted").by(REQUESTS, "worker")
        worker = next(w for w, n in after.items() if n != before.get(w, 0))
        if worker in held:
            conn.close()
        else:
            held[worker] = conn
        if len(held) == 2:
            return list(held.values())
    pytest.fail("40 connections all went to one worker")


def take_turns(conns, count: int) -> None:
    for index in range(count):
        assert conns[index % 2].request("GET", f"/r/{index}").status == 200


def start(stub_idp, dpop_rs, start_relay):
    stub_idp.script(dpop={"nonce": None})
    dpop_rs.configure(nonce=True)
    relay, admin = start_with_admin(start_relay, [oauth_route(dpop_rs.url, "/", "svc")],
                                    identities={"svc": stub_idp.identity(dpop=True)}, workers=2)
    return admin, one_connection_per_worker(relay, admin)


@pytest.mark.parametrize("announced", [True, False], ids=["announced", "silent"])
def test_a_rotated_nonce_costs_one_challenge_not_one_per_worker(stub_idp, dpop_rs, start_relay, announced):
    admin, conns = start(stub_idp, dpop_rs, start_relay)
    try:
        rotate_every, count = 3, 13
        # A fresh nonce neither worker has heard, then a rotation every third good request.
        dpop_rs.configure(nonce=True, rotate_every=rotate_every, announce_rotation=announced)
        before = by_worker(admin)
        retries = admin.scrape().total(NONCE_RETRIES, server="upstream")
        take_turns(conns, count)
        records = dpop_rs.requests()
        assert len(dpop_rs.requests(status=200)) == count
        challenges = [r for r in records if r["status"] == 401]
        assert all(r["reason"].startswith("use_dpop_nonce") for r in challenges), challenges
        # Rotations that a later request runs into: after the 3rd, 6th, 9th and 12th good request.
        rotations = (count - 1) // rotate_every
        # The first nonce is learnt once for both workers; an announced rotation comes with the
        # answer that made it, a silent one is learnt from the one challenge it costs.
        expected = 1 if announced else 1 + rotations
        assert len(challenges) == expected, [(r["status"], r["nonce"] if r["status"] == 200 else r["reason"][:14])
                                             for r in records]
        after = admin.wait_for(lambda m: m.total(NONCE_RETRIES, server="upstream") == retries + expected,
                               "the nonce retries counted")
        moved = {w: n - before.get(w, 0) for w, n in after.by(REQUESTS, "worker").items()}
        assert sorted(moved.values()) == [count // 2, count - count // 2], f"both workers took turns: {moved}"
    finally:
        for conn in conns:
            conn.close()


def test_an_answer_made_before_a_rotation_does_not_bring_the_old_nonce_back(stub_idp, dpop_rs, start_relay):
    admin, (first, second) = start(stub_idp, dpop_rs, start_relay)
    try:
        # Every answer names the nonce in force when it was made, as many servers do.
        old = dpop_rs.configure(nonce=True, echo_nonce=True)
        take_turns([first, second], 2)
        assert len(dpop_rs.requests(status=401)) == 1, "the first nonce is learnt once for both workers"
        # The second worker's request is answered with the old nonce, and the answer held.
        held: list[int] = []
        waiting = threading.Thread(target=lambda: held.append(second.request("GET", "/held/1").status))
        waiting.start()
        wait_until(lambda: dpop_rs.requests(target="/held/1", status=200), 10, "the held request answered")
        # The nonce rotates; the first worker hears the new one (one challenge).
        new = dpop_rs.rotate()
        assert first.request("GET", "/after-rotation").status == 200
        assert [r["nonce"] for r in dpop_rs.requests(target="/after-rotation", status=200)] == [new]
        dpop_rs.release()
        waiting.join(timeout=10)
        assert held == [200]
        # The held answer named the old nonce: every next proof still carries the new one.
        challenges = len(dpop_rs.requests(status=401))
        take_turns([first, second], 4)
        records = dpop_rs.requests()
        assert len(dpop_rs.requests(status=401)) == challenges == 2, [(r["target"], r["status"], r.get("nonce"))
                                                                      for r in records]
        assert {r["nonce"] for r in records[-4:]} == {new} != {old}
    finally:
        for conn in (first, second):
            conn.close()


def test_a_challenge_is_replayed_with_its_own_nonce_whatever_the_workers_heard_since(stub_idp, dpop_rs, start_relay):
    admin, (first, second) = start(stub_idp, dpop_rs, start_relay)
    try:
        dpop_rs.configure(nonce=True)
        take_turns([first, second], 2)
        assert len(dpop_rs.requests(status=401)) == 1, "the first nonce is learnt once for both workers"
        # The nonce rotates silently: the second worker's request is challenged, the challenge held.
        dpop_rs.rotate()
        held: list[int] = []
        waiting = threading.Thread(target=lambda: held.append(second.request("GET", "/held-challenge/1").status))
        waiting.start()
        wait_until(lambda: dpop_rs.requests(target="/held-challenge/1", status=401), 10, "the held request challenged")
        # The first worker hears that nonce (its own challenge) and moves the shared one.
        assert first.request("GET", "/after-rotation").status == 200
        # The nonce rotates again; the held challenge names the newest one.
        newest = dpop_rs.rotate()
        dpop_rs.release()
        waiting.join(timeout=10)
        assert held == [200], "replayed with the challenge's nonce, not with the one the other worker heard"
        replays = dpop_rs.requests(target="/held-challenge/1")
        assert [(r["status"], r.get("nonce")) for r in replays[1:]] == [(200, newest)], replays
    finally:
        for conn in (first, second):
            conn.close()
