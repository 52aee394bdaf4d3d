"""Content-Length bodies between plain sockets move by splice(2), never through the relay's read
buffer: the relay's read(2) bytes (/proc/<pid>/io rchar) stay far below the body's size (what a
slow receiver left in the pipe is read back out, and reads resume while its backlog drains; a
relay that reads every byte reads the body's size or more), and the
body arrives whole (checksum), with what follows it on the same connection intact. A body that
ends early (the upstream or the client resets mid-body) ends the exchange as a read would.
"""

import hashlib
import socket
import struct
import threading
import time

from echo_upstream import pattern_chunks, pattern_sha256
from http_client import ConnectionClosed, build_request
from processes import route

MIB = 1 << 20
SIZE = 64 * MIB
TRANSFER_SECONDS = 30


def read_bytes(relay) -> int:
    """Bytes the relay process got from read(2) and its kind so far (not from splice)."""
    for line in open(f"/proc/{relay.pid}/io"):
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def test_a_large_download_is_spliced_and_arrives_whole(relay):
    digest = hashlib.sha256()
    before = read_bytes(relay)
    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        conn.send(build_request("GET", f"/download?bytes={SIZE}"))
        resp = conn.read_final_response(timeout=TRANSFER_SECONDS, sink=digest.update)
    assert (resp.status, resp.body_length) == (200, SIZE)
    assert digest.hexdigest() == pattern_sha256(SIZE)
    read = read_bytes(relay) - before
    assert read < SIZE // 2, f"the relay read {read >> 20} MiB of a {SIZE >> 20} MiB body"


def test_a_large_upload_is_spliced_and_arrives_whole(relay):
    before = read_bytes(relay)
    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        conn.send(build_request("PUT", "/upload", headers=[("Content-Length", str(SIZE))]))
        for piece in pattern_chunks(SIZE):
            conn.sock.sendall(piece)
        resp = conn.read_final_response(timeout=TRANSFER_SECONDS)
    echo = resp.json()
    assert (echo["body_length"], echo["body_sha256"]) == (SIZE, pattern_sha256(SIZE))
    read = read_bytes(relay) - before
    assert read < SIZE // 2, f"the relay read {read >> 20} MiB of a {SIZE >> 20} MiB body"


def test_a_request_pipelined_behind_a_spliced_body_is_answered_after_it(relay):
    size = 8 * MIB
    body = b"".join(bytes(p) for p in pattern_chunks(size))
    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        before = read_bytes(relay)
        conn.send(build_request("POST", "/upload", body=body) + build_request("GET", "/after?x=1"))
        first = conn.read_response(timeout=TRANSFER_SECONDS).json()
        second = conn.read_response(timeout=TRANSFER_SECONDS).json()
        read = read_bytes(relay) - before
    assert (first["body_length"], first["body_sha256"]) == (size, pattern_sha256(size))
    assert (second["method"], second["target"], second["body_length"]) == ("GET", "/after?x=1", 0)
    assert second["connection_id"] == first["connection_id"], "the upstream connection went on after the spliced body"
    assert read < size // 2, f"the relay read {read >> 20} MiB of an {size >> 20} MiB body"


def test_the_exchanges_after_a_spliced_download_go_on_on_both_connections(relay):
    size = 4 * MIB
    with relay.connect(timeout=TRANSFER_SECONDS) as conn:
        for _ in range(2):
            digest = hashlib.sha256()
            conn.send(build_request("GET", f"/download?bytes={size}"))
            resp = conn.read_response(timeout=TRANSFER_SECONDS, sink=digest.update)
            assert (resp.status, resp.body_length, digest.hexdigest()) == (200, size, pattern_sha256(size))
        echo = conn.request("GET", "/small").json()
    assert echo["request_index_on_connection"] == 2, "the pooled upstream connection served all three"


class ResettingUpstream:
    """Answers each request with a head declaring 64 MiB and `sent` bytes of it, then resets the
    connection (SO_LINGER 0)."""

    def __init__(self, sent: int):
        self.sent = sent
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                data = conn.recv(65536)
                if not data:
                    return
                head += data
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\n\r\n".encode())
            conn.sendall(b"x" * self.sent)
            time.sleep(0.5)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def close(self):
        self.sock.close()


def test_an_upstream_that_resets_mid_body_cuts_the_download_and_the_relay_serves_on(start_relay, upstream):
    resetting = ResettingUpstream(sent=8 * MIB)
    try:
        relay = start_relay([route(resetting.url, "/reset", name="reset"), route(upstream, "/", name="echo")])
        got = []
        with relay.connect(timeout=TRANSFER_SECONDS) as conn:
            conn.send(build_request("GET", "/reset"))
            try:
                conn.read_response(timeout=TRANSFER_SECONDS, sink=lambda b: got.append(len(b)))
                raise AssertionError("the response was complete")
            except ConnectionClosed:
                pass
        assert 0 < sum(got) < SIZE
        assert relay.request("GET", "/after").json()["target"] == "/after"
    finally:
        resetting.close()


def test_a_client_that_resets_mid_upload_ends_the_upstreams_request_and_the_relay_serves_on(relay, upstream):
    stats_before = upstream.stats()
    conn = socket.create_connection(("127.0.0.1", relay.port), timeout=TRANSFER_SECONDS)
    conn.sendall(build_request("PUT", "/upload", headers=[("Content-Length", str(SIZE))]))
    sent = 0
    for piece in pattern_chunks(8 * MIB):
        conn.sendall(piece)
        sent += len(piece)
    time.sleep(0.3)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and upstream.stats()["connections_open"] > stats_before["connections_open"]:
        time.sleep(0.1)
    assert upstream.stats()["connections_open"] == stats_before["connections_open"], "the upstream connection closed too"
    assert relay.request("GET", "/after").json()["target"] == "/after"


def test_a_client_that_resets_mid_download_leaves_the_relay_serving(relay, upstream):
    conn = socket.create_connection(("127.0.0.1", relay.port), timeout=TRANSFER_SECONDS)
    conn.sendall(build_request("GET", f"/download?bytes={SIZE}"))
    got = 0
    while got < 8 * MIB:
        got += len(conn.recv(MIB))
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
    digest = hashlib.sha256()
    with relay.connect(timeout=TRANSFER_SECONDS) as again:
        again.send(build_request("GET", f"/download?bytes={4 * MIB}"))
        resp = again.read_response(timeout=TRANSFER_SECONDS, sink=digest.update)
    assert (resp.status, digest.hexdigest()) == (200, pattern_sha256(4 * MIB))
