"""A configuration of 10,000 routes (bench/scale_config.py's mix of exact hosts, wildcard hosts
and path prefixes) starts, routes, and reloads.

The bounds are on the relay's own CPU time (user and system, from /proc), generous (2 s, scaled
by OAUTH_RELAY_TEST_TIME_SCALE) so that a loaded machine cannot make them flake: they catch a
start-up or a reload gone quadratic, not a regression of tens of milliseconds, which
bench/config-scale.sh measures.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from admin_client import log_records, rewrite, start_with_admin
from deadlines import scaled
from http_client import RawConnection
from processes import LOOPBACK

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import scale_config  # noqa: E402

ROUTES = 10_000
CPU_SECONDS = 2.0


def cpu_seconds(pid: int) -> float:
    """User and system time of every thread of `pid`."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scale_routes(upstream, base: str) -> list[dict]:
    return [{"match": match, "upstream": upstream.url + base} for match in scale_config.matches(ROUTES)]


def reload(admin_port: int) -> dict:
    """POST /reload, given as long as a loaded machine may need (the CPU bound is asserted)."""
    with RawConnection(LOOPBACK, admin_port) as conn:
        resp = conn.request("POST", "/reload", headers=[("Connection", "close")], host=f"{LOOPBACK}:{admin_port}",
                            timeout=scaled(60))
    assert resp.status == 200, f"{resp.status}: {resp.body[:300]!r}"
    return resp.json()


def served_target(relay, host: str, path: str) -> str:
    """The request target the echo upstream received for a request through the relay."""
    resp = relay.request("GET", path, host=host)
    assert resp.status == 200, f"{resp.status}: {resp.body[:300]!r}"
    return resp.json()["target"]


def test_ten_thousand_routes_start_route_and_reload(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, scale_routes(upstream, "/v0"), hosts=["*.unmatched.test"])
    started = cpu_seconds(relay.pid)
    assert started < scaled(CPU_SECONDS), f"{started:.2f} s of CPU to start with {ROUTES} routes"
    typical, worst = scale_config.TYPICAL, scale_config.WORST
    assert served_target(relay, typical["host"], "/api/orders") == "/v0/api/orders"
    assert served_target(relay, "a.b.c.unmatched.test", "/p/99999/orders") == "/v0/p/99999/orders"
    assert served_target(relay, "x.tenant-00017.scale.test", "/a") == "/v0/a"

    rewrite(relay, routes=scale_routes(upstream, "/v1"))
    before = cpu_seconds(relay.pid)
    assert reload(admin.port) == {"status": "applied", "routes": ROUTES,
                                  "identities": {"kept": [], "started": [], "removed": []}}
    reloaded = cpu_seconds(relay.pid) - before
    assert reloaded < scaled(CPU_SECONDS), f"{reloaded:.2f} s of CPU to reload {ROUTES} routes"
    assert served_target(relay, typical["host"], "/api/orders") == "/v1/api/orders"
    assert served_target(relay, "a.b.c.unmatched.test", worst["pathPrefix"] + "orders") == "/v1/p/99999/orders"

    # The start-up and reload lines list the first 20 routes and count the rest.
    for msg in ("listening", "configuration reloaded"):
        [record] = log_records(relay, msg)
        assert len(record["routes"]) == 21 and record["routes"][-1] == f"… and {ROUTES - 20} more", record["routes"][-3:]
