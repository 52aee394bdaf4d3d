"""Many slow clients at once, driven by slowhttptest (Debian's package): 1,000 connections that
dribble their head (slowloris) or their body (R-U-Dead-Yet). Meanwhile a normal client is
answered; the relay's memory grows by a few KiB per held connection, not more; and every slow
connection is closed at its deadline (`headerTimeoutSeconds`, `requestBodyTimeoutSeconds`).

The relay's descriptor limit is raised for the run (`prlimit`, as root), so that 1,000 clients
fit on any machine, and `maxConnections` is set above them."""

import os
import shutil
import statistics
import subprocess
import threading
import time

import pytest

from deadlines import scaled, wait_until
from processes import LOOPBACK, route

pytestmark = pytest.mark.skipif(shutil.which("slowhttptest") is None or os.geteuid() != 0,
                                reason="needs slowhttptest (scripts/install-deps --test) and root for prlimit")

SLOW_CLIENTS = 1000
# Per held connection: a client connection, its parser and its share of buffers (about 3 KiB
# measured); the bound leaves room for allocator slack, not for a buffer per connection.
MAX_RSS_GROWTH_KIB = 16 * 1024


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def start_slow_relay(start_relay, upstream, limits: dict):
    relay = start_relay([route(upstream)], workers=1, limits={"maxConnections": 4 * SLOW_CLIENTS, **limits})
    for pid in (relay.pid, upstream.proc.pid):
        subprocess.run(["prlimit", f"--pid={pid}", "--nofile=16384:16384"], check=True)
    return relay


def slowhttptest(relay, mode: str, seconds: int, tmp_path) -> subprocess.Popen:
    """slowhttptest in `mode` (-H slow head, -B slow body) against the relay: SLOW_CLIENTS
    connections opened at once, each sending a few bytes every 2 s, for `seconds`."""
    log = open(tmp_path / f"slowhttptest{mode}.log", "w")
    return subprocess.Popen(["prlimit", "--nofile=16384:16384", "slowhttptest", mode, "-c", str(SLOW_CLIENTS),
                             "-r", str(SLOW_CLIENTS), "-i", "2", "-x", "10", "-s", "1000000", "-l", str(seconds),
                             "-p", "3", "-u", f"http://{LOOPBACK}:{relay.port}/slow"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)


class Sampler(threading.Thread):
    """Samples the relay's RSS and open descriptors every 100 ms until stopped."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid = pid
        self.rss: list[int] = []
        self.fds: list[int] = []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.wait(0.1):
            try:
                self.rss.append(rss_kib(self.pid))
                self.fds.append(open_descriptors(self.pid))
            except FileNotFoundError:
                return

    def stop(self):
        self.stopping.set()
        self.join()


def normal_client_latencies(relay, count: int) -> list[float]:
    """`count` requests on one keep-alive connection, one at a time: their latencies."""
    latencies = []
    with relay.connect() as conn:
        for i in range(count):
            started = time.monotonic()
            resp = conn.request("GET", f"/normal/{i}", timeout=scaled(5))
            latencies.append(time.monotonic() - started)
            assert resp.status == 200, f"request {i} of the normal client got {resp.status}"
            time.sleep(0.01)
    return latencies


def run_slow_clients(relay, mode: str, deadline_seconds: float, tmp_path):
    baseline_fds = open_descriptors(relay.pid)
    baseline_rss = rss_kib(relay.pid)
    sampler = Sampler(relay.pid)
    sampler.start()
    attack = slowhttptest(relay, mode, int(deadline_seconds) + 6, tmp_path)
    try:
        wait_until(lambda: open_descriptors(relay.pid) >= baseline_fds + SLOW_CLIENTS * 0.95, 10,
                   f"{SLOW_CLIENTS} slow connections held by the relay")
        latencies = normal_client_latencies(relay, 100)
        # Every slow connection is closed at its deadline (counted from the accept or the head),
        # while slowhttptest keeps dribbling.
        wait_until(lambda: open_descriptors(relay.pid) <= baseline_fds + 10, deadline_seconds + 5,
                   "the slow connections closed at their deadline")
    finally:
        attack.kill()
        attack.wait()
        sampler.stop()
    growth = max(sampler.rss) - baseline_rss
    print(f"\n{mode}: peak {max(sampler.fds) - baseline_fds} connections, RSS {baseline_rss} KiB + {growth} KiB "
          f"({growth * 1024 // SLOW_CLIENTS} B per connection); normal client median "
          f"{statistics.median(latencies) * 1000:.1f} ms, max {max(latencies) * 1000:.1f} ms")
    assert growth < MAX_RSS_GROWTH_KIB, f"RSS grew by {growth} KiB for {SLOW_CLIENTS} slow connections"
    assert max(latencies) < scaled(1), f"a normal request took {max(latencies):.2f}s among the slow clients"
    return sampler


def test_slowloris_heads_are_closed_at_the_header_deadline_and_others_are_served(start_relay, upstream, tmp_path):
    relay = start_slow_relay(start_relay, upstream, {"headerTimeoutSeconds": 6})
    run_slow_clients(relay, "-H", 6, tmp_path)
    # Only complete heads go upstream: the normal client's and slowhttptest's probes (a plain
    # GET every few seconds), over the one or two pooled connections they need.
    stats = upstream.stats()
    assert stats["connections_accepted"] <= 3, f"slow heads reached the upstream: {stats}"


def test_dribbled_bodies_are_closed_at_the_body_deadline_and_others_are_served(start_relay, upstream, tmp_path):
    # Each slow body holds an upstream connection until its deadline: the upstream sees them
    # all begin and none end.
    relay = start_slow_relay(start_relay, upstream, {"requestBodyTimeoutSeconds": 6})
    run_slow_clients(relay, "-B", 6, tmp_path)
    stats = upstream.stats()
    assert stats["connections_accepted"] >= SLOW_CLIENTS, stats
    # Open: at most the idle pooled connection of the normal client and the probes.
    assert stats["connections_open"] <= 2, f"upstream connections of cut-off bodies stayed open: {stats}"
