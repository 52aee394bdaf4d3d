"""The echo upstream itself, driven directly (no relay): the other tests rely on what it reports."""

import base64
import hashlib
import os

from deadlines import wait_until
from echo_upstream import encode_frame, pattern_sha256
from http_client import build_request, chunked_body, curl


def test_echo_reports_method_target_headers_in_order_and_raw_case(upstream):
    with upstream.connect() as conn:
        resp = conn.request("GET", "/x/%41?b=1&a=2", headers=[("x-Lower", "1"), ("X-Dup", "a"), ("X-DUP", "b")])
    echo = resp.json()
    assert (echo["method"], echo["target"], echo["version"]) == ("GET", "/x/%41?b=1&a=2", "HTTP/1.1")
    assert echo["headers"] == [["Host", "relay.test"], ["x-Lower", "1"], ["X-Dup", "a"], ["X-DUP", "b"]]
    assert echo["connection_id"] == 1 and echo["request_index_on_connection"] == 0


def test_echo_hashes_content_length_body(upstream):
    body = os.urandom(100_000)
    resp = upstream.request("POST", "/", body=body)
    assert resp.json()["body_length"] == len(body)
    assert resp.json()["body_sha256"] == hashlib.sha256(body).hexdigest()


def test_echo_decodes_chunked_body_and_reports_trailers(upstream):
    parts = [b"a" * 10, b"b" * 5000, b"c"]
    body = chunked_body(parts, trailers=[("X-T1", "one"), ("x-t2", "two")])
    resp = upstream.request("POST", "/", headers=[("Transfer-Encoding", "chunked")], body=body)
    echo = resp.json()
    assert echo["body_length"] == 5011
    assert echo["body_sha256"] == hashlib.sha256(b"".join(parts)).hexdigest()
    assert echo["trailers"] == [["X-T1", "one"], ["x-t2", "two"]]


def test_echo_keeps_connection_alive_and_counts_requests(upstream):
    with upstream.connect() as conn:
        indexes = [conn.request("GET", f"/{i}").json()["request_index_on_connection"] for i in range(3)]
    assert indexes == [0, 1, 2]
    stats = upstream.stats()
    assert stats["connections_accepted"] == 1 and stats["requests_served"] == 3


def test_echo_answers_pipelined_requests_in_order(upstream):
    with upstream.connect() as conn:
        conn.send(b"".join(build_request("GET", f"/slow?ms={ms}") for ms in (200, 0, 100)))
        targets = [conn.read_response().json()["target"] for _ in range(3)]
    assert targets == ["/slow?ms=200", "/slow?ms=0", "/slow?ms=100"]


def test_echo_chunked_response_carries_checksum_trailer(upstream):
    with upstream.connect() as conn:
        resp = conn.request("GET", "/chunked?chunks=4&size=1000")
    assert resp.header("Transfer-Encoding") == "chunked"
    assert resp.body_length == 4000
    assert resp.trailer("X-Checksum") == hashlib.sha256(resp.body).hexdigest() == pattern_sha256(4000)


def test_echo_download_is_pattern_bytes(upstream):
    resp = curl(upstream.url + "/download?bytes=3000000")
    assert resp.status == 200 and resp.body_length == 3_000_000
    assert hashlib.sha256(resp.body).hexdigest() == pattern_sha256(3_000_000)


def test_echo_head_204_304_have_no_body(upstream):
    with upstream.connect() as conn:
        head = conn.request("HEAD", "/head-test")
        assert head.header("Content-Length") == "1000" and head.body == b""
        assert conn.request("GET", "/no-content").status == 204
        not_modified = conn.request("GET", "/not-modified")
        assert not_modified.status == 304 and not_modified.body == b""
        assert conn.request("GET", "/head-test").body_length == 1000


def test_echo_close_early_and_bad_framing(upstream):
    with upstream.connect() as conn:
        conn.send(build_request("GET", "/close-early"))
        assert conn.is_closed() and not conn.buf
    with upstream.connect() as conn:
        conn.send(build_request("GET", "/bad-framing"))
        assert b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n" in conn.read_until(b"\r\n\r\n")
    with upstream.connect() as conn:
        conn.send(build_request("GET", "/bad-chunk"))
        conn.read_until(b"\r\n\r\n")
        assert conn.read_until(b"\r\n") == b"zz\r\n"


def test_echo_sends_100_continue_before_reading_body(upstream):
    with upstream.connect() as conn:
        conn.send(build_request("POST", "/expect", headers=[("Expect", "100-continue"), ("Content-Length", "5")]))
        assert conn.read_response().status == 100
        conn.send(b"hello")
        echo = conn.read_final_response().json()
    assert echo["continue_sent"] and echo["body_length"] == 5


def test_echo_websocket_handshake_and_frame_echo(upstream):
    key = base64.b64encode(os.urandom(16)).decode()
    with upstream.connect() as conn:
        resp = conn.request("GET", "/ws", headers=[("Upgrade", "websocket"), ("Connection", "Upgrade"),
                                                   ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13")])
        assert resp.status == 101
        conn.send(encode_frame(0x81, b"hi", mask=b"abcd"))
        assert conn.read_exact(4) == b"\x81\x02hi"


def test_echo_stats_do_not_count_themselves(upstream):
    assert upstream.stats()["connections_accepted"] == 0
    curl(upstream.url + "/")
    stats = upstream.stats()
    assert (stats["connections_accepted"], stats["requests_served"], stats["connections_open"]) == (1, 1, 0)


def test_echo_idle_close_drops_the_connection_silently(upstream):
    with upstream.connect() as conn:
        resp = conn.request("GET", "/?idle-close-ms=100")
        assert resp.header("Connection") is None
        assert conn.is_closed(3)
    wait_until(lambda: upstream.stats()["connections_open"] == 0, 3, "the upstream to drop the connection")


def test_echo_rejects_content_length_with_transfer_encoding(upstream):
    with upstream.connect() as conn:
        conn.send(build_request("POST", "/", headers=[("Content-Length", "3"), ("Transfer-Encoding", "chunked")]) + b"0\r\n\r\n")
        assert conn.read_response().status == 400
        assert conn.is_closed()
