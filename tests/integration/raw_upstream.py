"""A raw upstream for the smuggling tests: it records every byte the relay sends, per connection,
and answers with bytes the test chose, so that what crossed the relay can be asserted exactly.

It runs in the test process (threads, loopback only). Each accepted connection gets a
`RecordedConnection` (`.data`: every byte received, `.eof`: the relay closed or reset it).

Answers: a request whose framing cannot be parsed (a broken chunk line) gets 400 and the
upstream's close, as from a strict origin. Each complete request gets, by default, `HTTP/1.1 200 OK` with `Content-Length` and the
request's target as the body (so a client can tell which request an answer belongs to). A
`script` replaces the answer to the first request on the first connection: bytes sent as they
are (then `close_after_script`: the upstream closes that connection). Requests after it get the
default answer. The upstream never answers a request it did not receive whole.

`parse_requests(data)` is the strict HTTP/1.1 request parser the tests judge the recorded bytes
with: CRLF only, token names, no obs-fold, no NUL/CR/LF in values, exactly one framing
(a single digits-only Content-Length, or `Transfer-Encoding: chunked` alone), canonical chunks.
Anything else it reports as a problem: a message the relay forwarded must parse without one.

`drain(timeout)`: after the relay process has exited every connection it opened is either
accepted or waiting in the listen queue, and every byte it wrote is in the kernel; this accepts
the waiting ones and reads all of them to EOF, so the record is complete (no race on "nothing
arrived").
"""

from __future__ import annotations

import re
import select
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field

_TOKEN = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_DIGITS = re.compile(rb"^[0-9]+$")
_HEX = re.compile(rb"^[0-9a-fA-F]+$")
_VALUE_BAD = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
READ_SIZE = 1 << 16


# ---------------------------------------------------------------------------------------------
# The strict parser used to judge what the relay forwarded.

@dataclass
class ParsedMessage:
    """One request (or its start) as the upstream received it."""
    start_line: bytes
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    framing: str = "none"          # none | length | chunked
    body: bytes = b""              # decoded (chunked framing removed)
    trailers: list[tuple[bytes, bytes]] = field(default_factory=list)
    complete: bool = False
    broken: bool = False           # framing that cannot be parsed on: no end can be found
    problems: list[str] = field(default_factory=list)

    @property
    def target(self) -> bytes:
        parts = self.start_line.split(b" ")
        return parts[1] if len(parts) == 3 else b""

    def values(self, name: str) -> list[bytes]:
        name_b = name.lower().encode()
        return [v for k, v in self.headers if k.lower() == name_b]


def _parse_head(raw: bytes, msg: ParsedMessage) -> None:
    """raw: the head without its final CRLF CRLF."""
    stripped = raw.replace(b"\r\n", b"")
    if b"\r" in stripped or b"\n" in stripped:
        msg.problems.append("bare CR or LF in the head")
    lines = raw.split(b"\r\n")
    msg.start_line = lines[0]
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not _TOKEN.match(parts[0]) or parts[2] != b"HTTP/1.1" or not parts[1]:
        msg.problems.append(f"bad request line {lines[0]!r}")
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            msg.problems.append(f"obs-fold {line!r}")
            continue
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.match(name):
            msg.problems.append(f"bad header line {line!r}")
            continue
        value = value.strip(b" \t")
        if _VALUE_BAD.search(value):
            msg.problems.append(f"control byte in the value of {name!r}: {value!r}")
        msg.headers.append((name, value))


def _framing(msg: ParsedMessage) -> int | None:
    """Sets msg.framing; returns the Content-Length. Ambiguous framing is a problem."""
    te = msg.values("transfer-encoding")
    cl = msg.values("content-length")
    if te and cl:
        msg.problems.append(f"both Content-Length {cl} and Transfer-Encoding {te}")
    if te:
        if te != [b"chunked"]:
            msg.problems.append(f"Transfer-Encoding {te} is not exactly one `chunked`")
        msg.framing = "chunked"
        return None
    if cl:
        if len(cl) != 1 or not _DIGITS.match(cl[0]) or (len(cl[0]) > 1 and cl[0].startswith(b"0")):
            msg.problems.append(f"non-canonical Content-Length {cl}")
            msg.framing = "length"
            return int(cl[0]) if _DIGITS.match(cl[0]) else 0
        msg.framing = "length"
        return int(cl[0])
    return 0


def parse_requests(data: bytes) -> list[ParsedMessage]:
    """Splits what one connection received into requests. The last may be incomplete
    (`complete=False`): a head cut short, or a body that did not end."""
    messages: list[ParsedMessage] = []
    pos = 0
    while pos < len(data):
        msg = ParsedMessage(b"")
        messages.append(msg)
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            msg.start_line = data[pos:].split(b"\r\n", 1)[0]
            msg.problems.append("incomplete head")
            return messages
        _parse_head(data[pos:end], msg)
        pos = end + 4
        length = _framing(msg)
        if msg.framing == "chunked":
            body = bytearray()
            while True:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    msg.body = bytes(body)
                    return messages
                size_text = data[pos:eol]
                if not _HEX.match(size_text) or (len(size_text) > 1 and size_text.startswith(b"0")):
                    msg.problems.append(f"non-canonical chunk size line {size_text!r}")
                    if not _HEX.match(size_text.split(b";")[0].strip()):
                        msg.broken = True
                        return messages
                size = int(size_text.split(b";")[0].strip(), 16)
                pos = eol + 2
                if size == 0:
                    break
                if len(data) < pos + size + 2:
                    body += data[pos:pos + size]
                    msg.body = bytes(body)
                    return messages
                body += data[pos:pos + size]
                if data[pos + size:pos + size + 2] != b"\r\n":
                    msg.problems.append("chunk data not followed by CRLF")
                    msg.broken = True
                    msg.body = bytes(body)
                    return messages
                pos += size + 2
            msg.body = bytes(body)
            while True:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    return messages
                line = data[pos:eol]
                pos = eol + 2
                if not line:
                    break
                name, colon, value = line.partition(b":")
                if not colon or not _TOKEN.match(name) or _VALUE_BAD.search(value.strip(b" \t")):
                    msg.problems.append(f"bad trailer line {line!r}")
                msg.trailers.append((name, value.strip(b" \t")))
            msg.complete = True
        else:
            if len(data) < pos + length:
                msg.body = data[pos:]
                return messages
            msg.body = data[pos:pos + length]
            pos += length
            msg.complete = True
    return messages


# ---------------------------------------------------------------------------------------------
# The server.

@dataclass
class RecordedConnection:
    index: int
    sock: socket.socket
    data: bytearray = field(default_factory=bytearray)
    eof: bool = False
    answered: int = 0
    closed_by_upstream: bool = False

    def requests(self) -> list[ParsedMessage]:
        return parse_requests(bytes(self.data))


def default_answer(request: ParsedMessage) -> bytes:
    body = request.target
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


class RawUpstream:
    """Threaded loopback server; see the module docstring."""

    def __init__(self, script: bytes | None = None, close_after_script: bool = False):
        self.script = script
        self.close_after_script = close_after_script
        self.connections: list[RecordedConnection] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._script_used = False
        self._thread = threading.Thread(target=self._run, name="raw-upstream", daemon=True)

    def start(self) -> "RawUpstream":
        self._thread.start()
        return self

    # -- serving -----------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                socks = [self._listener] + [c.sock for c in self.connections if not c.eof]
            try:
                # epoll, not select(): the test process may hold descriptors numbered past 1,024.
                with selectors.DefaultSelector() as selector:
                    for sock in socks:
                        selector.register(sock, selectors.EVENT_READ)
                    readable = [key.fileobj for key, _ in selector.select(0.05)]
            except (OSError, ValueError, KeyError):
                continue
            for s in readable:
                if s is self._listener:
                    self._accept()
                else:
                    self._read(next(c for c in self.connections if c.sock is s))

    def _accept(self) -> bool:
        try:
            sock, _ = self._listener.accept()
        except (BlockingIOError, OSError):
            return False
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self.connections.append(RecordedConnection(len(self.connections), sock))
        return True

    def _read(self, conn: RecordedConnection) -> None:
        try:
            data = conn.sock.recv(READ_SIZE)
        except (ConnectionResetError, OSError):
            data = b""
        with self._lock:
            if not data:
                conn.eof = True
                conn.sock.close()
                return
            conn.data += data
        self._answer(conn)

    @staticmethod
    def _close_write(conn: RecordedConnection) -> None:
        """Ends the upstream's side of `conn` (the relay then reads to EOF)."""
        conn.closed_by_upstream = True
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _answer(self, conn: RecordedConnection) -> None:
        if conn.closed_by_upstream:
            return
        messages = parse_requests(bytes(conn.data))
        if messages and messages[-1].broken:
            # As a strict origin would: 400 and close, without waiting for a timeout.
            self._send(conn, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            self._close_write(conn)
            return
        while conn.answered < len(messages) and messages[conn.answered].complete:
            request = messages[conn.answered]
            conn.answered += 1
            if self.script is not None and not self._script_used:
                self._script_used = True
                self._send(conn, self.script)
                if self.close_after_script:
                    self._close_write(conn)
                    return
            else:
                self._send(conn, default_answer(request))

    @staticmethod
    def _send(conn: RecordedConnection, data: bytes) -> None:
        try:
            conn.sock.sendall(data)
        except OSError:
            pass

    # -- what the tests ask -------------------------------------------------------------------

    def snapshot(self) -> list[RecordedConnection]:
        with self._lock:
            return list(self.connections)

    def total_bytes(self) -> int:
        return sum(len(c.data) for c in self.snapshot())

    def drain(self, timeout: float) -> None:
        """Completes the record once the relay has exited (see the module docstring)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                pending = [c for c in self.connections if not c.eof]
            ready, _, _ = select.select([self._listener], [], [], 0)
            if not pending and not ready:
                return
            time.sleep(0.01)  # the serving thread is doing the reading; poll until it is done
        raise AssertionError(f"raw upstream: connections still open {timeout:.1f}s after the relay exited")

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        with self._lock:
            for c in self.connections:
                if not c.eof:
                    c.sock.close()
        self._listener.close()
