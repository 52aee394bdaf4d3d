#!/usr/bin/env python3
"""Upload upstream for bulk-bodies.sh: reads each request body to its end (Content-Length or
chunked, trailers skipped), discards it, and only then answers 200 with "<bytes> <framing>\n"
(framing: cl, chunked or none), so a proxy's upload is measured end to end. Keep-alive; a thread
per connection; answers 100 Continue to Expect. With CERT and KEY it speaks TLS (Python's ssl
module, OpenSSL underneath: a TLS upstream for the proxies to verify).
Usage: body_sink.py PORT [CERT KEY]"""
import socket, ssl, sys, threading

BUF = 1 << 20


class Conn:
    def __init__(self, s):
        self.s = s; self.buf = bytearray(); self.scratch = memoryview(bytearray(BUF))

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def line(self):
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                l = bytes(self.buf[:i]); del self.buf[:i + 2]; return l
            if len(self.buf) > 65536:
                raise ValueError("line too long")
            self.fill()

    def skip(self, n):
        k = min(n, len(self.buf)); del self.buf[:k]; n -= k
        while n > 0:
            got = self.s.recv_into(self.scratch, min(n, BUF))
            if got == 0:
                raise EOFError
            n -= got

    def request(self):
        start = self.line()
        while start == b"":
            start = self.line()
        method, target, version = start.split(b" ", 2)
        fields = {}
        while True:
            l = self.line()
            if l == b"":
                break
            k, _, v = l.partition(b":"); fields[k.strip().lower()] = v.strip().lower()
        if fields.get(b"expect") == b"100-continue":
            self.s.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        total, framing = 0, "none"
        if b"chunked" in fields.get(b"transfer-encoding", b""):
            framing = "chunked"
            while True:
                size = int(self.line().split(b";")[0], 16)
                if size == 0:
                    while self.line() != b"":
                        pass
                    break
                self.skip(size); total += size
                if self.line() != b"":
                    raise ValueError("bad chunk end")
        elif b"content-length" in fields:
            framing = "cl"; total = int(fields[b"content-length"]); self.skip(total)
        body = f"{total} {framing}\n".encode()
        close = fields.get(b"connection") == b"close" or version == b"HTTP/1.0"
        self.s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n%s"
                       % (len(body), b"Connection: close\r\n" if close else b"", body))
        return not close


def serve(s, tls):
    try:
        if tls:
            s = tls.wrap_socket(s, server_side=True)
        c = Conn(s)
        while c.request():
            pass
    except (EOFError, ConnectionError, ValueError, ssl.SSLError):
        pass
    finally:
        s.close()


TLS = None
if len(sys.argv) == 4:
    TLS = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); TLS.load_cert_chain(sys.argv[2], sys.argv[3])
L = socket.socket(); L.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
L.bind(("127.0.0.1", int(sys.argv[1]))); L.listen(256)
while True:
    s, _ = L.accept()
    threading.Thread(target=serve, args=(s, TLS), daemon=True).start()
