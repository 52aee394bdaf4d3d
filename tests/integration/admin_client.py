"""The relay's admin listener as the metrics and reload tests use it: `GET /metrics` parsed by
prometheus_client's text-format parser, `POST /reload` with its answers checked, and what the
reload tests share besides (rewriting the config file, the JSON log lines, SIGHUP, wrk running
while the relay reloads)."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from deadlines import scaled, wait_until
from http_client import RawConnection, Response, assert_closed, assert_problem
from processes import LOOPBACK, free_port

RELOADED = "configuration reloaded"
NOT_RELOADED = "configuration not reloaded; nothing changed"
CONFIG_INVALID = "urn:oauth-relay:problem:config-invalid"
# An error line: a JSON path ($, $.key, $.list[0].key, ...), then ": " and a message.
ERROR_WITH_PATH = re.compile(r"^\$(\.[A-Za-z_][A-Za-z0-9_-]*|\[\d+\])*: \S")


# ---------------------------------------------------------------------------------------------
# GET /metrics

class Metrics:
    """One scrape, parsed by prometheus_client. Sample names keep their suffix (`_total`,
    `_bucket`, `_count`, `_sum`); the parser's family names drop a counter's `_total`."""

    def __init__(self, resp: Response):
        assert resp.status == 200, f"GET /metrics answered {resp.status}: {resp.body[:300]!r}"
        self.response = resp
        self.text = resp.body.decode("utf-8")
        self.families = {f.name: f for f in text_string_to_metric_families(self.text)}

    def samples(self, name: str, **labels: str) -> list:
        return [s for f in self.families.values() for s in f.samples
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]

    def total(self, name: str, **labels: str) -> float:
        """The sum of the samples `name` whose labels include `labels` (over `worker` and any
        label not given)."""
        return sum(s.value for s in self.samples(name, **labels))

    def by(self, name: str, label: str, **labels: str) -> dict[str, float]:
        """The samples `name` matching `labels`, summed per value of `label`."""
        out: dict[str, float] = {}
        for s in self.samples(name, **labels):
            out[s.labels.get(label)] = out.get(s.labels.get(label), 0) + s.value
        return out

    def value(self, name: str, **labels: str) -> float | None:
        """The one sample `name` with `labels`; None when the series is not exported."""
        found = self.samples(name, **labels)
        assert len(found) <= 1, f"{len(found)} series {name} {labels}"
        return found[0].value if found else None

    def summary(self) -> str:
        """The scrape without the histogram buckets (for failure messages)."""
        return "\n".join(line for line in self.text.splitlines() if "_bucket{" not in line)


# ---------------------------------------------------------------------------------------------
# The admin client

class AdminClient:
    """The admin listener on `port`. `on_scrape(body)` sees every /metrics body (the oauth tests
    scan them for secrets)."""

    def __init__(self, port: int, on_scrape=None):
        self.port = port
        self.on_scrape = on_scrape

    def request(self, method: str, path: str) -> Response:
        """One request with `Connection: close`."""
        with RawConnection(LOOPBACK, self.port) as conn:
            resp = conn.request(method, path, headers=[("Connection", "close")], host=f"{LOOPBACK}:{self.port}")
            assert_closed(conn)
        return resp

    def scrape(self) -> Metrics:
        resp = self.request("GET", "/metrics")
        if self.on_scrape:
            self.on_scrape(resp.body)
        return Metrics(resp)

    def wait_for(self, predicate, message: str, timeout: float = 5) -> Metrics:
        """Scrapes until `predicate(metrics)` holds; returns that scrape."""
        last: list[Metrics] = []

        def check():
            last[:] = [self.scrape()]
            return predicate(last[0])

        try:
            wait_until(check, timeout, message)
        except pytest.fail.Exception:
            pytest.fail(f"timed out after {scaled(timeout):.1f}s waiting for {message}; last scrape:\n"
                        f"{last[0].summary() if last else '(none)'}", pytrace=False)
        return last[0]

    def reloads(self) -> dict[str, float]:
        """oauth_relay_config_reloads_total by outcome (absent outcomes read 0)."""
        return {"applied": 0.0, "rejected": 0.0, **self.scrape().by("oauth_relay_config_reloads_total", "outcome")}

    def answered_2xx(self) -> float:
        """oauth_relay_requests_total with status_class 2xx, summed over routes and workers."""
        return self.scrape().total("oauth_relay_requests_total", status_class="2xx")

    def reload(self) -> Response:
        return self.request("POST", "/reload")

    def reload_applied(self) -> dict:
        """POST /reload, which must answer 200 `applied`; returns the JSON answer."""
        resp = self.reload()
        assert resp.status == 200, f"reload answered {resp.status}: {resp.body[:800]!r}"
        assert (resp.header("content-type") or "").split(";")[0].strip() == "application/json", resp.headers
        doc = resp.json()
        assert doc["status"] == "applied", doc
        return doc

    def reload_rejected(self) -> list[str]:
        """POST /reload, which must answer 422 config-invalid; returns its `errors`, each checked
        to start with a JSON path."""
        doc = assert_problem(self.reload(), 422)
        assert doc["type"] == CONFIG_INVALID, doc
        errors = doc.get("errors")
        assert isinstance(errors, list) and errors, f"422 without errors: {doc}"
        for error in errors:
            assert isinstance(error, str) and ERROR_WITH_PATH.match(error), f"error without a JSON path: {error!r}"
        return errors


def start_with_admin(start_relay, routes: list, on_scrape=None, **top) -> tuple:
    """A relay with an admin listener on a free port; returns (relay, AdminClient)."""
    port = free_port()
    # `Relay.start` waits for the admin listener too (it opens just after the data listener).
    relay = start_relay(routes, admin=f"{LOOPBACK}:{port}", **top)
    return relay, AdminClient(port, on_scrape)


# ---------------------------------------------------------------------------------------------
# Reloading

def rewrite(relay, **changes) -> None:
    """Changes top-level keys of the relay's config file (the file `run --config` reads)."""
    relay.config = {**relay.config, **changes}
    relay.config_path.write_text(json.dumps(relay.config, indent=2))


def log_records(relay, msg: str | None = None) -> list[dict]:
    """The relay's JSON log lines (whole lines only), those with message `msg` if given."""
    records = []
    for line in relay.log().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and (msg is None or record.get("msg") == msg):
            records.append(record)
    return records


def sighup(relay) -> None:
    """SIGHUP must not end the relay: sent directly, so that the relay is not marked as
    signalled and an exit is still reported as a death at teardown."""
    relay.proc.send_signal(signal.SIGHUP)


def wait_for_log(relay, msg: str, count: int, timeout: float = 5) -> dict:
    """Waits for the `count`-th log line with message `msg`; returns it."""
    return wait_until(lambda: (r := log_records(relay, msg))[count - 1:] and r[count - 1], timeout,
                      f"log line #{count} {msg!r}")


# ---------------------------------------------------------------------------------------------
# wrk while the relay reloads

def start_wrk(url: str, connections: int, seconds: int, timeout_s: int | None = None) -> subprocess.Popen:
    assert shutil.which("wrk"), "wrk is not installed"
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s"]
    if timeout_s is not None:
        cmd += ["--timeout", f"{timeout_s}s"]
    return subprocess.Popen([*cmd, url], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish_wrk(wrk: subprocess.Popen, seconds: int) -> dict:
    """Waits for wrk (bounded) and parses its report: requests, socket errors, non-2xx."""
    try:
        out, _ = wrk.communicate(timeout=scaled(seconds + 20))
    except subprocess.TimeoutExpired:
        wrk.kill()
        out, _ = wrk.communicate()
        pytest.fail(f"wrk still running {scaled(seconds + 20):.0f}s after start:\n{out}")
    assert wrk.returncode == 0, f"wrk exited with {wrk.returncode}:\n{out}"
    done = re.search(r"^\s*(\d+) requests in ", out, re.M)
    assert done, f"no request count in wrk's report:\n{out}"
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"requests": int(done.group(1)), "out": out,
            "socket_errors": dict(zip(("connect", "read", "write", "timeout"), map(int, errors.groups())))
            if errors else {},
            "non2xx": int(non2xx.group(1)) if non2xx else 0}


def kill_wrk(wrk: subprocess.Popen) -> None:
    if wrk.poll() is None:
        wrk.kill()
        wrk.communicate()


def assert_wrk_clean(report: dict) -> None:
    assert report["requests"] > 0, report["out"]
    assert not any(report["socket_errors"].values()), f"socket errors under reload:\n{report['out']}"
    assert report["non2xx"] == 0, f"non-2xx answers under reload:\n{report['out']}"


def reload_under_wrk(url: str, connections: int, seconds: int, reloads: int, answered, reload_once,
                     already: float = 0) -> dict:
    """Runs wrk against `url` and reloads `reloads` times while it runs, 0.3 s apart:
    `reload_once(i)` rewrites the file and reloads (asserting what it expects), and after each
    reload `answered()` (a count of answered requests) must grow, so a stall shows here and not
    only in wrk's totals. `already` is that count before wrk starts (the test's own requests):
    the reloads begin once wrk's first answers are counted above it. Returns wrk's report,
    checked clean: requests, no socket error, no non-2xx."""
    wrk = start_wrk(url, connections=connections, seconds=seconds)
    try:
        count = wait_until(lambda: (n := answered()) > already and n, 5, "wrk's first answers through the relay")
        for i in range(1, reloads + 1):
            assert wrk.poll() is None, f"wrk ended after {i - 1} reloads: the reloads were not under load"
            reload_once(i)
            before = count
            count = wait_until(lambda: (n := answered()) > before and n, 3, f"requests answered after reload {i}")
            time.sleep(0.3)  # pacing between reloads, not a wait for a condition
        assert wrk.poll() is None, "wrk ended before the last reload: the reloads were not all under load"
        report = finish_wrk(wrk, seconds)
    finally:
        kill_wrk(wrk)
    assert_wrk_clean(report)
    return report
