"""`store.timeoutMilliseconds` beside `limits.tokenWaitSeconds` (issue 25's loose end), with the
real binary, Debian's redis-server stopped with SIGSTOP (it keeps its connections open and answers
nothing) and the scripted token endpoint (idp_stub.py): a Redis timeout above half the token wait
is refused by `check` (naming both values), and with one at that bound, the first request after a
start still gets its token while Redis hangs — the fetch gives Redis up in time to ask the token
endpoint (not a 503 or a 502 from the token wait running out first).
"""

from __future__ import annotations

import signal
import time

import pytest

from deadlines import scaled
from idp_relay import bearer, oauth_route
from processes import STORE_KEY, run_check, relay_config

pytestmark = pytest.mark.oauth


def store(redis, timeout_ms: int) -> dict:
    return {"redis": redis.url, "key": STORE_KEY, "timeoutMilliseconds": timeout_ms}


def test_a_store_timeout_above_half_the_token_wait_is_refused_by_check(tmp_path, stub_idp, upstream):
    config = relay_config("127.0.0.1:0", [oauth_route(upstream, "/echo/", "orders")], {"tokenWaitSeconds": 4},
                          identities={"orders": stub_idp.identity()},
                          store={"redis": "redis://127.0.0.1:1/0", "key": STORE_KEY, "timeoutMilliseconds": 2001})
    code, output = run_check(tmp_path, config)
    assert code != 0, output
    assert ("$.store.timeoutMilliseconds: 2001 ms is more than half of limits.tokenWaitSeconds (4 s)") in output, output
    config["store"]["timeoutMilliseconds"] = 2000
    code, output = run_check(tmp_path, config)
    assert code == 0, output


def test_the_first_request_gets_its_token_while_redis_hangs_at_the_largest_timeout_accepted(redis, stub_idp, upstream, start_relay):
    wait = scaled(4)
    timeout_ms = int(wait * 1000 / 2)
    redis.send_signal(signal.SIGSTOP)
    relay = start_relay([oauth_route(upstream, "/echo/", "orders")], {"tokenWaitSeconds": wait},
                        identities={"orders": stub_idp.identity()}, store=store(redis, timeout_ms))
    began = time.monotonic()
    resp = relay.request("GET", "/echo/x", timeout=scaled(20))
    took = time.monotonic() - began
    assert resp.status == 200, (resp.status, resp.body[:300])
    assert bearer(resp)
    # Redis was waited for (its timeout) and the token endpoint asked after: within the token wait.
    assert timeout_ms / 1000 * 0.9 <= took < wait, took
    assert len(stub_idp.token_requests()) == 1
