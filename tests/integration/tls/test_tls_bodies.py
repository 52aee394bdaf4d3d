"""Large bodies over TLS, streamed: 64 MiB each way through the relay to the nginx upstream (which
proxies /echo/ to the echo upstream unbuffered), checked by SHA-256, with the relay's peak memory
bounded: it must not hold a body."""

import hashlib
import time

import pytest

from deadlines import scaled
from echo_upstream import pattern_chunks, pattern_sha256
from http_client import build_request, curl_chunked_upload
from tls_relay import tls_route

pytestmark = pytest.mark.tls

MIB = 1 << 20
SIZE = 64 * MIB
TRANSFER_SECONDS = 30
MAX_RELAY_RSS = 100 * MIB
# Peak RSS growth allowed while a 64 MiB body goes through (a buffered body would be >= 64 MiB).
MAX_RSS_GROWTH = 24 * MIB


@pytest.fixture
def tls_echo_relay(start_nginx_tls, upstream, tls_pki, start_relay):
    """A relay whose only route is https to nginx, which proxies /echo/ to the echo upstream; one
    small request has warmed it (TLS contexts loaded, one upstream connection made)."""
    nginx = start_nginx_tls(echo=upstream)
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert)])
    assert relay.request("GET", "/echo/warm-up").json()["target"] == "/warm-up"
    return relay


def assert_bounded_memory(relay, before: int) -> None:
    peak = relay.peak_rss_bytes()
    assert peak < MAX_RELAY_RSS, f"relay peak RSS {peak >> 20} MiB"
    assert peak - before < MAX_RSS_GROWTH, f"relay peak RSS grew by {(peak - before) >> 20} MiB during the transfer"


def test_tls_64_mib_download_is_streamed(tls_echo_relay):
    relay = tls_echo_relay
    before = relay.peak_rss_bytes()
    digest = hashlib.sha256()
    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        t0 = time.monotonic()
        conn.send(build_request("GET", f"/echo/download?bytes={SIZE}"))
        resp = conn.read_final_response(timeout=TRANSFER_SECONDS, sink=digest.update)
        elapsed = time.monotonic() - t0
    assert resp.status == 200 and resp.body_length == SIZE
    assert digest.hexdigest() == pattern_sha256(SIZE)
    assert elapsed < scaled(TRANSFER_SECONDS)
    assert_bounded_memory(relay, before)


def test_tls_64_mib_upload_is_streamed(tls_echo_relay):
    relay = tls_echo_relay
    before = relay.peak_rss_bytes()
    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        t0 = time.monotonic()
        conn.send(build_request("PUT", "/echo/upload", headers=[("Content-Length", str(SIZE))]))
        for piece in pattern_chunks(SIZE):
            conn.sock.sendall(piece)
        resp = conn.read_final_response(timeout=TRANSFER_SECONDS)
        elapsed = time.monotonic() - t0
    assert resp.status == 200, resp.body[:500]
    echo = resp.json()
    assert (echo["target"], echo["body_length"], echo["body_sha256"]) == ("/upload", SIZE, pattern_sha256(SIZE))
    assert elapsed < scaled(TRANSFER_SECONDS)
    assert_bounded_memory(relay, before)


def test_tls_chunked_upload_from_curl_is_streamed(tls_echo_relay):
    relay = tls_echo_relay
    size = 16 * MIB
    # curl reads the body from a generator on stdin: length unknown, so it is sent chunked.
    echo = curl_chunked_upload(relay.url + "/echo/upload", size, TRANSFER_SECONDS)
    assert (echo["body_length"], echo["body_sha256"]) == (size, pattern_sha256(size))


def test_tls_many_responses_on_one_connection_after_a_large_one(tls_echo_relay):
    # After 8 MiB went through, the TLS connection is in a clean state: the next answers parse.
    relay = tls_echo_relay
    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        big = conn.request("GET", f"/echo/download?bytes={8 * MIB}", timeout=TRANSFER_SECONDS)
        assert big.body_length == 8 * MIB and hashlib.sha256(big.body).hexdigest() == pattern_sha256(8 * MIB)
        for i in range(5):
            assert conn.request("GET", f"/echo/small/{i}").json()["target"] == f"/small/{i}"
