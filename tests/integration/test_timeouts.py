"""Timeouts and upstream failures: 408 for a head that does not arrive in time, 502 when the
upstream refuses, hangs up or answers with bad framing, 504 when it does not connect or answer
in time (or, with `upstreamResponseTotalSeconds`, does not finish its response in time, however
steadily it drips in). Every error is a problem+json naming the route."""

import select
import time

from deadlines import scaled
from http_client import assert_closed, assert_problem, build_request, curl
from processes import route


def test_partial_head_gets_408_after_the_header_timeout(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"headerTimeoutSeconds": 1})
    with relay.connect() as conn:
        conn.send(b"GET / HTTP/1.1\r\nHost: relay.test\r\nX-Partial: ")
        t0 = time.monotonic()
        resp = conn.read_response(timeout=5)
        elapsed = time.monotonic() - t0
        assert_problem(resp, 408)
        assert_closed(conn)
    # A lower bound is the relay's own configured timeout: it does not scale with a slow machine.
    assert 0.8 <= elapsed, f"408 after {elapsed:.2f}s, before the 1s timeout"
    assert upstream.stats()["requests_started"] == 0


def test_the_first_heads_deadline_runs_from_the_accept(start_relay, upstream):
    """A client that waits before it starts its head gets no more time for it: the 408 comes
    headerTimeoutSeconds after the connection was accepted, not after its first byte."""
    relay = start_relay([route(upstream)], limits={"headerTimeoutSeconds": 1.5})
    with relay.connect() as conn:
        t0 = time.monotonic()
        time.sleep(0.9)   # the client's own pause before its first byte, part of what is tested
        conn.send(b"GET / HTTP/1.1\r\nHost: relay.test\r\nX-Partial: ")
        resp = conn.read_response(timeout=scaled(5))
        elapsed = time.monotonic() - t0
        assert_problem(resp, 408)
    assert 1.4 <= elapsed < 2.3, f"408 {elapsed:.2f}s after the accept; the deadline from the accept is 1.5s"


def test_a_connection_that_sends_nothing_is_closed_at_the_header_timeout(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"headerTimeoutSeconds": 1, "idleTimeoutSeconds": 60})
    with relay.connect() as conn:
        t0 = time.monotonic()
        assert conn.is_closed(timeout=scaled(5)), "still open 5s after the accept"
        elapsed = time.monotonic() - t0
        assert conn.buf == b"", "a connection that sent nothing gets no answer"
    assert 0.9 <= elapsed < scaled(3), f"closed {elapsed:.2f}s after the accept"


def test_header_timeout_is_not_extended_by_trickled_bytes(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"headerTimeoutSeconds": 1})
    with relay.connect() as conn:
        conn.send(b"GET / HTTP/1.1\r\nHost: relay.test\r\nX-Slow: ")
        t0 = time.monotonic()
        deadline = t0 + scaled(5)
        # One byte every 200 ms, until the relay answers (it must within ~1s, not 5).
        while not select.select([conn.sock], [], [], 0.2)[0]:
            assert time.monotonic() < deadline, "no answer while the head trickled in for 5s"
            try:
                conn.send(b"a")
            except OSError:  # answered and closed between select and send
                break
        resp = conn.read_response(timeout=2)
        elapsed = time.monotonic() - t0
    assert_problem(resp, 408)
    assert elapsed < scaled(3), f"408 only after {elapsed:.1f}s of trickling"


def test_unreachable_upstream_gets_502(start_relay, closed_port):
    relay = start_relay([route(f"http://127.0.0.1:{closed_port}", name="down")])
    assert_problem(relay.request("GET", "/x"), 502, route="down")


def test_unreachable_upstream_through_curl_gets_502_problem(start_relay, closed_port):
    relay = start_relay([route(f"http://127.0.0.1:{closed_port}", name="down")])
    resp = curl(relay.url + "/x")
    assert_problem(resp, 502, route="down")


def test_upstream_connect_timeout_gets_504(start_relay, blackhole_port):
    relay = start_relay([route(f"http://127.0.0.1:{blackhole_port}", name="blackhole")],
                        limits={"upstreamConnectTimeoutSeconds": 0.5})
    t0 = time.monotonic()
    resp = relay.request("GET", "/x", timeout=5)
    elapsed = time.monotonic() - t0
    assert_problem(resp, 504, route="blackhole")
    assert elapsed < scaled(3), f"504 only after {elapsed:.1f}s"


def test_slow_upstream_gets_504_after_the_response_timeout(start_relay, upstream):
    relay = start_relay([route(upstream, name="slow")], limits={"upstreamResponseTimeoutSeconds": 0.5})
    t0 = time.monotonic()
    resp = relay.request("GET", "/slow?ms=5000", timeout=5)
    elapsed = time.monotonic() - t0
    assert_problem(resp, 504, route="slow")
    assert 0.4 <= elapsed < scaled(3), f"504 after {elapsed:.2f}s"


def test_upstream_faster_than_the_response_timeout_is_answered(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"upstreamResponseTimeoutSeconds": 2})
    assert relay.request("GET", "/slow?ms=300").status == 200


# A byte every 100 ms keeps a 1 s response timeout from ever firing; only the total bounds it.
DRIP_LIMITS = {"upstreamResponseTimeoutSeconds": 1, "upstreamResponseTotalSeconds": 1.5}


def test_a_response_head_dripping_in_gets_504_after_the_total_time(start_relay, upstream):
    relay = start_relay([route(upstream, name="drip")], limits=DRIP_LIMITS)
    t0 = time.monotonic()
    resp = relay.request("GET", "/drip?ms=100&bytes=10&head=1", timeout=8)  # ~15 s to drip whole
    elapsed = time.monotonic() - t0
    doc = assert_problem(resp, 504, route="drip")
    assert "upstreamResponseTotalSeconds" in doc["detail"], doc
    assert 1.4 <= elapsed < scaled(4), f"504 after {elapsed:.2f}s"


def test_a_response_body_dripping_in_is_cut_off_by_closing_the_client_connection(start_relay, upstream):
    relay = start_relay([route(upstream, name="drip")], limits=DRIP_LIMITS)
    with relay.connect() as conn:
        t0 = time.monotonic()
        conn.send(build_request("GET", "/drip?ms=100&bytes=200"))  # 20 s to drip whole
        head = conn.read_until(b"\r\n\r\n", timeout=5)
        assert head.startswith(b"HTTP/1.1 200 ") and b"Content-Length: 200\r\n" in head, head
        assert conn.is_closed(timeout=5), "the client connection outlived upstreamResponseTotalSeconds"
        elapsed = time.monotonic() - t0
        assert 0 < len(conn.buf) < 200, f"{len(conn.buf)} of 200 body bytes before the close"
        assert 1.4 <= elapsed < scaled(4), f"closed after {elapsed:.2f}s"


def test_a_response_that_keeps_dripping_is_served_whole_without_a_total_limit(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"upstreamResponseTimeoutSeconds": 1})
    resp = relay.request("GET", "/drip?ms=100&bytes=25", timeout=8)
    assert resp.status == 200 and resp.body_length == 25


def test_a_response_within_the_total_time_is_served(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"upstreamResponseTotalSeconds": 3})
    with relay.connect() as conn:
        for _ in range(2):  # 2 s each: the pooled connection's next exchange has a deadline of its own
            resp = conn.request("GET", "/drip?ms=100&bytes=20", timeout=8)
            assert resp.status == 200 and resp.body_length == 20


def test_upstream_closing_without_an_answer_gets_502(start_relay, upstream):
    relay = start_relay([route(upstream, name="echo")])
    assert_problem(relay.request("GET", "/close-early"), 502, route="echo")


def test_upstream_response_with_content_length_and_chunked_gets_502(start_relay, upstream):
    relay = start_relay([route(upstream, name="echo")])
    assert_problem(relay.request("GET", "/bad-framing"), 502, route="echo")


def test_upstream_response_with_invalid_chunk_size_gets_502(start_relay, upstream):
    relay = start_relay([route(upstream, name="echo")])
    assert_problem(relay.request("GET", "/bad-chunk"), 502, route="echo")


def test_relay_keeps_serving_after_upstream_failures(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"upstreamResponseTimeoutSeconds": 0.5})
    for target in ("/close-early", "/bad-framing", "/bad-chunk", "/slow?ms=2000"):
        assert relay.request("GET", target, timeout=5).status in (502, 504), target
    assert relay.request("GET", "/fine").json()["target"] == "/fine"
