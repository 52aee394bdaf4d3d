"""Fixtures of the oauth-relay integration tests: real processes on loopback, bounded in time.

- `upstream` / `start_upstream`: the echo upstream (echo_upstream.py) as a subprocess.
- `relay` / `start_relay`: the relay binary with a config written to tmp_path; its stderr goes to a
  file attached to the report of a failing test. At teardown a relay still running gets SIGTERM
  and must exit 0 within the deadline; a relay that died on its own fails the test.
- `closed_port` (connects refused), `blackhole_port` (connects hang).
The clients are in http_client.py, the processes in processes.py, deadlines in deadlines.py.
"""

import errno
import os
import signal
import socket
import subprocess

import pytest

from deadlines import scaled
from processes import (LOOPBACK, STOP_SECONDS, EchoUpstream, Relay, RelayExited, free_port, host_port,
                       relay_config, require_relay_bin, route)

LOG_LEVEL = os.environ.get("OAUTH_RELAY_TEST_LOG_LEVEL", "info")

_LOGS = pytest.StashKey[list]()


def _register_log(request, proc) -> None:
    request.node.stash.setdefault(_LOGS, []).append(proc)



@pytest.fixture(autouse=True)
def private_state_directory(tmp_path, monkeypatch):
    """Each test's relays keep their default token store (identities a person logs in to) under
    the test's own directory, never in the user's ~/.local/state."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))

@pytest.fixture
def register_log(request):
    """`register_log(proc)`: a process (with .name, .log_path, .log()) whose log a failing test's
    report carries, for servers a test module starts itself."""
    return lambda proc: _register_log(request, proc)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        for proc in item.stash.get(_LOGS, []):
            text = proc.log()
            if len(text) > 60_000:
                text = "[...]\n" + text[-60_000:]
            report.sections.append((f"{proc.name} log ({proc.log_path})", text or "(empty)"))
    return report


# ---------------------------------------------------------------------------------------------
# Fixtures.

@pytest.fixture
def start_upstream(request, tmp_path):
    started: list[EchoUpstream] = []

    def start(host: str = LOOPBACK) -> EchoUpstream:
        up = EchoUpstream(tmp_path / f"upstream-{len(started)}.log", host)
        started.append(up)
        _register_log(request, up)
        return up.start()

    yield start
    for up in started:
        up.kill()


@pytest.fixture
def upstream(start_upstream) -> EchoUpstream:
    return start_upstream()


@pytest.fixture
def relay_bin():
    return require_relay_bin()


@pytest.fixture
def start_relay(request, tmp_path, relay_bin, start_upstream):
    """start_relay(routes, limits=None, workers=1, host="127.0.0.1", args=(), **top) -> Relay.
    The listen port is free at the time of the call; an address-in-use start is retried.
    (Depends on start_upstream so that relays stop before the upstreams they forward to.)"""
    started: list[Relay] = []

    def start(routes: list, limits: dict | None = None, workers: int = 1, host: str = LOOPBACK,
              args=("--log-level", LOG_LEVEL), **top) -> Relay:
        for attempt in range(3):
            port = free_port(host)
            workdir = tmp_path / f"relay-{len(started)}"
            workdir.mkdir()
            relay = Relay(relay_config(host_port(host, port), routes, limits, workers, **top), workdir, host, port, args)
            started.append(relay)
            _register_log(request, relay)
            try:
                return relay.start()
            except RelayExited as e:
                relay.signalled = True  # its exit is reported here, not again at teardown
                if not any(s in relay.log().lower() for s in ("in use", "eaddrinuse")) or attempt == 2:
                    pytest.fail(str(e))
        raise AssertionError("unreachable")

    yield start
    problems = []
    for relay in started:
        if relay.running():
            relay.send_signal(signal.SIGTERM)
            try:
                code = relay.proc.wait(timeout=scaled(STOP_SECONDS))
            except subprocess.TimeoutExpired:
                relay.kill()
                problems.append(f"relay (pid {relay.pid}) still running {scaled(STOP_SECONDS):.0f}s after SIGTERM")
                continue
            if code < 0:
                problems.append(f"relay was killed by signal {-code} (no handler for it installed?)")
            elif code != 0:
                problems.append(f"relay exited with {code} on SIGTERM")
        elif relay.proc is not None and not relay.signalled:
            problems.append(f"relay died during the test with exit code {relay.proc.returncode}")
    if problems:
        pytest.fail("; ".join(problems))


@pytest.fixture
def relay(start_relay, upstream) -> Relay:
    """A relay with one catch-all route to the echo upstream."""
    return start_relay([route(upstream, "/", name="echo")])


@pytest.fixture
def closed_port() -> int:
    """A loopback port where nothing listens: bound (so nobody else takes it) but not listening,
    so a connect is refused."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((LOOPBACK, 0))
    yield s.getsockname()[1]
    s.close()


@pytest.fixture
def blackhole_port() -> int:
    """A loopback port whose connects hang: a listener with a full accept queue (Linux then drops
    the SYNs), so a connect attempt times out instead of being refused."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((LOOPBACK, 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(16):
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.settimeout(0.3)
        try:
            probe.connect((LOOPBACK, port))
        except OSError as e:
            probe.close()
            if isinstance(e, socket.timeout) or e.errno in (errno.ETIMEDOUT, errno.EINPROGRESS):
                break
            raise
        fillers.append(probe)
    else:
        pytest.skip("could not fill the accept queue of a loopback listener")
    yield port
    for s in fillers:
        s.close()
    listener.close()
