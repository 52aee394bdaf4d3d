"""Echo upstream for the oauth-relay integration tests.

A real HTTP/1.1 origin server on asyncio raw streams (not http.server), so that what the relay
forwards is seen byte for byte: keep-alive, pipelining, Content-Length and chunked request bodies
(with trailers), `Expect: 100-continue`, WebSocket upgrades. Request bodies are hashed while they
stream in and are never held in memory, so 1 GiB uploads cost nothing.

Run it:
    python3 echo_upstream.py --port N [--host 127.0.0.1]
    python3 -m echo_upstream --port 0        (from this directory; --port 0 picks a free port)
The first line on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT stops it.

Default answer: 200, `application/json`, describing the request as received:
    {"method", "target", "version",
     "headers":  [[name, value], ...]   in order, names in their raw case, duplicates kept,
     "body_length", "body_sha256",       of the decoded body (chunked framing removed),
     "trailers": [[name, value], ...],   chunked request trailers, in order,
     "connection_id": n,                 1, 2, ... per accepted connection,
     "request_index_on_connection": k,   0, 1, ... per request on that connection,
     "continue_sent": bool}              whether this server sent `100 Continue`
Every answer also carries the headers `X-Echo-Connection-Id` and `X-Echo-Request-Index`.

Behaviours, chosen by path:
    /status/NNN            status NNN with the echo body (no body for 1xx, 204 and 304)
    /slow?ms=N             reads the request, waits N ms, then answers with the echo body
    /chunked?chunks=N&size=M
                           chunked answer: N chunks of M pattern bytes, then the trailer
                           `X-Checksum: <sha256 hex of the body>` (announced with `Trailer:`)
    /download?bytes=N      Content-Length answer of N pattern bytes, generated while sending
    /head-test             Content-Length 1000 with 1000 pattern bytes; to HEAD the same head, no body
    /no-content            204, no body, no Content-Length
    /not-modified          304 with `ETag` and `Content-Length: 1000` (the size a 200 would have
                           had, as RFC 9110 allows), and no body
    /close-early           reads the request, then closes the connection without answering
    /bad-framing           answers with both `Content-Length` and `Transfer-Encoding: chunked`
    /bad-chunk             chunked answer whose first chunk size is not hexadecimal
    /flaky-401?every=N     the echo body with 401 to the 1st, (N+1)-th, (2N+1)-th, ... request to
                           this path and 200 to the others (one count per server, over all
                           connections and queries; default N=50): an upstream that refuses a
                           share of requests whatever token they carry
    /expect                sends `HTTP/1.1 100 Continue` before reading the body when the request
                           has `Expect: 100-continue` (every other path just reads the body)
    /ws                    WebSocket handshake (RFC 6455) -> 101, then echoes each frame back
                           unmasked (ping -> pong, close -> close and hang up);
    /ws?raw=1              the same handshake, then echoes raw bytes until the peer's EOF
    /ws-report             the /ws handshake and echo, its 101 also carrying `X-Echo-Upgrade` and
                           `X-Echo-Connection`: the request's Upgrade and Connection values as
                           received (joined with ", ")
    /switch-protocols      reads the request, then answers `101 Switching Protocols` with
                           `Upgrade: h2c` whatever the request asked for (even nothing), and echoes
                           raw bytes until the peer's EOF
    /padded-length         200 with `Content-Length: 005` (leading zeros) and the body `hello`
    /drip?ms=N&bytes=M     200 with Content-Length M; the head at once, then the M pattern bytes
                           one at a time, N ms apart (each byte in time for any idle timeout)
    /drip?ms=N&bytes=M&head=1
                           the same, the head dripped byte by byte too
    /read-late?ms=N        waits N ms before reading the request body at all, then echoes
    /stats                 JSON counters: connections_accepted, connections_open,
                           requests_started (head received), requests_served (answer sent),
                           requests_in_flight. /stats requests, and connections whose first
                           request is /stats, are not counted.
On any path:
    ?set-header=Name:Value  adds a response header (repeatable; kept in order)
    ?close=1                answers with `Connection: close`, then closes
    ?idle-close-ms=N        after answering, closes the connection (silently, as an upstream's
                            keep-alive timeout would) when no next request starts within N ms
    HEAD                    the head a GET would get, without the body

"Pattern bytes" are `pattern_chunks(n)`: a fixed 1 MiB pseudo-random block, repeated. Tests import
`pattern_sha256(n)` to know what N pattern bytes must hash to.

A request this server cannot parse (bare LF, Content-Length with Transfer-Encoding, a bad chunk
size, ...) gets 400 and the connection is closed: it is strict so that sloppy forwarding shows.
"""

from __future__ import annotations
from loopback_server import run_loopback_server, wait_for_stop_signal

import asyncio
import base64
import functools
import hashlib
import http
import json
import re
import struct
import sys
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

MAX_HEAD_BYTES = 1024 * 1024
IO_CHUNK = 1024 * 1024
WEBSOCKET_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
HEAD_TEST_LENGTH = 1000

_TOKEN = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_HEX = re.compile(rb"^[0-9A-Fa-f]+$")


# ---------------------------------------------------------------------------------------------
# Pattern bytes, shared with the tests.

@functools.lru_cache(maxsize=1)
def _pattern_block() -> bytes:
    return b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(IO_CHUNK // 32))


def pattern_chunks(n: int, chunk: int = IO_CHUNK):
    """Yields n pattern bytes as memoryviews of at most `chunk` bytes (the block, repeated)."""
    block = memoryview(_pattern_block())
    chunk = min(chunk, len(block))
    sent = 0
    while sent < n:
        offset = sent % len(block)
        take = min(chunk, n - sent, len(block) - offset)
        yield block[offset:offset + take]
        sent += take


@functools.lru_cache(maxsize=8)
def pattern_sha256(n: int) -> str:
    digest = hashlib.sha256()
    for piece in pattern_chunks(n):
        digest.update(piece)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# Request model.

class BadRequest(Exception):
    pass


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    path: str = ""
    query: dict[str, list[str]] = field(default_factory=dict)

    def values(self, name: str) -> list[str]:
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def tokens(self, name: str) -> list[str]:
        return [t.strip().lower() for v in self.values(name) for t in v.split(",") if t.strip()]

    def param(self, name: str, default: str | None = None) -> str | None:
        return self.query.get(name, [default])[0]

    @property
    def wants_close(self) -> bool:
        if "close" in self.tokens("connection"):
            return True
        return self.version == "HTTP/1.0" and "keep-alive" not in self.tokens("connection")


def parse_head(raw: bytes) -> Request:
    if b"\n" in raw.replace(b"\r\n", b"") or b"\r" in raw.replace(b"\r\n", b""):
        raise BadRequest("bare CR or LF in the head")
    lines = raw[:-4].split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not _TOKEN.match(parts[0]) or not parts[2].startswith(b"HTTP/1."):
        raise BadRequest(f"bad request line {lines[0]!r}")
    headers = []
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            raise BadRequest("obs-fold")
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.match(name):
            raise BadRequest(f"bad header line {line!r}")
        if b"\0" in value:
            raise BadRequest("NUL in a header value")
        headers.append((name.decode("latin-1"), value.strip(b" \t").decode("latin-1")))
    req = Request(parts[0].decode(), parts[1].decode("latin-1"), parts[2].decode(), headers)
    split = urlsplit(req.target)
    req.path = split.path
    req.query = parse_qs(split.query, keep_blank_values=True)
    return req


def body_framing(req: Request) -> tuple[str, int]:
    """('chunked', 0), ('length', n), or ('none', 0); raises BadRequest on ambiguous framing."""
    te = req.tokens("transfer-encoding")
    lengths = {v.strip() for value in req.values("content-length") for v in value.split(",")}
    if te and lengths:
        raise BadRequest("both Content-Length and Transfer-Encoding")
    if te:
        if te[-1] != "chunked":
            raise BadRequest("Transfer-Encoding does not end in chunked")
        return "chunked", 0
    if lengths:
        if len(lengths) != 1 or not next(iter(lengths)).isdigit():
            raise BadRequest(f"bad Content-Length {sorted(lengths)}")
        return "length", int(next(iter(lengths)))
    return "none", 0


# ---------------------------------------------------------------------------------------------
# Server.

@dataclass
class Stats:
    connections_accepted: int = 0
    connections_open: int = 0
    requests_started: int = 0
    requests_served: int = 0
    requests_in_flight: int = 0


class EchoServer:
    def __init__(self) -> None:
        self.stats = Stats()
        self._next_connection_id = 0
        self.flaky_requests = 0  # requests to /flaky-401 so far
        self._server: asyncio.base_events.Server | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._connection, host, port, limit=MAX_HEAD_BYTES)
        return self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._next_connection_id += 1
        conn = _Connection(self, self._next_connection_id, reader, writer)
        self.stats.connections_accepted += 1
        self.stats.connections_open += 1
        try:
            await conn.serve()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass
        finally:
            if not conn.is_control:
                self.stats.connections_open -= 1
            writer.close()


class _Connection:
    def __init__(self, server: EchoServer, cid: int, reader, writer) -> None:
        self.server = server
        self.stats = server.stats
        self.id = cid
        self.reader: asyncio.StreamReader = reader
        self.writer: asyncio.StreamWriter = writer
        self.index = 0
        self.is_control = False

    # -- the request loop ------------------------------------------------------------------

    async def serve(self) -> None:
        idle_close: float | None = None
        while True:
            try:
                if idle_close is None:
                    raw = await self.reader.readuntil(b"\r\n\r\n")
                else:
                    raw = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), idle_close)
            except asyncio.IncompleteReadError as e:
                if e.partial:
                    await self._reject(400, "incomplete head")
                return
            except asyncio.LimitOverrunError:
                await self._reject(431, "head too large")
                return
            except asyncio.TimeoutError:
                return
            try:
                req = parse_head(raw)
                framing = body_framing(req)
                if req.path == "/stats":
                    await self._stats(req, framing)
                    continue
                self.stats.requests_started += 1
                self.stats.requests_in_flight += 1
                try:
                    keep_open = await self._exchange(req, framing)
                finally:
                    self.stats.requests_in_flight -= 1
            except BadRequest as e:
                await self._reject(400, str(e))
                return
            self.index += 1
            if not keep_open:
                return
            ms = req.param("idle-close-ms")
            idle_close = int(ms) / 1000 if ms is not None else None

    async def _stats(self, req: Request, framing) -> None:
        if self.index == 0 and not self.is_control:
            # A connection opened to read the counters is not one of the connections counted.
            self.is_control = True
            self.stats.connections_accepted -= 1
            self.stats.connections_open -= 1
        await self._drain_body(framing, hashlib.sha256())
        await self._send(req, 200, [("Content-Type", "application/json")],
                         json.dumps(self.stats.__dict__).encode(), counted=False)

    async def _exchange(self, req: Request, framing) -> bool:
        """Answers one request; returns whether the connection stays open."""
        path = req.path
        continue_sent = False
        if path == "/expect" and "100-continue" in req.tokens("expect"):
            self.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await self.writer.drain()
            continue_sent = True
        if path == "/ws":
            return await self._websocket(req)
        if path == "/ws-report":
            return await self._websocket(req, report=True)
        if path == "/read-late":
            await asyncio.sleep(int(req.param("ms", "1000")) / 1000)

        digest = hashlib.sha256()
        length, trailers = await self._drain_body(framing, digest)
        echo = {
            "method": req.method, "target": req.target, "version": req.version,
            "headers": [list(h) for h in req.headers],
            "body_length": length, "body_sha256": digest.hexdigest(),
            "trailers": [list(t) for t in trailers],
            "connection_id": self.id, "request_index_on_connection": self.index,
            "continue_sent": continue_sent,
        }
        body = json.dumps(echo).encode()
        json_type = [("Content-Type", "application/json")]

        if path == "/close-early":
            return False
        if path == "/bad-framing":
            await self._write_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                                  b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
            return False
        if path == "/bad-chunk":
            await self._write_raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                  b"zz\r\nhello\r\n0\r\n\r\n")
            return False
        if path == "/switch-protocols":
            return await self._switch_protocols(req)
        if path == "/padded-length":
            close = req.wants_close or req.param("close") == "1"
            await self._write_raw(self._head(req, 200, [("Content-Type", "text/plain"),
                                                        ("Content-Length", "005")], close) + b"hello")
            return not close
        if path == "/drip":
            return await self._drip(req, int(req.param("ms", "100")), int(req.param("bytes", "10")),
                                    req.param("head") == "1")
        if path == "/slow":
            await asyncio.sleep(int(req.param("ms", "1000")) / 1000)
        if path.startswith("/status/"):
            return await self._send(req, int(path[len("/status/"):]), json_type, body)
        if path == "/flaky-401":
            every = max(1, int(req.param("every", "50")))
            n = self.server.flaky_requests
            self.server.flaky_requests += 1
            return await self._send(req, 401 if n % every == 0 else 200, json_type, body)
        if path == "/no-content":
            return await self._send(req, 204, [], None)
        if path == "/not-modified":
            return await self._send(req, 304, [("ETag", '"v1"'), ("Content-Length", str(HEAD_TEST_LENGTH))], None)
        if path == "/head-test":
            return await self._send(req, 200, [("Content-Type", "application/octet-stream")],
                                    pattern_chunks(HEAD_TEST_LENGTH), length=HEAD_TEST_LENGTH)
        if path == "/download":
            n = int(req.param("bytes", "0"))
            return await self._send(req, 200, [("Content-Type", "application/octet-stream")],
                                    pattern_chunks(n), length=n)
        if path == "/chunked":
            return await self._send_chunked(req, int(req.param("chunks", "3")), int(req.param("size", "1024")))
        return await self._send(req, 200, json_type, body)

    # -- request bodies ----------------------------------------------------------------------

    async def _drain_body(self, framing, digest) -> tuple[int, list[tuple[str, str]]]:
        kind, length = framing
        if kind == "length":
            await self._read_into(length, digest)
            return length, []
        if kind == "none":
            return 0, []
        total = 0
        while True:
            line = await self.reader.readuntil(b"\r\n")
            size_text = line[:-2].split(b";", 1)[0].rstrip(b" \t")
            if not _HEX.match(size_text) or b"\r" in line[:-2] or b"\n" in line[:-2]:
                raise BadRequest(f"bad chunk size line {line!r}")
            size = int(size_text, 16)
            if size == 0:
                break
            await self._read_into(size, digest)
            total += size
            if await self.reader.readexactly(2) != b"\r\n":
                raise BadRequest("chunk data not followed by CRLF")
        trailers = []
        while True:
            line = await self.reader.readuntil(b"\r\n")
            if line == b"\r\n":
                return total, trailers
            name, colon, value = line[:-2].partition(b":")
            if not colon or not _TOKEN.match(name) or b"\r" in value or b"\n" in value:
                raise BadRequest(f"bad trailer line {line!r}")
            trailers.append((name.decode("latin-1"), value.strip(b" \t").decode("latin-1")))

    async def _read_into(self, n: int, digest) -> None:
        while n > 0:
            data = await self.reader.read(min(n, IO_CHUNK))
            if not data:
                raise asyncio.IncompleteReadError(b"", n)
            digest.update(data)
            n -= len(data)

    # -- responses -------------------------------------------------------------------------------

    def _head(self, req: Request, status: int, headers, close: bool) -> bytes:
        try:
            reason = http.HTTPStatus(status).phrase
        except ValueError:
            reason = "Status"
        lines = [f"HTTP/1.1 {status} {reason}"]
        lines += [f"{k}: {v}" for k, v in headers]
        lines += [f"X-Echo-Connection-Id: {self.id}", f"X-Echo-Request-Index: {self.index}"]
        for spec in req.query.get("set-header", []):
            name, _, value = spec.partition(":")
            lines.append(f"{name.strip()}: {value.strip()}")
        if close:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _send(self, req: Request, status: int, headers, body, length: int | None = None,
                    counted: bool = True) -> bool:
        """body: None (no body), bytes, or an iterable of chunks of `length` bytes in total."""
        close = req.wants_close or req.param("close") == "1"
        headers = list(headers)
        no_body = status < 200 or status in (204, 304)
        if not no_body:
            if isinstance(body, bytes):
                length = len(body)
            headers.append(("Content-Length", str(length or 0)))
        self.writer.write(self._head(req, status, headers, close))
        if not no_body and req.method != "HEAD" and body is not None:
            for piece in ([body] if isinstance(body, bytes) else body):
                self.writer.write(piece)
                if self.writer.transport.get_write_buffer_size() > 4 * IO_CHUNK:
                    await self.writer.drain()
        await self.writer.drain()
        if counted:
            self.stats.requests_served += 1
        return not close

    async def _send_chunked(self, req: Request, chunks: int, size: int) -> bool:
        close = req.wants_close or req.param("close") == "1"
        headers = [("Content-Type", "application/octet-stream"), ("Transfer-Encoding", "chunked"),
                   ("Trailer", "X-Checksum")]
        self.writer.write(self._head(req, 200, headers, close))
        if req.method != "HEAD":
            digest = hashlib.sha256()
            stream = pattern_chunks(chunks * size, chunk=max(size, 1))
            for _ in range(chunks):
                self.writer.write(f"{size:x}\r\n".encode())
                remaining = size
                while remaining:
                    piece = next(stream)
                    digest.update(piece)
                    self.writer.write(piece)
                    remaining -= len(piece)
                self.writer.write(b"\r\n")
                await self.writer.drain()
            self.writer.write(f"0\r\nX-Checksum: {digest.hexdigest()}\r\n\r\n".encode())
        await self.writer.drain()
        self.stats.requests_served += 1
        return not close

    async def _drip(self, req: Request, ms: int, n: int, drip_head: bool) -> bool:
        close = req.wants_close or req.param("close") == "1"
        head = self._head(req, 200, [("Content-Type", "application/octet-stream"), ("Content-Length", str(n))], close)
        body = b"".join(pattern_chunks(n))
        if not drip_head:
            self.writer.write(head)
            head = b""
        for byte in head + body:  # bounded by the answer's length; a closed peer ends it sooner
            self.writer.write(bytes([byte]))
            await self.writer.drain()
            await asyncio.sleep(ms / 1000)
        self.stats.requests_served += 1
        return not close

    async def _write_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()
        self.stats.requests_served += 1

    async def _reject(self, status: int, why: str) -> None:
        body = json.dumps({"error": why}).encode()
        reason = http.HTTPStatus(status).phrase
        self.writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        try:
            await self.writer.drain()
        except ConnectionError:
            pass

    # -- WebSocket -------------------------------------------------------------------------------

    async def _switch_protocols(self, req: Request) -> bool:
        self.writer.write(self._head(req, 101, [("Connection", "Upgrade"), ("Upgrade", "h2c")], close=False))
        await self.writer.drain()
        self.stats.requests_served += 1
        while data := await self.reader.read(IO_CHUNK):
            self.writer.write(data)
            await self.writer.drain()
        return False

    async def _websocket(self, req: Request, report: bool = False) -> bool:
        key = req.values("sec-websocket-key")
        if (req.method != "GET" or "websocket" not in req.tokens("upgrade")
                or "upgrade" not in req.tokens("connection") or len(key) != 1
                or req.values("sec-websocket-version") != ["13"]):
            body = json.dumps({"error": "not a WebSocket handshake",
                               "headers": [list(h) for h in req.headers]}).encode()
            return await self._send(req, 400, [("Content-Type", "application/json")], body)
        accept = base64.b64encode(hashlib.sha1(key[0].encode() + WEBSOCKET_GUID).digest()).decode()
        headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", accept)]
        if report:
            headers += [("X-Echo-Upgrade", ", ".join(req.values("upgrade"))),
                        ("X-Echo-Connection", ", ".join(req.values("connection")))]
        self.writer.write(self._head(req, 101, headers, close=False))
        await self.writer.drain()
        self.stats.requests_served += 1
        if req.param("raw") == "1":
            while data := await self.reader.read(IO_CHUNK):
                self.writer.write(data)
                await self.writer.drain()
            self.writer.write_eof()
            await self.writer.drain()
            return False
        while True:
            fin_opcode, payload = await read_frame(self.reader)
            opcode = fin_opcode & 0x0F
            if opcode == 0x8:
                self.writer.write(encode_frame(0x88, payload))
                await self.writer.drain()
                return False
            if opcode == 0x9:
                self.writer.write(encode_frame(0x8A, payload))
            elif opcode != 0xA:
                self.writer.write(encode_frame(fin_opcode, payload))
            await self.writer.drain()


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """Reads one WebSocket frame; returns (FIN|opcode byte, unmasked payload)."""
    b0, b1 = await reader.readexactly(2)
    length = b1 & 0x7F
    if length == 126:
        (length,) = struct.unpack(">H", await reader.readexactly(2))
    elif length == 127:
        (length,) = struct.unpack(">Q", await reader.readexactly(8))
    mask = await reader.readexactly(4) if b1 & 0x80 else None
    payload = await reader.readexactly(length)
    return b0 & 0x8F, apply_mask(payload, mask) if mask else payload


def apply_mask(payload: bytes, mask: bytes) -> bytes:
    if not payload:
        return payload
    key = (mask * (len(payload) // 4 + 1))[:len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(len(payload), "big")


def encode_frame(first_byte: int, payload: bytes, mask: bytes | None = None) -> bytes:
    """A WebSocket frame; `mask` given (clients must mask) masks the payload."""
    n = len(payload)
    mask_bit = 0x80 if mask else 0
    if n < 126:
        head = struct.pack(">BB", first_byte, mask_bit | n)
    elif n < 65536:
        head = struct.pack(">BBH", first_byte, mask_bit | 126, n)
    else:
        head = struct.pack(">BBQ", first_byte, mask_bit | 127, n)
    if mask:
        return head + mask + apply_mask(payload, mask)
    return head + payload


# ---------------------------------------------------------------------------------------------

async def _main(host: str, port: int) -> None:
    server = EchoServer()
    bound = await server.start(host, port)
    print(f"LISTENING {host} {bound}", flush=True)
    await wait_for_stop_signal()
    await server.close()


def main(argv: list[str] | None = None) -> None:
    run_loopback_server(__doc__.split("\n\n")[0], _main, argv)


if __name__ == "__main__":
    sys.exit(main())
