"""Persistent connections on both sides: client keep-alive, an upstream connection pool, pipelining,
Connection: close and HTTP/1.0, the idle timeout, upstream connections that go away while pooled."""

import select
import threading
import time

import pytest

from deadlines import scaled, wait_until
from http_client import assert_closed, build_request
from processes import route


def test_client_connection_serves_many_requests(relay):
    with relay.connect() as conn:
        for i in range(20):
            resp = conn.request("GET", f"/req/{i}")
            assert resp.status == 200 and resp.json()["target"] == f"/req/{i}"
        assert conn.stays_open(0.3)


def test_sequential_requests_reuse_one_upstream_connection(relay, upstream):
    with relay.connect() as conn:
        ids = [conn.request("GET", f"/{i}").json()["connection_id"] for i in range(10)]
    assert len(set(ids)) == 1, f"upstream connections used: {ids}"
    assert upstream.stats()["connections_accepted"] == 1


def test_upstream_connections_are_pooled_across_client_connections(relay, upstream):
    n = 8
    for i in range(n):
        with relay.connect() as conn:
            assert conn.request("GET", f"/{i}").status == 200
    stats = upstream.stats()
    assert stats["requests_served"] == n
    assert stats["connections_accepted"] < n, stats


def test_pipelined_requests_are_answered_in_order(relay):
    # The first is the slowest: answers must still come back in request order.
    targets = ["/slow?ms=400", "/slow?ms=0", "/slow?ms=200", "/a", "/b?x=1"]
    with relay.connect() as conn:
        conn.send(b"".join(build_request("GET", t) for t in targets))
        got = [conn.read_response(timeout=10).json()["target"] for _ in targets]
    assert got == targets


def test_pipelined_requests_with_bodies_are_answered_in_order(relay):
    bodies = [b"x" * n for n in (0, 1, 70_000, 5, 300_000)]
    with relay.connect() as conn:
        conn.send(b"".join(build_request("POST", f"/{i}", headers=[("Content-Length", str(len(b)))], body=b)
                           for i, b in enumerate(bodies)))
        got = [conn.read_response(timeout=10).json() for _ in bodies]
    assert [(e["target"], e["body_length"]) for e in got] == [(f"/{i}", len(b)) for i, b in enumerate(bodies)]


def test_client_connection_close_closes_after_the_response(relay):
    with relay.connect() as conn:
        resp = conn.request("GET", "/", headers=[("Connection", "close")])
        assert resp.status == 200
        assert_closed(conn)


def test_http10_request_without_keep_alive_closes_after_the_response(relay):
    with relay.connect() as conn:
        resp = conn.request("GET", "/old", version="HTTP/1.0", host=None)
        assert resp.status == 200
        assert resp.json()["target"] == "/old"
        assert_closed(conn)


def late_bytes_reset(conn, seconds: float = 1.0) -> bool:
    """After the relay's FIN: sends a byte and waits up to `seconds` (scaled) for the relay's
    kernel to reset the connection, as it does once the relay's socket is closed. A relay that
    lingers reads and discards the byte, and nothing answers it."""
    conn.sock.sendall(b"x")
    poller = select.poll()
    poller.register(conn.sock, 0)  # only an error or a hang-up wakes it
    return bool(poller.poll(int(scaled(seconds) * 1000)))


@pytest.mark.parametrize("method, raw", [
    ("GET", build_request("GET", "/close", headers=[("Connection", "close")])),
    ("GET", build_request("GET", "/old", host=None, version="HTTP/1.0")),
    ("POST", build_request("POST", "/upload", headers=[("Connection", "close")], body=b"abc")),
], ids=["connection-close", "http10", "body-read-whole"])
def test_client_that_asked_for_the_close_is_closed_without_a_linger(relay, method, raw):
    """The client asked for the close and its request was read to its end: the relay closes its
    socket as soon as the response is out, instead of sending its FIN and waiting for the
    client's (nginx, too, closes at once), so a byte sent after all meets the kernel's reset."""
    with relay.connect() as conn:
        conn.send(raw)
        assert conn.read_final_response(method).status == 200
        assert_closed(conn)
        assert late_bytes_reset(conn), "the relay still holds its socket: it lingered"


@pytest.mark.parametrize("raw, status", [
    (build_request("GET", "/a", headers=[("Connection", "close")]) + build_request("GET", "/b"), 200),
    (build_request("POST", "/upload", host="evil.example", headers=[("Connection", "close"), ("Content-Length", "100000")],
                   body=b"0123456789"), 421),
    (build_request("GET", "/", host="evil.example"), 421),
], ids=["pipelined-request", "body-unread", "relay-closes-a-keep-alive-client"])
def test_relay_lingers_when_the_client_may_still_send(relay, raw, status):
    """Refusals of the quick close: bytes after the request, a body the relay did not read (a
    421 answered from the head), a close the client did not ask for. The relay sends its FIN
    and reads and discards what still comes, so the client's late bytes cannot make the kernel
    reset the connection (and destroy a response the client has not read yet)."""
    with relay.connect() as conn:
        conn.send(raw)
        assert conn.read_final_response().status == status
        assert_closed(conn)
        assert not late_bytes_reset(conn), "the relay closed its socket with the client's bytes still to come"


def test_idle_client_connection_is_closed_after_the_idle_timeout(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"idleTimeoutSeconds": 1})
    with relay.connect() as conn:
        assert conn.request().status == 200
        t0 = time.monotonic()
        assert conn.is_closed(timeout=5), "idle connection still open 5s later"
        assert time.monotonic() - t0 >= 0.8, "closed before the idle timeout"
        assert not conn.buf


def test_pooled_connection_closed_by_the_upstream_is_not_reused(relay, upstream):
    with relay.connect() as conn:
        first = conn.request("GET", "/?idle-close-ms=50").json()
        wait_until(lambda: upstream.stats()["connections_open"] == 0, 5,
                   "the upstream to close its idle connection")
        second = conn.request("GET", "/again")
    assert second.status == 200, second.body
    assert second.json()["connection_id"] != first["connection_id"]


def test_upstream_connection_close_response_is_not_reused(relay):
    with relay.connect() as conn:
        first = conn.request("GET", "/?close=1")
        assert first.status == 200
        second = conn.request("GET", "/again")
    assert second.status == 200
    assert second.json()["connection_id"] != first.json()["connection_id"]


def test_concurrent_slow_requests_are_served_in_parallel(relay):
    results = []

    def one(i):
        with relay.connect(timeout=10) as conn:
            results.append(conn.request("GET", f"/slow?ms=1000&i={i}").status)

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(scaled(15))
    elapsed = time.monotonic() - t0
    assert results == [200] * 6
    assert elapsed < scaled(3), f"6 concurrent 1s requests took {elapsed:.1f}s"


def test_two_workers_serve_many_connections(start_relay, upstream):
    relay = start_relay([route(upstream)], workers=2)
    results = []

    def client(i):
        with relay.connect(timeout=10) as conn:
            for j in range(5):
                results.append(conn.request("GET", f"/w/{i}/{j}").json()["target"] == f"/w/{i}/{j}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(scaled(15))
    assert results == [True] * 40
