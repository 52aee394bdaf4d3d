"""The client side of the tests: a raw-socket HTTP/1.1 client, curl, and the checks on what the
relay answers.

- `RawConnection`: sends bytes and reads whole responses (Content-Length, chunked with trailers,
  close-delimited, 1xx, HEAD/204/304), every read with a deadline, and detects the peer's close.
- `curl(...)`: runs curl and returns the same `Response` type.
- `assert_problem(response, status)`: checks an application/problem+json error and returns it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from deadlines import scaled

IO_SECONDS = 5


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


def curl_chunked_upload(url: str, size: int, timeout: float) -> dict:
    """Uploads `size` bytes of the echo upstream's pattern with curl reading stdin (length
    unknown, so sent chunked) and returns the echo's JSON answer."""
    feeder = subprocess.Popen([sys.executable, "-c", "import sys; from echo_upstream import pattern_chunks\n"
                               f"for piece in pattern_chunks({size}): sys.stdout.buffer.write(piece)"],
                              cwd=Path(__file__).resolve().parent, stdout=subprocess.PIPE)
    try:
        upload = subprocess.run(["curl", "-sS", "--noproxy", "*", "--max-time", str(scaled(timeout)),
                                 "-H", "Expect:", "-T", "-", url],
                                stdin=feeder.stdout, capture_output=True, timeout=scaled(timeout) + 5)
    finally:
        feeder.stdout.close()
        feeder.kill()
        feeder.wait()
    assert upload.returncode == 0, upload.stderr
    return json.loads(upload.stdout)


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
