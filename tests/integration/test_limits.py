"""Limits enforced by the relay: 431 over `maxHeaderBytes` or over `maxHeaderCount` fields,
without buffering an endless head (heads within the limits pass), and `maxConnections`."""

import os
import subprocess
import time
from pathlib import Path

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
    held = []
    deadline = time.monotonic() + scaled(5)
    while len(held) < 10:
        # The relay's own start-up probe holds a slot until its close is processed: a
        # connection refused meanwhile is tried again.
        conn = relay.connect()
        if conn.is_closed(timeout=0.05):
            conn.close()
            assert time.monotonic() < deadline, f"only {len(held)} of 10 connections within maxConnections were kept"
            continue
        held.append(conn)
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


def relay_cpu_seconds(relay) -> float:
    fields = Path(f"/proc/{relay.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_out_of_descriptors_requests_get_502_at_once_and_service_resumes(start_relay, upstream):
    """With every descriptor in use (a `ulimit -n` below maxConnections), a request whose upstream
    connection cannot even be opened is answered 502 at once, not left waiting; the relay does
    not spin on the listener meanwhile; and once descriptors are free again it serves."""
    relay = start_relay([route(upstream)], limits={"maxConnections": 100_000})
    held = [relay.connect() for _ in range(3)]
    in_use = len(os.listdir(f"/proc/{relay.pid}/fd"))
    subprocess.run(["prlimit", f"--pid={relay.pid}", f"--nofile={in_use + 4}:{in_use + 4}"], check=True)
    flood = [relay.connect() for _ in range(30)]   # takes the last descriptors
    try:
        before = relay_cpu_seconds(relay)
        time.sleep(1)
        assert relay_cpu_seconds(relay) - before < 0.3, "the relay spins while out of descriptors"
        started = time.monotonic()
        resp = held[0].request("GET", "/no-descriptor", timeout=scaled(5))
        assert_problem(resp, 502)
        assert b"EMFILE" in resp.body, resp.body
        assert time.monotonic() - started < scaled(2)
    finally:
        for conn in flood:
            conn.close()
    deadline = time.monotonic() + scaled(5)
    while True:
        resp = held[1].request("GET", "/after", timeout=scaled(5))
        if resp.status == 200:
            break
        assert time.monotonic() < deadline, f"still {resp.status} after the descriptors were freed"
        time.sleep(0.1)
    for conn in held:
        conn.close()
