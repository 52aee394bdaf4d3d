"""The processes the tests start: the echo upstream and the relay binary, each with a log file,
on loopback ports picked free at start.

The relay binary is OAUTH_RELAY_BIN, default <repo>/.build/release/oauth-relay.
"""

from __future__ import annotations

import base64
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deadlines import scaled
from http_client import IO_SECONDS, RawConnection, Response

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RELAY_BIN = Path(os.environ.get("OAUTH_RELAY_BIN", REPO / ".build" / "release" / "oauth-relay"))
LOOPBACK = "127.0.0.1"
STARTUP_SECONDS = 10
STOP_SECONDS = 10
# The token store key of the tests' `store` configs (32 bytes, base64): a test value, no secret.
STORE_KEY = base64.b64encode(bytes(range(32))).decode()


def can_connect(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def connection_refused(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def free_port(host: str = LOOPBACK) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def ipv6_loopback_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Process:
    """A subprocess with its log file, listening on host:port."""
    name = "process"
    host = LOOPBACK
    port = 0

    def __init__(self, log_path: Path):
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.signalled = False  # a test sent a signal: its exit is expected

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig: int) -> None:
        self.signalled = True
        self.proc.send_signal(sig)

    def wait_exit(self, timeout: float = STOP_SECONDS) -> int:
        try:
            return self.proc.wait(timeout=scaled(timeout))
        except subprocess.TimeoutExpired:
            pytest.fail(f"{self.name} (pid {self.pid}) still running {scaled(timeout):.1f}s later")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_SECONDS) -> int:
        """Sends `sig` and waits for the exit; returns the exit code (negative: killed by a signal)."""
        if self.running():
            self.send_signal(sig)
        return self.wait_exit(timeout)

    def kill(self) -> None:
        if self.running():
            self.signalled = True
            self.proc.kill()
            self.proc.wait(timeout=5)
        # The pipe its LISTENING line came through: left open, each process a test started kept
        # one descriptor of the pytest process until the session ended (over 1,000 late in the
        # suite, past what select() can watch).
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    @property
    def url(self) -> str:
        return f"http://{host_port(self.host, self.port)}"

    def connect(self, timeout: float = IO_SECONDS) -> RawConnection:
        return RawConnection(self.host, self.port, timeout=timeout)

    def request(self, method: str = "GET", target: str = "/", headers=(), body: bytes = b"",
                timeout: float | None = None, **kw) -> Response:
        """One request on a fresh connection, closed afterwards."""
        with self.connect() as conn:
            return conn.request(method, target, headers, body, timeout=timeout, **kw)


class EchoUpstream(_Process):
    name = "echo upstream"

    def __init__(self, log_path: Path, host: str = LOOPBACK, launcher: tuple[str, ...] = ()):
        """launcher: a command the server is started through (`ip netns exec NAME`: in another
        network namespace)."""
        super().__init__(log_path)
        self.host = host
        self.port = 0
        self.launcher = list(launcher)

    def start(self) -> "EchoUpstream":
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([*self.launcher, sys.executable, str(HERE / "echo_upstream.py"), "--host", self.host,
                                      "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=log)
        log.close()
        ready, _, _ = select.select([self.proc.stdout], [], [], scaled(STARTUP_SECONDS))
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("LISTENING"):
            self.kill()
            pytest.fail(f"echo upstream did not start: {line!r}\n{self.log()}")
        self.port = int(line.split()[2])
        return self

    def stats(self) -> dict:
        """The upstream's counters, read directly (not through the relay, and not counted)."""
        with self.connect() as conn:
            return conn.request("GET", "/stats", headers=[("Connection", "close")]).json()


class Relay(_Process):
    name = "oauth-relay"

    def __init__(self, config: dict, workdir: Path, host: str, port: int, args=()):
        super().__init__(workdir / "relay.stderr")
        self.config = config
        self.config_path = workdir / "relay.json"
        self.host = host
        self.port = port
        self.args = list(args)

    def start(self) -> "Relay":
        self.config_path.write_text(json.dumps(self.config, indent=2))
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([str(RELAY_BIN), "run", "--config", str(self.config_path), *self.args],
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + scaled(STARTUP_SECONDS)
        # The admin listener opens after the proxy's: a test that talks to it right after start
        # (a restart's /identities) must not find it closed.
        listeners = [(self.host, self.port)]
        admin = self.config.get("admin")
        if isinstance(admin, str) and ":" in admin:
            admin_host, _, admin_port = admin.rpartition(":")
            listeners.append((admin_host.strip("[]"), int(admin_port)))
        for host, port in listeners:
            while not can_connect(host, port):
                if not self.running():
                    raise RelayExited(self.proc.returncode, self.log())
                if time.monotonic() > deadline:
                    self.kill()
                    pytest.fail(f"relay did not listen on {host_port(host, port)} within "
                                f"{scaled(STARTUP_SECONDS):.0f}s\n{self.log()}")
                time.sleep(0.02)
        return self

    def peak_rss_bytes(self) -> int:
        """VmHWM: the peak resident set size of the relay process so far."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM in /proc/PID/status")


class RelayExited(Exception):
    def __init__(self, code: int, log: str):
        super().__init__(f"relay exited with {code} before listening\n{log}")
        self.code = code


def route(upstream, prefix: str | None = "/", host: str | None = None, base: str = "", **options) -> dict:
    """A route dict: match on host/pathPrefix, forward to `upstream` (an EchoUpstream or a URL)."""
    match = {}
    if host is not None:
        match["host"] = host
    if prefix is not None:
        match["pathPrefix"] = prefix
    url = upstream if isinstance(upstream, str) else upstream.url
    return {"match": match, "upstream": url + base, **options}


# The made-up Host names the suite's clients send: `relay.test` by default (http_client.py), and
# the names the routing, forwarding and limit tests route on. A loopback listener answers a name
# that is not its own 421 (DNS rebinding), so the test relays serve them as a user's relay serves
# the names in its `hosts`. The tests of that refusal send other names (`evil.example`,
# `rebind.test`), and tests pass `hosts=` to set their own.
HARNESS_HOSTS = ["relay.test", "x", "example.test", "*.example.test", "other.test", "elsewhere.test"]


def relay_config(listen: str, routes: list, limits: dict | None = None, workers: int = 1, **top) -> dict:
    return {
        "listen": listen,
        "hosts": HARNESS_HOSTS,
        # No admin listener unless a test asks for one (it would default to 127.0.0.1:9180).
        "admin": None,
        "workers": workers,
        "limits": {"shutdownGraceSeconds": 5, **(limits or {})},
        "accessLog": True,
        "routes": routes,
        **top,
    }


def require_relay_bin() -> Path:
    if not (RELAY_BIN.is_file() and os.access(RELAY_BIN, os.X_OK)):
        pytest.fail(f"relay binary not found at {RELAY_BIN} (build it, or set OAUTH_RELAY_BIN)")
    return RELAY_BIN


def run_cli(*args: str, timeout: float = 15) -> subprocess.CompletedProcess:
    """Runs the relay binary with `args`; returns the completed process (text stdout/stderr)."""
    return subprocess.run([str(require_relay_bin()), *args], capture_output=True, text=True,
                          timeout=scaled(timeout), stdin=subprocess.DEVNULL)


def write_config(path: Path, config: dict) -> Path:
    """Writes `config` as JSON to `path` (for the commands that read `--config`); returns `path`."""
    path.write_text(json.dumps(config, indent=2))
    return path


def run_check(directory: Path, config: dict) -> tuple[int, str]:
    """`oauth-relay check` on `config` (written to DIRECTORY/check.json): its exit code and its
    stdout and stderr together."""
    result = run_cli("check", "--config", str(write_config(directory / "check.json", config)))
    return result.returncode, result.stdout + result.stderr
