"""Limits enforced by the relay: 431 over `maxHeaderBytes` or over `maxHeaderCount` fields,
without buffering an endless head (heads within the limits pass), and `maxConnections`."""

import time

from deadlines import scaled
from http_client import assert_problem, build_request
from processes import route

LIMITS = {"maxHeaderBytes": 4096, "maxHeaderCount": 10}


def test_header_block_over_max_header_bytes_gets_431(start_relay, upstream):
    relay = start_relay([route(upstream)], limits=LIMITS)
    assert_problem(relay.request(headers=[("X-Big", "a" * 6000)]), 431)
    assert upstream.stats()["requests_started"] == 0


def test_many_small_headers_over_max_header_bytes_get_431(start_relay, upstream):
    relay = start_relay([route(upstream)], limits={"maxHeaderBytes": 4096, "maxHeaderCount": 1000})
    assert_problem(relay.request(headers=[(f"X-H{i}", "v" * 60) for i in range(100)]), 431)


def test_more_header_fields_than_max_header_count_get_431(start_relay, upstream):
    relay = start_relay([route(upstream)], limits=LIMITS)
    assert_problem(relay.request(headers=[(f"X-H{i}", "1") for i in range(20)]), 431)
    assert upstream.stats()["requests_started"] == 0


def test_exactly_max_header_count_fields_are_accepted(start_relay, upstream):
    relay = start_relay([route(upstream)], limits=LIMITS)
    resp = relay.request(headers=[(f"X-H{i}", "1") for i in range(LIMITS["maxHeaderCount"] - 1)])  # + Host
    assert resp.status == 200
    assert resp.echo_headers("X-H8") == ["1"]


def test_header_block_well_under_max_header_bytes_is_accepted(start_relay, upstream):
    relay = start_relay([route(upstream)], limits=LIMITS)
    resp = relay.request(headers=[("X-Big", "a" * 2000)])
    assert resp.status == 200
    assert resp.echo_headers("X-Big") == ["a" * 2000]


def test_431_is_sent_before_an_oversized_head_ends(start_relay, upstream):
    relay = start_relay([route(upstream)], limits=LIMITS)
    with relay.connect() as conn:
        # 8 KiB of a head that never ends: the relay must answer from what it has.
        conn.send(build_request("GET", "/").rstrip(b"\r\n") + b"\r\nX-Big: " + b"a" * 8192)
        assert_problem(conn.read_response(), 431)


def test_connections_over_max_connections_are_closed_at_once_and_service_resumes(start_relay, upstream):
    """`limits.maxConnections` counts the process's client connections: those over it are closed
    as soon as they are accepted, the ones within it are served, and once they close new ones
    are served again."""
    relay = start_relay([route(upstream)], limits={"maxConnections": 10}, workers=2)
    held = [relay.connect() for _ in range(10)]
    try:
        for conn in held:
            assert conn.request("GET", "/held").status == 200
        over = [relay.connect() for _ in range(5)]
        for conn in over:
            assert conn.is_closed(timeout=5), "a connection over maxConnections stayed open"
            assert conn.buf == b""
            conn.close()
        assert held[0].request("GET", "/still").status == 200, "a connection within the limit stopped being served"
    finally:
        for conn in held:
            conn.close()
    deadline = time.monotonic() + scaled(5)
    while True:
        with relay.connect() as conn:
            if not conn.is_closed(timeout=0.2):
                assert conn.request("GET", "/after").status == 200
                break
        assert time.monotonic() < deadline, "no connection was served after the held ones closed"
