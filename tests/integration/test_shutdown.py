"""Graceful shutdown: on SIGTERM/SIGINT stop accepting, finish in-flight requests, exit 0; idle
connections do not hold the process; shutdownGraceSeconds bounds the wait."""

import signal
import threading
import time

from deadlines import scaled, wait_until
from http_client import build_request
from processes import connection_refused, route


def start_slow_request(relay, upstream, ms: int):
    """Sends GET /slow?ms=... and waits until the upstream is working on it; returns the connection."""
    conn = relay.connect(timeout=ms / 1000 + 10)
    conn.send(build_request("GET", f"/slow?ms={ms}"))
    wait_until(lambda: upstream.stats()["requests_in_flight"] == 1, 5, "the request to reach the upstream")
    return conn


def test_sigterm_lets_the_in_flight_request_finish_and_exits_0(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"shutdownGraceSeconds": 10})
    with start_slow_request(relay, upstream, 1500) as conn:
        relay.send_signal(signal.SIGTERM)
        resp = conn.read_response()
    assert resp.status == 200
    assert resp.json()["target"] == "/slow?ms=1500"
    assert relay.wait_exit(5) == 0


def test_new_connections_are_refused_while_draining(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"shutdownGraceSeconds": 10})
    with start_slow_request(relay, upstream, 3000) as conn:
        relay.send_signal(signal.SIGTERM)
        wait_until(lambda: connection_refused(relay.host, relay.port), 2, "the listener to close")
        assert relay.running(), "the relay exited with a request still in flight"
        assert conn.read_response().status == 200
    assert relay.wait_exit(5) == 0


def test_sigint_exits_0(relay):
    assert relay.request().status == 200
    assert relay.stop(signal.SIGINT, timeout=5) == 0


def test_idle_relay_exits_promptly_on_sigterm(relay):
    t0 = time.monotonic()
    assert relay.stop(signal.SIGTERM, timeout=5) == 0
    assert time.monotonic() - t0 < scaled(2)


def test_idle_keepalive_connection_does_not_delay_shutdown(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"shutdownGraceSeconds": 10})
    with relay.connect() as conn:
        assert conn.request().status == 200
        t0 = time.monotonic()
        assert relay.stop(signal.SIGTERM, timeout=5) == 0
        assert time.monotonic() - t0 < scaled(3), "an idle keep-alive connection held the relay"
        assert conn.is_closed(1)


def test_shutdown_grace_bounds_the_wait_for_in_flight_requests(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"shutdownGraceSeconds": 1})
    with start_slow_request(relay, upstream, 30_000) as conn:
        t0 = time.monotonic()
        relay.send_signal(signal.SIGTERM)
        relay.wait_exit(6)
        assert time.monotonic() - t0 < scaled(5)
        assert conn.is_closed(2), "the client of the abandoned request was left hanging"


def test_sigterm_during_many_in_flight_requests_answers_them_all(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"shutdownGraceSeconds": 10})
    results = []

    def one(i):
        with relay.connect(timeout=10) as conn:
            results.append(conn.request("GET", f"/slow?ms=1500&i={i}").status)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    wait_until(lambda: upstream.stats()["requests_in_flight"] == 5, 5, "5 requests at the upstream")
    relay.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(scaled(10))
    assert results == [200] * 5
    assert relay.wait_exit(5) == 0
