"""Harness for the oauth-relay integration tests: real processes on loopback, bounded in time.

- `upstream` / `start_upstream`: the echo upstream (echo_upstream.py) as a subprocess.
- `relay` / `start_relay`: the relay binary (env OAUTH_RELAY_BIN, default
  <repo>/.build/release/oauth-relay) with a config written to tmp_path; its stderr goes to a file
  that is attached to the report of a failing test. At teardown a relay still running gets
  SIGTERM and must exit within the deadline; a relay that died on its own fails the test.
- `RawConnection`: a socket client that sends bytes and reads whole responses (Content-Length,
  chunked with trailers, close-delimited, 1xx, HEAD/204/304), with deadlines and close detection.
- `curl(...)`: runs curl and returns the same `Response` type.
- `assert_problem(response, status)`: checks an application/problem+json error and returns it.

Every wait polls for a condition with a deadline (`wait_until`); no test sleeps to hide a race.
OAUTH_RELAY_TEST_TIME_SCALE (default 1) multiplies every deadline, for slow machines.
"""

from __future__ import annotations

import errno
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RELAY_BIN = Path(os.environ.get("OAUTH_RELAY_BIN", REPO / ".build" / "release" / "oauth-relay"))
TIME_SCALE = float(os.environ.get("OAUTH_RELAY_TEST_TIME_SCALE", "1"))
LOG_LEVEL = os.environ.get("OAUTH_RELAY_TEST_LOG_LEVEL", "info")
LOOPBACK = "127.0.0.1"

STARTUP_SECONDS = 10
STOP_SECONDS = 10
IO_SECONDS = 5

_LOGS = pytest.StashKey[list]()


def scaled(seconds: float) -> float:
    return seconds * TIME_SCALE


# ---------------------------------------------------------------------------------------------
# Waiting.

def wait_until(predicate, timeout: float, message: str, interval: float = 0.02):
    """Polls `predicate` until it returns something truthy (returned) or `timeout` passes (fails)."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {scaled(timeout):.1f}s waiting for {message}")
        time.sleep(interval)


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


# ---------------------------------------------------------------------------------------------
# Responses, raw sockets, curl.

@dataclass
class Response:
    status: int
    reason: str = ""
    version: str = "HTTP/1.1"
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    trailers: list[tuple[str, str]] = field(default_factory=list)
    body_length: int = 0

    def header(self, name: str) -> str | None:
        values = self.header_all(name)
        return values[0] if values else None

    def header_all(self, name: str) -> list[str]:
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def trailer(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.trailers if k.lower() == name), None)

    def json(self):
        return json.loads(self.body)

    def echo_headers(self, name: str) -> list[str]:
        """Values of `name` among the headers the echo upstream received (case-insensitive)."""
        return [v for k, v in self.json()["headers"] if k.lower() == name.lower()]


class ConnectionClosed(AssertionError):
    """The peer closed (or reset) the connection where more bytes were expected."""


def build_request(method: str = "GET", target: str = "/", headers=(), body: bytes = b"",
                  host: str | None = "relay.test", version: str = "HTTP/1.1") -> bytes:
    """A request head (+ body). Host comes first unless host=None; Content-Length is added for a
    non-empty body when the caller gave neither Content-Length nor Transfer-Encoding."""
    lines = [f"{method} {target} {version}"]
    if host is not None:
        lines.append(f"Host: {host}")
    names = {k.lower() for k, _ in headers}
    lines += [f"{k}: {v}" for k, v in headers]
    if body and not names & {"content-length", "transfer-encoding"}:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def chunked_body(parts, trailers=()) -> bytes:
    out = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p)
    out += b"0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in trailers) + b"\r\n"
    return out


class RawConnection:
    """A client socket with a read buffer. Every read has a deadline: `timeout` seconds (scaled;
    default: the connection's timeout) from the call."""

    def __init__(self, host: str, port: int, timeout: float = IO_SECONDS):
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=scaled(timeout))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.eof = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.settimeout(scaled(self.timeout))
        self.sock.sendall(data)

    def deadline(self, timeout: float | None = None) -> float:
        return time.monotonic() + scaled(self.timeout if timeout is None else timeout)

    def _fill(self, deadline: float) -> None:
        """Reads more into the buffer; ConnectionClosed on EOF or reset, TimeoutError at the deadline."""
        if self.eof:
            raise ConnectionClosed(f"connection already closed by the peer; unread: {bytes(self.buf[:300])!r}")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("deadline passed while reading")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(1 << 20)
        except ConnectionResetError:
            data = b""
        except socket.timeout:
            raise TimeoutError("deadline passed while reading") from None
        if not data:
            self.eof = True
            raise ConnectionClosed(f"connection closed by the peer; unread: {bytes(self.buf[:300])!r}")
        self.buf += data

    def _until(self, sep: bytes, deadline: float, limit: int = 1 << 20) -> bytes:
        while (i := self.buf.find(sep)) < 0:
            assert len(self.buf) <= limit, f"no {sep!r} within {limit} bytes"
            self._fill(deadline)
        out = bytes(self.buf[:i + len(sep)])
        del self.buf[:i + len(sep)]
        return out

    def _exact(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n:
            self._fill(deadline)
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def _stream(self, n: int | None, deadline: float, sink) -> None:
        """Passes n bytes (None: everything until EOF) to sink, without keeping them."""
        while n is None or n > 0:
            if not self.buf:
                try:
                    self._fill(deadline)
                except ConnectionClosed:
                    if n is None:
                        return
                    raise
            take = len(self.buf) if n is None else min(n, len(self.buf))
            sink(bytes(self.buf[:take]))
            del self.buf[:take]
            if n is not None:
                n -= take

    def read_until(self, sep: bytes, timeout: float | None = None) -> bytes:
        return self._until(sep, self.deadline(timeout))

    def read_exact(self, n: int, timeout: float | None = None) -> bytes:
        return self._exact(n, self.deadline(timeout))

    def read_response(self, method: str = "GET", timeout: float | None = None, sink=None,
                      _deadline: float | None = None) -> Response:
        """Reads the next response, 1xx included. With `sink`, body bytes go there, not to .body."""
        deadline = _deadline or self.deadline(timeout)
        head = self._until(b"\r\n\r\n", deadline)
        assert b"\n" not in head.replace(b"\r\n", b""), f"bare LF in response head {head!r}"
        assert b"\r" not in head.replace(b"\r\n", b""), f"bare CR in response head {head!r}"
        lines = head[:-4].decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code, _, reason = rest.partition(" ")
        headers = []
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            assert colon and name and name == name.strip(), f"bad response header line {line!r}"
            headers.append((name, value.strip(" \t")))
        resp = Response(int(code), reason, version, headers)
        parts: list[bytes] = []

        def collect(data: bytes) -> None:
            resp.body_length += len(data)
            (sink or parts.append)(data)

        te = [t.strip().lower() for v in resp.header_all("transfer-encoding") for t in v.split(",")]
        if resp.status < 200 or resp.status in (204, 304) or method == "HEAD":
            pass
        elif te:
            assert te[-1] == "chunked", f"response Transfer-Encoding {te} does not end in chunked"
            assert not resp.header_all("content-length"), "response has Content-Length and Transfer-Encoding"
            while (size := int(self._until(b"\r\n", deadline)[:-2].split(b";")[0].strip(), 16)) > 0:
                self._stream(size, deadline, collect)
                assert self._exact(2, deadline) == b"\r\n", "chunk data not followed by CRLF"
            while (line := self._until(b"\r\n", deadline)) != b"\r\n":
                name, _, value = line[:-2].decode("latin-1").partition(":")
                resp.trailers.append((name, value.strip(" \t")))
        elif resp.header_all("content-length"):
            lengths = set(resp.header_all("content-length"))
            assert len(lengths) == 1, f"conflicting response Content-Length {lengths}"
            self._stream(int(lengths.pop()), deadline, collect)
        else:
            self._stream(None, deadline, collect)
        resp.body = b"".join(parts)
        return resp

    def read_final_response(self, method: str = "GET", timeout: float | None = None, sink=None) -> Response:
        """Reads responses until one that is not interim (1xx other than 101), and returns it."""
        deadline = self.deadline(timeout)
        while True:
            resp = self.read_response(method, sink=sink, _deadline=deadline)
            if resp.status >= 200 or resp.status == 101:
                return resp

    def request(self, method: str = "GET", target: str = "/", headers=(), body: bytes = b"",
                timeout: float | None = None, **kw) -> Response:
        self.send(build_request(method, target, headers, body, **kw))
        return self.read_final_response(method, timeout=timeout)

    def is_closed(self, timeout: float = IO_SECONDS) -> bool:
        """True when the peer closes (EOF or reset) within `timeout`; bytes that arrive meanwhile
        stay in .buf (a test may assert there are none)."""
        deadline = self.deadline(timeout)
        try:
            while True:
                self._fill(deadline)
        except ConnectionClosed:
            return True
        except TimeoutError:
            return False

    def stays_open(self, seconds: float) -> bool:
        """True when the peer neither closes nor sends anything for `seconds`."""
        return not self.is_closed(seconds) and not self.buf


def assert_closed(conn: RawConnection, timeout: float = IO_SECONDS) -> None:
    assert conn.is_closed(timeout), f"connection still open {scaled(timeout):.1f}s after the response"
    assert not conn.buf, f"unexpected bytes before the close: {bytes(conn.buf[:200])!r}"


@dataclass
class CurlResult(Response):
    returncode: int = 0
    stderr: str = ""


def curl(url: str, *args: str, timeout: float = 15) -> CurlResult:
    """Runs curl (no proxy from the environment) and parses the final response head and the body."""
    assert shutil.which("curl"), "curl is not installed"
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    with tempfile.TemporaryDirectory(prefix="relay-curl-") as tmp:
        head_file, body_file = Path(tmp, "head"), Path(tmp, "body")
        cmd = ["curl", "-sS", "--noproxy", "*", "--max-time", str(scaled(timeout)),
               "-D", str(head_file), "-o", str(body_file), *args, url]
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=scaled(timeout) + 5, env=env)
        heads = head_file.read_bytes().decode("latin-1") if head_file.exists() else ""
        body = body_file.read_bytes() if body_file.exists() else b""
    result = CurlResult(0, body=body, body_length=len(body), returncode=proc.returncode,
                        stderr=proc.stderr.decode(errors="replace"))
    # -D holds every head (1xx included) and, after the body, any trailers: the last head is final.
    blocks = [b for b in heads.split("\r\n\r\n") if b.startswith("HTTP/")]
    if blocks:
        lines = blocks[-1].split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code, _, reason = rest.partition(" ")
        result.status, result.reason, result.version = int(code), reason, version
        result.headers = [(k, v.strip()) for k, _, v in (line.partition(":") for line in lines[1:] if line)]
    return result


def assert_problem(resp: Response, status: int, route: str | None = None) -> dict:
    """Asserts an RFC 9457 problem from the relay itself and returns the parsed document."""
    assert resp.status == status, f"expected {status}, got {resp.status} {resp.reason}: {resp.body[:500]!r}"
    content_type = (resp.header("content-type") or "").split(";")[0].strip().lower()
    assert content_type == "application/problem+json", f"Content-Type {resp.header('content-type')!r}"
    doc = json.loads(resp.body)
    assert isinstance(doc, dict), doc
    for key in ("type", "title", "status", "detail"):
        assert key in doc, f"problem without {key!r}: {doc}"
    assert isinstance(doc["type"], str) and isinstance(doc["title"], str) and isinstance(doc["detail"], str), doc
    assert doc["status"] == status, doc
    if route is not None:
        assert doc.get("route") == route, f"problem route {doc.get('route')!r}, expected {route!r}"
    return doc


# ---------------------------------------------------------------------------------------------
# Processes: echo upstream and relay.

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

    def __init__(self, log_path: Path, host: str = LOOPBACK):
        super().__init__(log_path)
        self.host = host
        self.port = 0

    def start(self) -> "EchoUpstream":
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, str(HERE / "echo_upstream.py"), "--host", self.host, "--port", "0"],
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
        while not can_connect(self.host, self.port):
            if not self.running():
                raise _RelayExited(self.proc.returncode, self.log())
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"relay did not listen on {host_port(self.host, self.port)} within "
                            f"{scaled(STARTUP_SECONDS):.0f}s\n{self.log()}")
            time.sleep(0.02)
        return self

    def peak_rss_bytes(self) -> int:
        """VmHWM: the peak resident set size of the relay process so far."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmHWM in /proc/PID/status")


class _RelayExited(Exception):
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


def relay_config(listen: str, routes: list, limits: dict | None = None, workers: int = 1, **top) -> dict:
    return {
        "listen": listen,
        "workers": workers,
        "limits": {"shutdownGraceSeconds": 5, **(limits or {})},
        "accessLog": True,
        "routes": routes,
        **top,
    }


def _register_log(request, proc: _Process) -> None:
    request.node.stash.setdefault(_LOGS, []).append(proc)


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
def relay_bin() -> Path:
    if not (RELAY_BIN.is_file() and os.access(RELAY_BIN, os.X_OK)):
        pytest.fail(f"relay binary not found at {RELAY_BIN} (build it, or set OAUTH_RELAY_BIN)")
    return RELAY_BIN


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
            except _RelayExited as e:
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
            if code != 0:
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


def run_cli(*args: str, timeout: float = 15) -> subprocess.CompletedProcess:
    """Runs the relay binary with `args`; returns the completed process (text stdout/stderr)."""
    if not (RELAY_BIN.is_file() and os.access(RELAY_BIN, os.X_OK)):
        pytest.fail(f"relay binary not found at {RELAY_BIN} (build it, or set OAUTH_RELAY_BIN)")
    return subprocess.run([str(RELAY_BIN), *args], capture_output=True, text=True,
                          timeout=scaled(timeout), stdin=subprocess.DEVNULL)
