"""Upgrade: websocket is tunnelled after the upstream's 101; an upgrade the upstream declines is an
ordinary response."""

import base64
import hashlib
import os
import threading

from deadlines import scaled
from echo_upstream import WEBSOCKET_GUID, encode_frame
from http_client import assert_closed


def websocket_headers(key: str):
    return [("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13")]


def open_websocket(relay, target="/ws"):
    key = base64.b64encode(os.urandom(16)).decode()
    conn = relay.connect(timeout=10)
    resp = conn.request("GET", target, headers=websocket_headers(key))
    assert resp.status == 101, f"{resp.status}: {resp.body[:500]!r}"
    assert resp.header("Upgrade").lower() == "websocket"
    assert "upgrade" in resp.header("Connection").lower()
    expected = base64.b64encode(hashlib.sha1(key.encode() + WEBSOCKET_GUID).digest()).decode()
    assert resp.header("Sec-WebSocket-Accept") == expected
    return conn


def read_frame(conn) -> tuple[int, bytes]:
    b0, b1 = conn.read_exact(2)
    assert not b1 & 0x80, "server frames must not be masked"
    n = b1 & 0x7F
    if n == 126:
        n = int.from_bytes(conn.read_exact(2), "big")
    elif n == 127:
        n = int.from_bytes(conn.read_exact(8), "big")
    return b0, conn.read_exact(n)


def test_websocket_upgrade_is_tunnelled_and_frames_are_echoed(relay):
    with open_websocket(relay) as conn:
        conn.send(encode_frame(0x81, b"hello relay", mask=os.urandom(4)))
        assert read_frame(conn) == (0x81, b"hello relay")
        conn.send(encode_frame(0x89, b"ping!", mask=os.urandom(4)))
        assert read_frame(conn) == (0x8A, b"ping!")


def test_websocket_large_binary_frame_round_trips(relay):
    payload = os.urandom(1 << 20)
    with open_websocket(relay) as conn:
        conn.send(encode_frame(0x82, payload, mask=os.urandom(4)))
        assert read_frame(conn) == (0x82, payload)


def test_websocket_close_handshake_ends_the_tunnel(relay):
    with open_websocket(relay) as conn:
        conn.send(encode_frame(0x88, b"\x03\xe8bye", mask=os.urandom(4)))
        assert read_frame(conn) == (0x88, b"\x03\xe8bye")
        assert_closed(conn)


def test_raw_bytes_flow_both_ways_after_the_upgrade(relay):
    data = os.urandom(8 << 20)
    sent = []

    def send_all(conn):
        try:
            conn.sock.sendall(data)
            sent.append(True)
        except OSError:  # the reading side failed first and closed the socket
            pass

    with open_websocket(relay, "/ws?raw=1") as conn:
        sender = threading.Thread(target=send_all, args=(conn,), daemon=True)
        sender.start()
        echoed = conn.read_exact(len(data), timeout=20)
        sender.join(scaled(5))
    assert sent and echoed == data


def test_upgrade_declined_by_the_upstream_is_an_ordinary_response(relay):
    key = base64.b64encode(os.urandom(16)).decode()
    with relay.connect() as conn:
        resp = conn.request("GET", "/status/200", headers=websocket_headers(key))
    assert resp.status == 200
    assert resp.json()["target"] == "/status/200"
