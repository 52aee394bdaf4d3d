"""Prometheus metrics at `GET /metrics` on the admin listener (no identities; the echo upstream):
requests by route and status class, the duration histograms, upstream errors by kind, open
connections, configuration reloads, the exposition format itself, and no metrics (nothing
listening besides the relay) without an admin listener.

The per-request series carry a `worker` label; the checks sum over it (the relay's totals).
Counters are read after a `wait_until` for them to reach the expected value (a request is
counted when its exchange ends, which may be just after the client read the answer), then
compared exactly, so a count too high fails too."""

from __future__ import annotations

import json
import math
import os
import time

import pytest

from admin_client import Metrics, start_with_admin
from deadlines import scaled, wait_until
from http_client import RawConnection, assert_problem, build_request
from processes import LOOPBACK, route

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, math.inf]
HISTOGRAMS = ("oauth_relay_request_duration_seconds", "oauth_relay_upstream_duration_seconds")


def series_key(sample) -> tuple:
    return tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))


def assert_histograms_consistent(m: Metrics, name: str) -> None:
    """Every series of histogram `name`: the documented buckets, cumulative counts, +Inf equal
    to _count, and a _sum that is not negative."""
    buckets: dict[tuple, list] = {}
    for s in m.samples(name + "_bucket"):
        buckets.setdefault(series_key(s), []).append((float(s.labels["le"]), s.value))
    counts = {series_key(s): s.value for s in m.samples(name + "_count")}
    sums = {series_key(s): s.value for s in m.samples(name + "_sum")}
    assert set(buckets) == set(counts) == set(sums), f"{name}: bucket, _count and _sum series differ"
    for key, pairs in buckets.items():
        pairs.sort()
        assert [le for le, _ in pairs] == BUCKETS, f"{name}{dict(key)}: buckets {[le for le, _ in pairs]}"
        values = [v for _, v in pairs]
        assert values == sorted(values), f"{name}{dict(key)}: buckets not cumulative: {values}"
        assert values[-1] == counts[key], f"{name}{dict(key)}: +Inf bucket {values[-1]} != _count {counts[key]}"
        assert sums[key] >= 0, f"{name}{dict(key)}: _sum {sums[key]}"


def tcp_sockets(pid: int) -> list[tuple[int, str]]:
    """(local port, state) of the TCP sockets process `pid` holds open (Linux /proc; state "0A"
    is LISTEN, "01" ESTABLISHED)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:["):-1])
    sockets = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if fields[9] in inodes:
                sockets.append((int(fields[1].rsplit(":", 1)[1], 16), fields[3]))
    return sockets


def listening_ports(pid: int) -> set[int]:
    return {port for port, state in tcp_sockets(pid) if state == "0A"}


# ---------------------------------------------------------------------------------------------
# Requests and durations.

def test_requests_are_counted_by_route_and_status_class_over_workers(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")], workers=2)
    statuses = []
    for c in range(4):  # 4 keep-alive connections with 3 requests each
        with relay.connect() as conn:
            statuses += [conn.request("GET", f"/keep/{c}/{i}").status for i in range(3)]
    for i in range(8):  # and 8 connections with one request each
        statuses.append(relay.request("GET", f"/new/{i}", headers=[("Connection", "close")]).status)
    assert statuses == [200] * 20

    m = admin.wait_for(lambda m: m.total("oauth_relay_requests_total", route="echo") >= 20
                       and m.total("oauth_relay_request_duration_seconds_count", route="echo") >= 20
                       and m.total("oauth_relay_upstream_duration_seconds_count", route="echo") >= 20,
                       "20 requests of route echo counted")
    assert m.by("oauth_relay_requests_total", "status_class", route="echo") == {"2xx": 20}
    assert m.total("oauth_relay_request_duration_seconds_count", route="echo") == 20
    assert m.total("oauth_relay_upstream_duration_seconds_count", route="echo") == 20
    request_sum = m.total("oauth_relay_request_duration_seconds_sum", route="echo")
    upstream_sum = m.total("oauth_relay_upstream_duration_seconds_sum", route="echo")
    assert 0 < upstream_sum <= request_sum, (upstream_sum, request_sum)
    assert request_sum < scaled(20), f"20 loopback requests took {request_sum}s in total?"
    for name in HISTOGRAMS:
        assert_histograms_consistent(m, name)
    workers = {s.labels.get("worker") for s in m.samples("oauth_relay_requests_total")}
    assert None not in workers and len(workers) <= 2, f"worker labels {workers} with workers=2"
    # Nothing else was counted: no other route, no error.
    assert set(m.by("oauth_relay_requests_total", "route")) == {"echo"}
    assert m.samples("oauth_relay_upstream_errors_total") == []


def test_durations_are_in_seconds(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")])
    assert relay.request("GET", "/slow?ms=300", timeout=10).status == 200
    m = admin.wait_for(lambda m: m.total("oauth_relay_request_duration_seconds_count", route="echo") >= 1,
                       "the slow request counted")
    upstream_sum = m.total("oauth_relay_upstream_duration_seconds_sum", route="echo")
    request_sum = m.total("oauth_relay_request_duration_seconds_sum", route="echo")
    assert 0.3 <= upstream_sum <= request_sum < 0.3 + scaled(3), (upstream_sum, request_sum)
    for name in HISTOGRAMS:
        bucket = m.by(name + "_bucket", "le", route="echo")
        # le as the relay writes it ("0.25", "+Inf"): compare as numbers.
        at = {float(le): v for le, v in bucket.items()}
        assert at[0.25] == 0 and at[math.inf] == 1, f"{name} buckets {at}"
        assert_histograms_consistent(m, name)


def test_unnamed_route_is_labelled_by_its_position(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/api/", name="api"), route(upstream, "/")])
    assert relay.request("GET", "/other").status == 200
    m = admin.wait_for(lambda m: m.total("oauth_relay_requests_total") >= 1, "the request counted")
    assert m.by("oauth_relay_requests_total", "route") == {"routes[1]": 1}


def test_no_route_is_counted_as_4xx_under_the_empty_route(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/api/", name="api")])
    assert_problem(relay.request("GET", "/other"), 404)
    assert relay.request("GET", "/api/x").status == 200
    m = admin.wait_for(lambda m: m.total("oauth_relay_requests_total") >= 2, "both requests counted")
    assert m.by("oauth_relay_requests_total", "status_class", route="") == {"4xx": 1}
    assert m.by("oauth_relay_requests_total", "status_class", route="api") == {"2xx": 1}
    assert upstream.stats()["requests_served"] == 1


@pytest.mark.parametrize("raw, status, limits", [
    (b"GARBAGE\r\n\r\n", 400, None),
    (b"GET / HTTP/1.1\r\nHost: relay.test\r\nX-Bad: a\x00b\r\n\r\n", 400, None),
    (build_request("GET", "/", headers=[(f"X-H{i}", "v") for i in range(10)]), 431, {"maxHeaderCount": 5}),
], ids=["garbage", "nul-in-header", "too-many-headers"])
def test_malformed_request_is_counted_as_4xx_under_the_empty_route(start_relay, upstream, raw, status, limits):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")], limits=limits)
    with relay.connect() as conn:
        conn.send(raw)
        assert_problem(conn.read_response(), status)
    m = admin.wait_for(lambda m: m.total("oauth_relay_requests_total") >= 1, "the rejected request counted")
    assert m.by("oauth_relay_requests_total", "status_class", route="") == {"4xx": 1}
    assert m.by("oauth_relay_requests_total", "route") == {"": 1}
    assert upstream.stats()["requests_started"] == 0


def test_malformed_request_after_a_valid_one_counts_both(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")])
    with relay.connect() as conn:
        assert conn.request("GET", "/fine").status == 200
        conn.send(b"NOT A REQUEST\r\n\r\n")
        assert_problem(conn.read_response(), 400)
    m = admin.wait_for(lambda m: m.total("oauth_relay_requests_total") >= 2, "both requests counted")
    assert m.by("oauth_relay_requests_total", "status_class", route="echo") == {"2xx": 1}
    assert m.by("oauth_relay_requests_total", "status_class", route="") == {"4xx": 1}


def test_header_timeout_is_counted_as_4xx_under_the_empty_route(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")],
                                    limits={"headerTimeoutSeconds": 1})
    with relay.connect() as conn:
        conn.send(b"GET / HTTP/1.1\r\nHost: relay.test\r\nX-Partial: ")
        assert_problem(conn.read_response(timeout=5), 408)
    m = admin.wait_for(lambda m: m.total("oauth_relay_requests_total") >= 1, "the 408 counted")
    assert m.by("oauth_relay_requests_total", "status_class", route="") == {"4xx": 1}
    assert m.by("oauth_relay_requests_total", "route") == {"": 1}


# ---------------------------------------------------------------------------------------------
# Upstream errors.

# kind, the upstream (fixture name or "echo"), target, limits, status, whether an upstream head was timed
UPSTREAM_FAILURES = [
    ("connect", "closed_port", "/x", None, 502),
    ("connect_timeout", "blackhole_port", "/x", {"upstreamConnectTimeoutSeconds": 0.5}, 504),
    ("response_timeout", "echo", "/slow?ms=5000", {"upstreamResponseTimeoutSeconds": 0.5}, 504),
    ("closed", "echo", "/close-early", None, 502),
    ("bad_response", "echo", "/bad-framing", None, 502),
]


@pytest.mark.parametrize("kind, target_upstream, target, limits, status", UPSTREAM_FAILURES,
                         ids=[f[0] for f in UPSTREAM_FAILURES])
def test_upstream_failure_is_counted_by_kind(request, start_relay, upstream, kind, target_upstream, target,
                                             limits, status):
    if target_upstream == "echo":
        url = upstream.url
    else:
        url = f"http://{LOOPBACK}:{request.getfixturevalue(target_upstream)}"
    relay, admin = start_with_admin(start_relay, [route(url, "/", name="r")], limits=limits)
    assert_problem(relay.request("GET", target, timeout=10), status, route="r")
    m = admin.wait_for(lambda m: m.total("oauth_relay_requests_total", route="r") >= 1
                       and m.total("oauth_relay_upstream_errors_total", route="r") >= 1,
                       f"the {status} and the {kind} error counted")
    assert m.by("oauth_relay_upstream_errors_total", "kind", route="r") == {kind: 1}
    assert m.by("oauth_relay_requests_total", "status_class", route="r") == {"5xx": 1}
    if kind != "bad_response":  # no upstream response head came: nothing to time
        assert m.total("oauth_relay_upstream_duration_seconds_count", route="r") == 0


# ---------------------------------------------------------------------------------------------
# Connections.

def test_client_connections_gauge_follows_open_connections(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")], workers=2)
    k = 5
    conns = [relay.connect() for _ in range(k)]
    try:
        for i, conn in enumerate(conns):
            assert conn.request("GET", f"/c/{i}").status == 200
        # The admin connection of each scrape is not a client connection.
        admin.wait_for(lambda m: m.total("oauth_relay_connections", side="client") == k,
                       f"{k} open client connections")
        conns[0].close()
        conns[1].close()
        admin.wait_for(lambda m: m.total("oauth_relay_connections", side="client") == k - 2,
                       f"{k - 2} open client connections after closing 2")
    finally:
        for conn in conns:
            conn.close()
    m = admin.wait_for(lambda m: m.total("oauth_relay_connections", side="client") == 0,
                       "no open client connection after closing all")
    assert all(s.value >= 0 for s in m.samples("oauth_relay_connections")), m.summary()


def test_upstream_connections_gauge_counts_pooled_connections(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")], workers=2)
    for i in range(6):
        assert relay.request("GET", f"/p/{i}").status == 200
    # The client connections are closed; the pooled upstream ones stay open, as the upstream sees.
    state = {}

    def matches_the_upstream(m: Metrics) -> bool:
        state["relay"] = m.total("oauth_relay_connections", side="upstream")
        state["upstream"] = upstream.stats()["connections_open"]
        return state["relay"] == state["upstream"] > 0

    admin.wait_for(matches_the_upstream, "the upstream-side gauge to equal the upstream's open connections (> 0)")
    assert state["relay"] <= 2, f"{state['relay']} pooled connections for sequential requests with 2 workers"


def test_upstream_connections_gauge_drops_when_the_upstream_closes(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")])
    assert relay.request("GET", "/?idle-close-ms=100").status == 200
    wait_until(lambda: upstream.stats()["connections_open"] == 0, 5, "the upstream to close its idle connection")
    admin.wait_for(lambda m: m.total("oauth_relay_connections", side="upstream") == 0,
                   "the upstream-side gauge back to 0 after the upstream closed")


# ---------------------------------------------------------------------------------------------
# The exposition.

EXPECTED_TYPES = {
    "oauth_relay_requests": "counter",
    "oauth_relay_request_duration_seconds": "histogram",
    "oauth_relay_upstream_duration_seconds": "histogram",
    "oauth_relay_upstream_errors": "counter",
    "oauth_relay_connections": "gauge",
    "oauth_relay_upstream_queued_exchanges": "gauge",
    "oauth_relay_refused_requests": "counter",
    "oauth_relay_config_reloads": "counter",
    "oauth_relay_config_last_reload_success_timestamp_seconds": "gauge",
    "oauth_relay_token_queue_depth": "gauge",
}


def test_exposition_has_the_content_type_and_help_and_type_for_every_family(start_relay, upstream, closed_port):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/ok/", name="ok"),
                                                  route(f"http://{LOOPBACK}:{closed_port}", "/down/", name="down")])
    assert relay.request("GET", "/ok/x").status == 200
    assert relay.request("GET", "/down/x").status == 502
    assert relay.request("GET", "/nowhere").status == 404
    m = admin.wait_for(lambda m: m.total("oauth_relay_requests_total") >= 3, "3 requests counted")
    assert m.response.header("Content-Type") == CONTENT_TYPE
    assert m.text.endswith("\n")
    assert set(m.families) == set(EXPECTED_TYPES), sorted(m.families)
    for name, family in m.families.items():
        assert family.type == EXPECTED_TYPES[name], f"{name}: type {family.type}"
        assert family.documentation.strip(), f"{name}: no HELP text"
    # One HELP and one TYPE line per family, before its samples.
    lines = m.text.splitlines()
    exposed = {f"{name}_total" if t == "counter" else name for name, t in EXPECTED_TYPES.items()}
    for name in exposed:
        helps = [i for i, line in enumerate(lines) if line.startswith(f"# HELP {name} ")]
        types = [i for i, line in enumerate(lines) if line.startswith(f"# TYPE {name} ")]
        first_sample = min(i for i, line in enumerate(lines) if line.startswith((name + "{", name + " ", name + "_")))
        assert len(helps) == 1 and len(types) == 1, f"{name}: {len(helps)} HELP and {len(types)} TYPE lines"
        assert helps[0] < first_sample and types[0] < first_sample, f"{name}: HELP/TYPE after a sample"


def test_sigterm_with_a_scraper_keep_alive_connection_open_exits_cleanly(start_relay, upstream):
    """Prometheus keeps its scrape connection alive between scrapes: a SIGTERM then must still
    end the relay with exit code 0 (it closes the admin connections as it stops)."""
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")])
    with RawConnection(LOOPBACK, admin.port) as conn:
        for _ in range(2):  # two scrapes on one connection, as a scraper does
            resp = conn.request("GET", "/metrics")
            assert resp.status == 200 and resp.header("Connection") is None, resp.headers
        code = relay.stop()
    assert code == 0, (f"relay exited with {code} (negative: killed by that signal) on SIGTERM while an "
                       f"idle keep-alive admin connection was open")


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_metrics_only_answers_get(start_relay, upstream, method):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")])
    resp = admin.request(method, "/metrics")
    assert_problem(resp, 405)


def test_reloads_are_counted_by_outcome(start_relay, upstream):
    t_start = time.time()
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")])
    m = admin.scrape()
    assert m.by("oauth_relay_config_reloads_total", "outcome") == {"applied": 0, "rejected": 0}
    loaded = m.total("oauth_relay_config_last_reload_success_timestamp_seconds")
    assert t_start - 1 <= loaded <= time.time() + 1, (t_start, loaded)

    config = json.loads(relay.config_path.read_text())
    config["routes"].append(route(upstream, "/second/", name="second"))
    relay.config_path.write_text(json.dumps(config))
    t_reload = time.time()
    resp = admin.request("POST", "/reload")
    assert resp.status == 200, resp.body
    m = admin.scrape()
    assert m.by("oauth_relay_config_reloads_total", "outcome") == {"applied": 1, "rejected": 0}
    reloaded = m.total("oauth_relay_config_last_reload_success_timestamp_seconds")
    assert t_reload - 1 <= reloaded <= time.time() + 1 and reloaded >= loaded, (loaded, t_reload, reloaded)
    assert relay.request("GET", "/second/x").status == 200
    admin.wait_for(lambda m: m.total("oauth_relay_requests_total", route="second") == 1,
                   "the new route's request counted")

    relay.config_path.write_text("{ not json")
    assert_problem(admin.request("POST", "/reload"), 422)
    m = admin.scrape()
    assert m.by("oauth_relay_config_reloads_total", "outcome") == {"applied": 1, "rejected": 1}
    assert m.total("oauth_relay_config_last_reload_success_timestamp_seconds") == reloaded


# ---------------------------------------------------------------------------------------------
# Without an admin listener.

@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc/net/tcp")
def test_without_admin_listener_nothing_but_the_relay_listens(start_relay, upstream):
    relay = start_relay([route(upstream, "/", name="echo")], workers=2)  # admin: None
    assert relay.request("GET", "/x").status == 200
    assert listening_ports(relay.pid) == {relay.port}
    # The same check sees an admin listener where there is one.
    with_admin, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")])
    assert listening_ports(with_admin.pid) == {with_admin.port, admin.port}
    assert admin.scrape().families


def test_metrics_false_keeps_the_admin_listener_but_counts_nothing(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream, "/", name="echo")], metrics=False)
    assert relay.request("GET", "/x").status == 200
    resp = admin.request("GET", "/metrics")
    assert resp.status == 404 and resp.header("Content-Type") == "application/problem+json"
    assert '"metrics": false' in json.loads(resp.body)["detail"]
    assert admin.request("GET", "/healthz").status == 200
    assert admin.request("GET", "/readyz").status == 200
