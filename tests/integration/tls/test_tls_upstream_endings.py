"""How a TLS upstream's connection ends, as the relay's client sees it: the relay reads a TLS
upstream's socket through OpenSSL itself (readiness reported, OpenSSL receiving), so the end of
stream, a reset and close_notify are met there. A close-delimited body is complete only after
close_notify; an end without it, or a reset inside a record, must not reach the client looking
complete, and the relay goes on serving.

The upstream is scripted: Python's TLS over memory buffers (ssl.SSLObject), its records written
to the socket by hand, so a record can be cut where the test says."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time

import pytest

from http_client import ConnectionClosed, build_request
from tls_relay import tls_route

pytestmark = pytest.mark.tls

IO_TIMEOUT = 10
BODY = bytes(range(256)) * 160  # 40 KiB: three records, the last one cut by the cuts below
CUT = 100  # bytes of ciphertext held back from the end: inside the last record


class ScriptedTLSUpstream:
    """Accepts TLS connections on 127.0.0.1; to each request head it answers `response`, and
    ends the connection by `ending`:
      close_notify          the response, close_notify, FIN
      fin                   the response, FIN (no close_notify)
      fin_inside_record     all but the last CUT bytes of ciphertext, FIN
      reset_inside_record   all but the last CUT bytes of ciphertext, then a reset (RST)"""

    def __init__(self, pki, response: bytes, ending: str):
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(pki.server.cert), str(pki.server.key))
        self.response = response
        self.ending = ending
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self.listener.getsockname()[1]}"
        self.errors: list[str] = []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = self.context.wrap_bio(incoming, outgoing, server_side=True)
        conn.settimeout(IO_TIMEOUT)
        try:
            self._call(conn, tls, incoming, outgoing, tls.do_handshake)
            head = b""
            while b"\r\n\r\n" not in head:
                head += self._call(conn, tls, incoming, outgoing, lambda: tls.read(65536))
            tls.write(self.response)
            if self.ending == "close_notify":
                try:
                    tls.unwrap()
                except ssl.SSLWantReadError:
                    pass  # the relay's close_notify is not awaited
            ciphertext = outgoing.read()
            if self.ending.endswith("_inside_record"):
                ciphertext = ciphertext[:-CUT]
            conn.sendall(ciphertext)
            if self.ending == "reset_inside_record":
                time.sleep(0.2)  # the relay reads what came before the reset
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                conn.shutdown(socket.SHUT_WR)
                conn.settimeout(1)
                try:
                    while conn.recv(65536):
                        pass
                except OSError:
                    pass
        except Exception as e:  # noqa: BLE001 (reported by the test)
            self.errors.append(repr(e))
        finally:
            conn.close()

    @staticmethod
    def _call(conn, tls, incoming, outgoing, operation):
        """Runs `operation` on the TLS object, moving ciphertext until it completes."""
        while True:
            try:
                result = operation()
                if outgoing.pending:
                    conn.sendall(outgoing.read())
                return result
            except ssl.SSLWantReadError:
                if outgoing.pending:
                    conn.sendall(outgoing.read())
                data = conn.recv(65536)
                if not data:
                    raise ConnectionError("the relay closed during the exchange") from None
                incoming.write(data)

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def scripted_upstream(tls_pki):
    started = []

    def start(response: bytes, ending: str) -> ScriptedTLSUpstream:
        upstream = ScriptedTLSUpstream(tls_pki, response, ending)
        started.append(upstream)
        return upstream

    yield start
    for upstream in started:
        upstream.close()


def close_delimited(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/octet-stream\r\n\r\n" + body


def with_length(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/octet-stream\r\n\r\n" % len(body) + body


def get(relay):
    with relay.connect(timeout=IO_TIMEOUT) as conn:
        conn.send(build_request("GET", "/file"))
        return conn.read_final_response(timeout=IO_TIMEOUT)


def assert_not_complete(relay, upstream) -> None:
    """The client does not get the response looking complete (the connection closes inside it,
    or a 502 if nothing had gone), and the relay answers the next request as usual."""
    try:
        got = get(relay)
    except ConnectionClosed:
        pass
    else:
        assert got.status == 502, f"a cut response reached the client looking complete: {got.status} {len(got.body)} bytes"
    assert not upstream.errors, upstream.errors


def test_tls_close_delimited_body_ended_by_close_notify_is_complete(scripted_upstream, tls_pki, start_relay):
    upstream = scripted_upstream(close_delimited(BODY), "close_notify")
    relay = start_relay([tls_route(upstream.url, caFile=tls_pki.ca.cert)])
    for _ in range(2):
        got = get(relay)
        assert (got.status, got.body) == (200, BODY)
    assert not upstream.errors, upstream.errors


def test_tls_close_delimited_body_ended_without_close_notify_is_truncated(scripted_upstream, tls_pki, start_relay):
    upstream = scripted_upstream(close_delimited(BODY), "fin")
    relay = start_relay([tls_route(upstream.url, caFile=tls_pki.ca.cert)])
    for _ in range(2):
        assert_not_complete(relay, upstream)


@pytest.mark.parametrize("ending", ["fin_inside_record", "reset_inside_record"])
def test_tls_upstream_cut_inside_a_record_is_not_a_complete_response(scripted_upstream, tls_pki, start_relay, ending):
    for response in (with_length(BODY), close_delimited(BODY)):
        upstream = scripted_upstream(response, ending)
        relay = start_relay([tls_route(upstream.url, caFile=tls_pki.ca.cert)])
        for _ in range(2):
            assert_not_complete(relay, upstream)
