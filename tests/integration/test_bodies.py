"""Message bodies both ways: Content-Length and chunked (with trailers), 1 GiB streamed with bounded
relay memory, Expect: 100-continue, and the responses that never have a body (HEAD, 204, 304)."""

import hashlib
import os
import threading
import time

import pytest

from deadlines import scaled
from echo_upstream import HEAD_TEST_LENGTH, pattern_chunks, pattern_sha256
from http_client import build_request, chunked_body, curl, curl_chunked_upload

GIB = 1 << 30
MAX_RELAY_RSS = 100 * 1024 * 1024
TRANSFER_SECONDS = 30


def test_content_length_request_body_is_forwarded(relay):
    body = os.urandom(200_000)
    echo = relay.request("POST", "/upload", body=body).json()
    assert echo["body_length"] == len(body)
    assert echo["body_sha256"] == hashlib.sha256(body).hexdigest()


def test_empty_post_with_content_length_zero_is_forwarded(relay):
    echo = relay.request("POST", "/empty", headers=[("Content-Length", "0")]).json()
    assert (echo["method"], echo["body_length"]) == ("POST", 0)


def test_chunked_request_body_is_forwarded(relay):
    parts = [os.urandom(n) for n in (1, 4096, 70_000, 3)]
    resp = relay.request("POST", "/upload", headers=[("Transfer-Encoding", "chunked")], body=chunked_body(parts))
    echo = resp.json()
    assert echo["body_length"] == sum(map(len, parts))
    assert echo["body_sha256"] == hashlib.sha256(b"".join(parts)).hexdigest()


def test_chunked_request_trailers_are_forwarded(relay):
    body = chunked_body([b"hello ", b"world"], trailers=[("X-Checksum", "abc123"), ("X-Signed", "yes")])
    resp = relay.request("POST", "/upload", headers=[("Transfer-Encoding", "chunked"), ("Trailer", "X-Checksum, X-Signed")],
                         body=body)
    echo = resp.json()
    assert echo["body_length"] == 11
    assert [(k.lower(), v) for k, v in echo["trailers"]] == [("x-checksum", "abc123"), ("x-signed", "yes")]


def test_chunked_response_is_forwarded_with_its_trailer(relay):
    with relay.connect() as conn:
        resp = conn.request("GET", "/chunked?chunks=8&size=10000", headers=[("TE", "trailers")])
    assert resp.status == 200
    assert resp.body_length == 80_000
    assert resp.trailer("X-Checksum") == hashlib.sha256(resp.body).hexdigest() == pattern_sha256(80_000)


def test_large_chunked_response_through_curl(relay):
    resp = curl(relay.url + "/chunked?chunks=64&size=1048576", timeout=30)
    assert resp.status == 200, resp.stderr
    assert resp.body_length == 64 << 20
    assert hashlib.sha256(resp.body).hexdigest() == pattern_sha256(64 << 20)


def test_chunked_upload_from_curl_stdin_is_forwarded(relay):
    size = 256 << 20
    # A generator process writes the body into curl's stdin; curl sends it chunked (length unknown).
    echo = curl_chunked_upload(relay.url + "/upload", size, TRANSFER_SECONDS)
    assert echo["body_length"] == size
    assert echo["body_sha256"] == pattern_sha256(size)


@pytest.mark.slow
def test_1gib_upload_is_streamed_with_bounded_relay_memory(relay):
    expected = pattern_sha256(GIB)
    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        t0 = time.monotonic()
        conn.send(build_request("PUT", "/upload", headers=[("Content-Length", str(GIB))]))
        for piece in pattern_chunks(GIB):
            conn.sock.sendall(piece)
        resp = conn.read_final_response(timeout=TRANSFER_SECONDS)
        elapsed = time.monotonic() - t0
    echo = resp.json()
    assert (echo["body_length"], echo["body_sha256"]) == (GIB, expected)
    assert elapsed < scaled(TRANSFER_SECONDS)
    rss = relay.peak_rss_bytes()
    assert rss < MAX_RELAY_RSS, f"relay peak RSS {rss >> 20} MiB"


@pytest.mark.slow
def test_1gib_download_is_streamed_with_bounded_relay_memory(relay):
    expected = pattern_sha256(GIB)
    digest = hashlib.sha256()
    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        t0 = time.monotonic()
        conn.send(build_request("GET", f"/download?bytes={GIB}"))
        resp = conn.read_final_response(timeout=TRANSFER_SECONDS, sink=digest.update)
        elapsed = time.monotonic() - t0
    assert resp.status == 200
    assert resp.body_length == GIB
    assert digest.hexdigest() == expected
    assert elapsed < scaled(TRANSFER_SECONDS)
    rss = relay.peak_rss_bytes()
    assert rss < MAX_RELAY_RSS, f"relay peak RSS {rss >> 20} MiB"


def test_expect_100_continue_with_curl(relay, tmp_path):
    payload = tmp_path / "payload"
    payload.write_bytes(os.urandom(1 << 20))
    # curl would send the body anyway after --expect100-timeout; 60s > --max-time, so only a
    # relayed 100 Continue lets this finish.
    resp = curl(relay.url + "/expect", "-H", "Expect: 100-continue", "--expect100-timeout", "60",
                "--data-binary", f"@{payload}", timeout=10)
    assert resp.returncode == 0, resp.stderr
    assert resp.status == 200
    assert resp.json()["body_length"] == 1 << 20


def test_expect_100_continue_interim_response_arrives_before_the_body(relay):
    with relay.connect() as conn:
        conn.send(build_request("POST", "/expect", headers=[("Expect", "100-continue"), ("Content-Length", "11")]))
        interim = conn.read_response(timeout=5)
        assert interim.status == 100
        conn.send(b"hello world")
        final = conn.read_final_response()
    assert final.status == 200
    assert final.json()["body_length"] == 11


def test_head_response_has_no_body_and_the_connection_stays_usable(relay):
    with relay.connect() as conn:
        head = conn.request("HEAD", "/head-test")
        assert head.status == 200
        assert head.header("Content-Length") == str(HEAD_TEST_LENGTH)
        assert head.body == b""
        after = conn.request("GET", "/after")
        assert after.json()["target"] == "/after"


def test_head_response_for_a_chunked_resource_has_no_body(relay):
    with relay.connect() as conn:
        head = conn.request("HEAD", "/chunked?chunks=3&size=10")
        assert head.status == 200 and head.body == b""
        assert conn.request("GET", "/after").json()["target"] == "/after"


def test_get_of_the_head_test_resource_has_its_body(relay):
    resp = relay.request("GET", "/head-test")
    assert resp.body_length == HEAD_TEST_LENGTH


def test_204_response_has_no_body(relay):
    with relay.connect() as conn:
        resp = conn.request("GET", "/no-content")
        assert resp.status == 204
        assert resp.header("Content-Length") is None and resp.header("Transfer-Encoding") is None
        assert conn.request("GET", "/after").json()["target"] == "/after"


def test_304_response_has_no_body_despite_its_content_length(relay):
    with relay.connect() as conn:
        resp = conn.request("GET", "/not-modified", headers=[("If-None-Match", '"v1"')])
        assert resp.status == 304
        assert resp.header("ETag") == '"v1"'
        assert resp.header("Transfer-Encoding") is None
        assert conn.request("GET", "/after", timeout=3).json()["target"] == "/after"


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_body_to_an_upstream_that_reads_late_arrives_whole_and_in_order(relay, framing):
    # The upstream reads nothing for half a second: the relay's writes of body pieces (which go to
    # the kernel from its read buffer, uncopied) are cut short, the rest is queued behind them, and
    # the client is held back; every byte must still arrive once, in order.
    size = 16 << 20
    fields = [("Content-Length", str(size))] if framing == "content-length" else [("Transfer-Encoding", "chunked")]
    sent = []

    def send_body(conn):
        for piece in pattern_chunks(size):
            conn.sock.sendall(piece if framing == "content-length" else b"%x\r\n%s\r\n" % (len(piece), piece))
        if framing == "chunked":
            conn.sock.sendall(b"0\r\n\r\n")
        sent.append(True)

    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        conn.send(build_request("POST", "/read-late?ms=500", headers=fields))
        sender = threading.Thread(target=send_body, args=(conn,), daemon=True)
        sender.start()
        resp = conn.read_final_response(timeout=TRANSFER_SECONDS)
        sender.join(scaled(5))
    assert sent
    assert resp.status == 200, f"{resp.status}: {resp.body[:300]!r}"
    echo = resp.json()
    assert (echo["body_length"], echo["body_sha256"]) == (size, pattern_sha256(size))
