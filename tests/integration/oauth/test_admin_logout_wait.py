"""`DELETE /identities/NAME/token` with a shared store waits for Redis without holding up the
admin listener (issue 25's loose end), with the real binary, Debian's redis-server stopped with
SIGSTOP (it keeps its connections open and answers nothing) and the scripted token endpoint
(idp_stub.py): other admin requests are answered meanwhile, and the DELETE answers once Redis
resumes (204) or, when it does not, with a 503 `shared-store-unavailable` after the store's timeout.
"""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest

from admin_client import start_with_admin
from deadlines import scaled, wait_until
from idp_relay import oauth_route
from processes import STORE_KEY

pytestmark = pytest.mark.oauth


def store(redis, timeout_ms: int) -> dict:
    return {"redis": redis.url, "key": STORE_KEY, "timeoutMilliseconds": timeout_ms}


class Pending:
    """One admin request sent from a background thread; `answer` once it came back."""

    def __init__(self, admin, method: str, path: str):
        self.answer = None
        self.seconds = None
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, args=(admin, method, path), daemon=True)
        self.thread.start()

    def _run(self, admin, method, path):
        self.answer = admin.request(method, path)
        self.seconds = time.monotonic() - self.started


def fleet_of_one(redis, stub_idp, upstream, start_relay, timeout_ms: int):
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/echo/", "orders")],
                                    identities={"orders": stub_idp.identity()}, store=store(redis, timeout_ms),
                                    # A slowed-down run scales the store's timeout; `check` wants the
                                    # token wait at least twice it (30 s, the default, unscaled).
                                    limits={"tokenWaitSeconds": max(30, 2 * timeout_ms // 1000 + 1)})
    assert relay.request("GET", "/echo/x").status == 200
    # The entry written (the token is handed to requests before it is): the logout has one to remove.
    wait_until(lambda: redis.cli("--scan").strip() != "", 5, "the shared entry written")
    return relay, admin


def test_a_logout_waiting_for_redis_leaves_the_admin_listener_answering_and_completes_when_redis_resumes(
        redis, stub_idp, upstream, start_relay):
    relay, admin = fleet_of_one(redis, stub_idp, upstream, start_relay, timeout_ms=int(scaled(6000)))
    redis.send_signal(signal.SIGSTOP)
    delete = Pending(admin, "DELETE", "/identities/orders/token")
    try:
        # The removal waits for Redis; meanwhile the admin listener answers at once.
        for path in ("/healthz", "/metrics", "/identities"):
            began = time.monotonic()
            assert admin.request("GET", path).status == 200
            assert time.monotonic() - began < scaled(1), path
        assert delete.answer is None, "the DELETE was answered before Redis could remove the entry"
    finally:
        redis.send_signal(signal.SIGCONT)
    wait_until(lambda: delete.answer is not None, scaled(10), "the DELETE's answer")
    assert delete.answer.status == 204, delete.answer.body


def test_a_logout_redis_never_answers_gets_a_503_after_the_store_timeout(redis, stub_idp, upstream, start_relay):
    timeout_ms = int(scaled(1500))
    relay, admin = fleet_of_one(redis, stub_idp, upstream, start_relay, timeout_ms=timeout_ms)
    redis.send_signal(signal.SIGSTOP)
    delete = Pending(admin, "DELETE", "/identities/orders/token")
    began = time.monotonic()
    assert admin.request("GET", "/healthz").status == 200
    assert time.monotonic() - began < scaled(1)
    wait_until(lambda: delete.answer is not None, scaled(10), "the DELETE's answer")
    assert delete.answer.status == 503, delete.answer.body
    problem = json.loads(delete.answer.body)
    assert problem["type"].endswith("shared-store-unavailable"), problem
    assert "identity orders is logged out on this replica, but not removed from the shared token store" in problem["detail"], problem
    assert delete.seconds >= timeout_ms / 1000 * 0.9, delete.seconds
