"""Hardening: what a client cannot get past the relay, and what it cannot hold.

- `Upgrade`: a route tunnels only the protocols in its `upgrade` list (default `["websocket"]`);
  other protocols are removed from the forwarded request, which is then served as plain
  HTTP/1.1. Without this, `Upgrade: h2c` to any allowed path would open an HTTP/2 connection to
  the upstream on which the client can ask for any path, and none of those requests would pass
  through the relay's routing or header rewriting. An upstream that switches protocols without
  having been asked gets the client a 502.
- A header field with an empty name (`: value`) is malformed both ways.
- `Content-Length` is forwarded in its one canonical spelling (`005` -> `5`).
- A request body must keep coming (`limits.requestBodyTimeoutSeconds`, extended by every byte at
  `limits.requestBodyMinBytesPerSecond`): a slow-drip body is cut off with 408 and both of its
  connections closed, a steady upload never is, and time the relay waits on a slow upstream
  does not count.

The h2c upstream is hypercorn (h2c_upstream.py); the HTTP/2 client side is the `h2` package.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import select
import selectors
import socket
import subprocess
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import pytest

from deadlines import scaled, wait_until
from echo_upstream import WEBSOCKET_GUID, encode_frame, pattern_chunks, pattern_sha256
from http_client import RawConnection, assert_closed, assert_problem, build_request, chunked_body
from processes import HERE, LOOPBACK, STARTUP_SECONDS, _Process, route

ROUTE_SECRET = ("X-Route-Secret", "set-by-the-relay")


# ---------------------------------------------------------------------------------------------
# The h2c upstream (hypercorn) and an HTTP/2 client over an upgraded connection.

class H2cUpstream(_Process):
    name = "h2c upstream (hypercorn)"

    def start(self) -> "H2cUpstream":
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, str(HERE / "h2c_upstream.py"), "--host", LOOPBACK, "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=log, cwd=HERE)
        log.close()
        ready, _, _ = select.select([self.proc.stdout], [], [], scaled(STARTUP_SECONDS))
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("LISTENING"):
            self.kill()
            pytest.fail(f"h2c upstream did not start: {line!r}\n{self.log()}")
        self.port = int(line.split()[2])
        return self

    def seen(self) -> list[dict]:
        """Every request the app was given so far (read directly, not through the relay)."""
        with self.connect() as conn:
            return conn.request("GET", "/seen", headers=[("Connection", "close")]).json()


@pytest.fixture
def h2c_upstream(register_log, tmp_path):
    up = H2cUpstream(tmp_path / "h2c-upstream.log")
    register_log(up)
    yield up.start()
    up.kill()


def record_headers(record: dict, name: str) -> list[str]:
    return [v for k, v in record["headers"] if k.lower() == name.lower()]


class H2cClient:
    """The client side of an `Upgrade: h2c` (RFC 7540 §3.2) on a RawConnection."""

    def __init__(self, conn: RawConnection):
        self.conn = conn
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="latin-1"))
        self.settings = self.h2.initiate_upgrade_connection().decode()
        self.responses: dict[int, dict] = {}

    def upgrade_request(self, target: str) -> bytes:
        return build_request("GET", target, headers=[("Connection", "Upgrade, HTTP2-Settings"), ("Upgrade", "h2c"),
                                                     ("HTTP2-Settings", self.settings)])

    def start_http2(self) -> None:
        """After the 101: the client preface; whatever the server already sent is in conn.buf."""
        self.conn.send(self.h2.data_to_send())
        self._receive(bytes(self.conn.buf))
        self.conn.buf.clear()

    def get(self, stream_id: int, path: str, timeout: float = 5) -> dict:
        """Sends GET `path` on a new stream; returns {"status", "headers", "body"} once it ends."""
        self.h2.send_headers(stream_id, [(":method", "GET"), (":scheme", "http"), (":authority", "relay.test"),
                                         (":path", path)], end_stream=True)
        self.conn.send(self.h2.data_to_send())
        deadline = time.monotonic() + scaled(timeout)
        while not self.responses.get(stream_id, {}).get("ended"):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no complete HTTP/2 answer on stream {stream_id} within {scaled(timeout):.1f}s"
            self.conn.sock.settimeout(remaining)
            try:
                data = self.conn.sock.recv(1 << 16)
            except socket.timeout:
                continue
            assert data, f"connection closed before the HTTP/2 answer on stream {stream_id}"
            self._receive(data)
        return self.responses[stream_id]

    def _receive(self, data: bytes) -> None:
        for event in self.h2.receive_data(data) if data else []:
            if isinstance(event, h2.events.ResponseReceived):
                headers = dict(event.headers)
                self.responses.setdefault(event.stream_id, {"body": b""}).update(
                    status=int(headers[":status"]), headers=event.headers)
            elif isinstance(event, h2.events.DataReceived):
                self.responses.setdefault(event.stream_id, {"body": b""})["body"] += event.data
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.responses.setdefault(event.stream_id, {"body": b""})["ended"] = True
        if pending := self.h2.data_to_send():
            self.conn.send(pending)


def h2c_routes(h2c_upstream, **options) -> list[dict]:
    """Only /allowed is routed (with a header set by the relay); any other path is a 404."""
    return [route(h2c_upstream, "/allowed", name="allowed", setHeaders=dict([ROUTE_SECRET]), **options)]


def websocket_headers(upgrade: str):
    key = base64.b64encode(os.urandom(16)).decode()
    return key, [("Upgrade", upgrade), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key),
                 ("Sec-WebSocket-Version", "13")]


# ---------------------------------------------------------------------------------------------
# 1. Upgrade: only the route's protocols are tunnelled.

def test_h2c_upgrade_on_a_default_route_is_answered_as_plain_http11(start_relay, h2c_upstream):
    relay = start_relay(h2c_routes(h2c_upstream))
    with relay.connect() as conn:
        client = H2cClient(conn)
        conn.send(client.upgrade_request("/allowed"))
        resp = conn.read_final_response()
        assert resp.status == 200, f"the relay let the upstream switch to h2c: {resp.status} {resp.headers}"
        assert resp.version == "HTTP/1.1"
        seen = resp.json()
        assert seen["http_version"] == "1.1" and seen["path"] == "/allowed", seen
        assert record_headers(seen, "upgrade") == [], f"the upstream was asked to upgrade: {seen['headers']}"
        assert not any("upgrade" in v.lower() for v in record_headers(seen, "connection")), seen["headers"]
        assert record_headers(seen, ROUTE_SECRET[0]) == [ROUTE_SECRET[1]]
        # The client connection stays plain HTTP/1.1.
        again = conn.request("GET", "/allowed/again")
        assert again.status == 200 and again.json()["path"] == "/allowed/again"


def test_h2c_upgrade_cannot_reach_the_upstream_past_the_routes(start_relay, h2c_upstream):
    """The bypass itself: were the 101 tunnelled, an HTTP/2 request for a path no route allows
    would reach the app, without the route's headers or X-Forwarded-For."""
    relay = start_relay(h2c_routes(h2c_upstream))
    with relay.connect() as conn:
        client = H2cClient(conn)
        conn.send(client.upgrade_request("/allowed"))
        resp = conn.read_final_response()
        if resp.status == 101:
            client.start_http2()
            client.get(3, "/not-routed")
    unrouted = [r for r in h2c_upstream.seen()
                if not r["path"].startswith("/allowed") or record_headers(r, ROUTE_SECRET[0]) != [ROUTE_SECRET[1]]]
    assert not unrouted, ("requests reached the upstream without passing the relay's routing:\n"
                          + "\n".join(json.dumps(r) for r in unrouted))
    assert relay.request("GET", "/not-routed").status == 404


def test_route_upgrade_list_with_h2c_lets_the_upgrade_through(start_relay, h2c_upstream):
    relay = start_relay(h2c_routes(h2c_upstream, upgrade=["websocket", "h2c"]))
    with relay.connect() as conn:
        client = H2cClient(conn)
        conn.send(client.upgrade_request("/allowed"))
        resp = conn.read_final_response()
        assert resp.status == 101, f"{resp.status}: {resp.body[:300]!r}"
        assert resp.header("Upgrade").lower() == "h2c"
        client.start_http2()
        answer = client.get(3, "/allowed/over-http2")
    assert answer["status"] == 200
    seen = json.loads(answer["body"])
    assert seen["http_version"] == "2" and seen["path"] == "/allowed/over-http2", seen


def test_route_upgrade_list_matches_protocol_names_case_insensitively_and_without_version(start_relay, h2c_upstream):
    relay = start_relay(h2c_routes(h2c_upstream, upgrade=["websocket", "H2C"]))
    with relay.connect() as conn:
        client = H2cClient(conn)
        conn.send(build_request("GET", "/allowed", headers=[
            ("Connection", "Upgrade, HTTP2-Settings"), ("Upgrade", "h2c/1"), ("HTTP2-Settings", client.settings)]))
        resp = conn.read_final_response()
    # hypercorn switches only for exactly "h2c", so a forwarded "h2c/1" gets a plain answer: what
    # matters is that the relay forwarded it.
    assert resp.status == 200, f"{resp.status}: {resp.body[:300]!r}"
    assert record_headers(resp.json(), "upgrade") == ["h2c/1"], resp.json()["headers"]


def test_websocket_and_h2c_on_a_default_route_upgrade_to_websocket_only(relay):
    key, headers = websocket_headers("websocket, h2c")
    with relay.connect(timeout=10) as conn:
        resp = conn.request("GET", "/ws-report", headers=headers)
        assert resp.status == 101, f"{resp.status}: {resp.body[:300]!r}"
        expected = base64.b64encode(hashlib.sha1(key.encode() + WEBSOCKET_GUID).digest()).decode()
        assert resp.header("Sec-WebSocket-Accept") == expected
        assert resp.header("X-Echo-Upgrade") == "websocket", "Upgrade as the upstream received it"
        # Still a WebSocket tunnel.
        conn.send(encode_frame(0x81, b"through the tunnel", mask=os.urandom(4)))
        b0, b1 = conn.read_exact(2)
        assert (b0, b1) == (0x81, len(b"through the tunnel"))
        assert conn.read_exact(b1) == b"through the tunnel"


def test_upgrade_protocols_are_matched_on_the_name_before_the_version(relay):
    _, headers = websocket_headers("h2c, websocket/13")
    with relay.connect() as conn:
        resp = conn.request("GET", "/status/200", headers=headers)
    assert resp.status == 200
    assert resp.echo_headers("upgrade") == ["websocket/13"]


def test_upstream_switching_protocols_on_a_plain_request_gets_502(start_relay, upstream):
    """No Upgrade was forwarded, so the upstream's 101 is a protocol error, not a tunnel."""
    relay = start_relay([route(upstream, name="echo")])
    with relay.connect() as conn:
        resp = conn.request("GET", "/switch-protocols")
        assert_problem(resp, 502, route="echo")


def test_upstream_switching_protocols_to_a_removed_upgrade_gets_502(start_relay, upstream):
    """Upgrade: h2c is not forwarded on a default route, so an upstream's 101 is a protocol error."""
    relay = start_relay([route(upstream, name="echo")])
    with relay.connect() as conn:
        conn.send(build_request("GET", "/switch-protocols", headers=[
            ("Connection", "Upgrade, HTTP2-Settings"), ("Upgrade", "h2c"), ("HTTP2-Settings", "AAMAAABkAARAAAAA")]))
        resp = conn.read_final_response()
        assert_problem(resp, 502, route="echo")


# ---------------------------------------------------------------------------------------------
# 2. A field name is never empty.

@pytest.mark.parametrize("head", [b"GET / HTTP/1.1\r\nHost: relay.test\r\n: value\r\n\r\n",
                                  b"GET / HTTP/1.1\r\n: value\r\nHost: relay.test\r\n\r\n"], ids=["last", "first"])
def test_request_header_with_an_empty_name_is_rejected(relay, upstream, head):
    with relay.connect() as conn:
        conn.send(head)
        assert_problem(conn.read_response(), 400)
        assert_closed(conn)
    stats = upstream.stats()
    assert stats["connections_accepted"] == 0, f"the upstream was sent something: {stats}"


def test_request_trailer_with_an_empty_name_is_rejected(relay, upstream):
    # The head and the body stream on before the trailer arrives; the request is never completed.
    with relay.connect() as conn:
        conn.send(build_request("POST", "/", headers=[("Transfer-Encoding", "chunked")])
                  + chunked_body([b"hello"], trailers=[("", "value")]))
        assert_problem(conn.read_response(), 400)
        assert_closed(conn)
    stats = upstream.stats()
    assert stats["requests_served"] == 0, f"the upstream answered: {stats}"


def test_upstream_response_header_with_an_empty_name_gets_502_and_the_connection_is_dropped(relay, upstream):
    first = relay.request("GET", "/first")
    assert first.status == 200
    with relay.connect() as conn:
        # echo_upstream writes `set-header=:oops` as the line ": oops".
        conn.send(build_request("GET", "/bad?set-header=:oops"))
        head = conn.read_until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 502 "), f"relayed as {head!r}"
        assert b"\r\n: " not in head
    after = relay.request("GET", "/after")
    assert after.status == 200
    assert after.json()["connection_id"] != first.json()["connection_id"], \
        "the upstream connection that sent the malformed head was reused"


# ---------------------------------------------------------------------------------------------
# 3. Content-Length in its canonical spelling.

def test_request_content_length_with_leading_zeros_is_forwarded_normalised(relay):
    with relay.connect() as conn:
        resp = conn.request("POST", "/", headers=[("Content-Length", "005")], body=b"hello")
    echo = resp.json()
    assert resp.echo_headers("content-length") == ["5"], echo["headers"]
    assert echo["body_length"] == 5 and echo["body_sha256"] == hashlib.sha256(b"hello").hexdigest()


def test_response_content_length_with_leading_zeros_reaches_the_client_normalised(relay):
    with relay.connect() as conn:
        resp = conn.request("GET", "/padded-length")
        assert resp.status == 200
        assert resp.header_all("content-length") == ["5"]
        assert resp.body == b"hello"
        # The connection is still in step: the next answer parses.
        assert conn.request("GET", "/next").json()["target"] == "/next"


# ---------------------------------------------------------------------------------------------
# 4. Request bodies must keep coming.

DRIP_CONNECTIONS = 200
DRIP_INTERVAL = 0.3


def test_stalled_request_body_gets_408_and_both_connections_are_closed(start_relay, upstream):
    relay = start_relay([route(upstream, name="echo")], limits={"requestBodyTimeoutSeconds": 1})
    with relay.connect() as conn:
        t0 = time.monotonic()
        conn.send(build_request("POST", "/upload", headers=[("Content-Length", "100000")]) + b"0123456789")
        wait_until(lambda: upstream.stats()["requests_started"] == 1, 5, "the head to reach the upstream")
        resp = conn.read_response(timeout=10)
        elapsed = time.monotonic() - t0
        problem = assert_problem(resp, 408)
        assert problem["type"] == "urn:oauth-relay:problem:request-timeout", problem
        assert_closed(conn)
    assert 0.9 <= elapsed < scaled(4), f"408 {elapsed:.2f}s after the head; the body timeout is 1s"
    wait_until(lambda: upstream.stats()["connections_open"] == 0, 5,
               "the relay to close the upstream connection of the timed-out body")
    assert upstream.stats()["requests_served"] == 0


def readable_among(sockets, timeout: float) -> list:
    """The sockets of `sockets` with bytes (or an end) to read within `timeout` seconds. Through
    epoll (selectors), not select(): the pytest process may hold more than 1,024 descriptors by the
    time this runs, and select() cannot watch a descriptor numbered 1,024 or above."""
    with selectors.DefaultSelector() as selector:
        for s in sockets:
            selector.register(s, selectors.EVENT_READ)
        return [key.fileobj for key, _ in selector.select(timeout)]


def test_dripping_request_bodies_are_cut_off_while_other_clients_are_served(start_relay, start_upstream):
    drip_upstream, other_upstream = start_upstream(), start_upstream()
    # 3 s: every head must reach the upstream before the first drip is cut off, and opening 200
    # connections through the relay can take more than a second on a busy 2-core machine.
    relay = start_relay([route(drip_upstream, "/drip", name="drip"), route(other_upstream, "/", name="other")],
                        limits={"requestBodyTimeoutSeconds": 3})
    head = build_request("POST", "/drip", headers=[("Content-Length", "100000")])
    drips: dict[socket.socket, bytearray] = {}
    try:
        for _ in range(DRIP_CONNECTIONS):
            s = socket.create_connection((relay.host, relay.port), timeout=scaled(5))
            s.sendall(head + b"abc")
            s.setblocking(False)
            drips[s] = bytearray()
        wait_until(lambda: drip_upstream.stats()["requests_started"] == DRIP_CONNECTIONS, 10,
                   f"all {DRIP_CONNECTIONS} heads to reach the upstream")
        open_ = set(drips)
        started = time.monotonic()
        deadline = started + scaled(10)
        slowest_other = 0.0
        with relay.connect() as other:
            while open_ and time.monotonic() < deadline:
                for s in list(open_):  # a few bytes each, well under 500 bytes/s
                    try:
                        s.send(b"abcde")
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        open_.discard(s)
                t = time.monotonic()
                resp = other.request("GET", "/other", timeout=5)
                slowest_other = max(slowest_other, time.monotonic() - t)
                assert resp.status == 200 and resp.json()["target"] == "/other"
                # Pace the drip; meanwhile, take note of every connection the relay closes.
                tick = time.monotonic() + DRIP_INTERVAL
                while open_ and (remaining := tick - time.monotonic()) > 0:
                    readable = readable_among(open_, remaining)
                    for s in readable:
                        try:
                            data = s.recv(65536)
                        except (BlockingIOError, InterruptedError):
                            continue
                        except OSError:
                            data = b""
                        if data:
                            drips[s] += data
                        else:
                            open_.discard(s)
        elapsed = time.monotonic() - started
        assert not open_, (f"{len(open_)} of {DRIP_CONNECTIONS} drip connections still open {elapsed:.1f}s "
                           f"into the drip; the body timeout is 3s")
        # Bounded well below the drip (8 s) but with room for a loaded 2-core machine.
        assert slowest_other < scaled(2), f"another client waited {slowest_other:.2f}s for an answer meanwhile"
        answered = [bytes(b) for b in drips.values() if b]
        assert all(b.startswith(b"HTTP/1.1 408 ") for b in answered), \
            f"not a 408: {next(b for b in answered if not b.startswith(b'HTTP/1.1 408 '))[:300]!r}"
    finally:
        for s in drips:
            s.close()
    wait_until(lambda: drip_upstream.stats()["connections_open"] == 0, 5,
               "the relay to close the upstream connections of the timed-out bodies")
    assert drip_upstream.stats()["requests_served"] == 0


def test_steady_upload_outlasting_the_body_timeout_completes(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"requestBodyTimeoutSeconds": 1})
    body = os.urandom(1 << 20)
    piece = 64 * 1024
    with relay.connect(timeout=10) as conn:
        t0 = time.monotonic()
        conn.send(build_request("POST", "/upload", headers=[("Content-Length", str(len(body)))]))
        for offset in range(0, len(body), piece):
            conn.send(body[offset:offset + piece])
            time.sleep(0.1)  # pacing: 16 pieces over ~1.6s, longer than the 1s timeout
        resp = conn.read_response(timeout=10)
        elapsed = time.monotonic() - t0
    assert resp.status == 200, f"{resp.status}: {resp.body[:300]!r}"
    echo = resp.json()
    assert echo["body_length"] == len(body) and echo["body_sha256"] == hashlib.sha256(body).hexdigest()
    assert elapsed > 1.2, f"the upload took only {elapsed:.2f}s: it did not outlast the timeout"


def test_time_waiting_on_a_slow_upstream_does_not_count_against_the_body_timeout(start_relay, upstream):
    """The upstream reads nothing for 3s; the relay stops reading the client once its buffers to
    the upstream are full. Counting that pause, the 1s (+ 20 MB/s) budget would run out."""
    relay = start_relay([route(upstream)], limits={"requestBodyTimeoutSeconds": 1,
                                                   "requestBodyMinBytesPerSecond": 20_000_000})
    size = 48 << 20
    sent = []

    def send_body(conn):
        try:
            for chunk in pattern_chunks(size):
                conn.sock.sendall(chunk)
            sent.append(True)
        except OSError:  # the relay gave up and closed: the response tells
            pass

    with relay.connect(timeout=20) as conn:
        conn.send(build_request("POST", "/read-late?ms=3000", headers=[("Content-Length", str(size))]))
        sender = threading.Thread(target=send_body, args=(conn,), daemon=True)
        sender.start()
        resp = conn.read_response(timeout=20)
        sender.join(scaled(5))
    assert resp.status == 200, f"{resp.status}: {resp.body[:300]!r}"
    assert resp.json()["body_length"] == size and resp.json()["body_sha256"] == pattern_sha256(size)
    assert sent
