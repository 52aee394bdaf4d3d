"""`limits.maxUpstreamConnections`: each worker opens at most that many connections to one
upstream; exchanges beyond it queue, first come first served, and take over the socket of the
next exchange to finish. One that queues longer than `upstreamQueueTimeoutSeconds` gets a 503
`upstream-busy` problem. A client that leaves while queued sends nothing upstream."""

import socket
import struct
import threading
import time

from admin_client import start_with_admin
from deadlines import scaled, wait_until
from http_client import assert_problem
from processes import route


def requests_in_parallel(relay, paths, timeout):
    """One client connection per path, all sent at once; the responses in the order of `paths`."""
    results: list = [None] * len(paths)

    def send(i, path):
        try:
            results[i] = relay.request("GET", path, timeout=timeout)
        except Exception as error:  # reported by the caller's assertion
            results[i] = error

    threads = [threading.Thread(target=send, args=(i, p)) for i, p in enumerate(paths)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    return results


def test_exchanges_over_the_limit_queue_and_reuse_the_open_connections(start_relay, upstream):
    """Six slow requests through a limit of two: all are answered, the upstream accepted exactly
    two connections, and the six took at least three rounds of the upstream's delay."""
    relay = start_relay([route(upstream)], limits={"maxUpstreamConnections": 2}, workers=1)
    started = time.monotonic()
    results = requests_in_parallel(relay, [f"/slow?ms=400&n={i}" for i in range(6)], timeout=scaled(15))
    elapsed = time.monotonic() - started
    for result in results:
        assert not isinstance(result, Exception), result
        assert result.status == 200
    assert {int(r.header("X-Echo-Connection-Id")) for r in results} <= {1, 2}
    assert upstream.stats()["connections_accepted"] == 2
    assert elapsed >= 3 * 0.4, f"six exchanges over two connections took only {elapsed:.2f}s"


def test_without_a_limit_the_same_requests_open_a_connection_each(start_relay, upstream):
    """The default (0) sets no limit: the same six requests run side by side."""
    relay = start_relay([route(upstream)], workers=1)
    results = requests_in_parallel(relay, [f"/slow?ms=400&n={i}" for i in range(6)], timeout=scaled(15))
    assert all(not isinstance(r, Exception) and r.status == 200 for r in results), results
    assert upstream.stats()["connections_accepted"] == 6


def test_an_exchange_queued_past_the_timeout_gets_503_and_the_busy_one_completes(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="r")], workers=1,
                                    limits={"maxUpstreamConnections": 1, "upstreamQueueTimeoutSeconds": 0.5})
    with relay.connect() as busy, relay.connect() as queued:
        busy.send(b"GET /slow?ms=3000 HTTP/1.1\r\nHost: x\r\n\r\n")
        # The first request holds the only connection (its reply takes 3 s).
        wait_until(lambda: upstream.stats()["requests_in_flight"] == 1, 5, "the first request at the upstream")
        started = time.monotonic()
        queued.send(b"GET /queued HTTP/1.1\r\nHost: x\r\n\r\n")
        resp = queued.read_response(timeout=scaled(5))
        waited = time.monotonic() - started
        problem = assert_problem(resp, 503, route="r")
        assert problem["type"] == "urn:oauth-relay:problem:upstream-busy"
        assert resp.header("Retry-After") == "1"
        assert 0.45 <= waited < scaled(2.5), f"the 503 came after {waited:.2f}s"
        # The queued request never reached the upstream; the busy one completes.
        assert busy.read_response(timeout=scaled(6)).status == 200
        assert queued.request("GET", "/after").status == 200, "the connection that got the 503 was not kept"
    m = admin.wait_for(lambda m: m.total("oauth_relay_upstream_errors_total", route="r") >= 1, "the queue timeout counted")
    assert m.by("oauth_relay_upstream_errors_total", "kind", route="r") == {"queue_timeout": 1}
    assert upstream.stats()["requests_served"] == 2  # /slow and /after: never /queued


def test_a_client_that_leaves_while_queued_sends_nothing_and_frees_its_place(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream)], limits={"maxUpstreamConnections": 1}, workers=1)
    with relay.connect() as busy, relay.connect() as leaving, relay.connect() as waiting:
        busy.send(b"GET /slow?ms=1000 HTTP/1.1\r\nHost: x\r\n\r\n")
        wait_until(lambda: upstream.stats()["requests_in_flight"] == 1, 5, "the first request at the upstream")
        leaving.send(b"GET /left HTTP/1.1\r\nHost: x\r\n\r\n")
        waiting.send(b"GET /waited HTTP/1.1\r\nHost: x\r\n\r\n")
        admin.wait_for(lambda m: m.total("oauth_relay_upstream_queued_exchanges") == 2, "two exchanges queued")
        # Gone for good (a reset): a client that only half-closes after a complete request is
        # still answered, as without a queue.
        leaving.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        leaving.close()
        admin.wait_for(lambda m: m.total("oauth_relay_upstream_queued_exchanges") == 1, "the one that left dequeued")
        assert busy.read_response(timeout=scaled(5)).status == 200
        resp = waiting.read_response(timeout=scaled(5))
        assert resp.status == 200
        # It went out on the one connection, right after the first request: /left never did.
        assert resp.json()["target"] == "/waited"
        assert resp.header("X-Echo-Request-Index") == "1"
    assert upstream.stats()["connections_accepted"] == 1
    assert admin.scrape().total("oauth_relay_upstream_queued_exchanges") == 0


def test_a_queued_request_body_is_kept_and_sent_once_a_connection_is_free(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"maxUpstreamConnections": 1}, workers=1)
    body = bytes(range(256)) * 400  # 100 KiB, arriving while the request queues
    with relay.connect() as busy, relay.connect() as uploading:
        busy.send(b"GET /slow?ms=800 HTTP/1.1\r\nHost: x\r\n\r\n")
        wait_until(lambda: upstream.stats()["requests_in_flight"] == 1, 5, "the first request at the upstream")
        resp = uploading.request("POST", "/upload", body=body, timeout=scaled(5))
        assert resp.status == 200
        assert resp.json()["body_length"] == len(body)
        assert busy.read_response(timeout=scaled(5)).status == 200
    assert upstream.stats()["connections_accepted"] == 1
