#!/usr/bin/env python3
"""Sends COUNT GETs for HOST and PATH one after another on one keep-alive connection to
127.0.0.1:PORT, reading each 200 answer (Content-Length framed) before the next; waits up to
CONNECT_SECONDS for the port to open (the first request may wait for a token); a read
waits up to READ_SECONDS. Used by
bench/instructions-per-request.sh and bench/config-scale.sh under callgrind.
Usage: keepalive_gets.py PORT COUNT HOST PATH CONNECT_SECONDS READ_SECONDS"""
import socket, sys, time

port, count, host, path, connect_seconds, read_seconds = (
    int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5]), float(sys.argv[6]))
deadline = time.time() + connect_seconds
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=read_seconds); break
    except OSError:
        if time.time() > deadline: raise
        time.sleep(0.2)
request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n".encode()
buffer = b""
for _ in range(count):
    s.sendall(request)
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            head = buffer[:end].decode("latin-1")
            assert head.startswith("HTTP/1.1 200"), head
            length = int(next(l.split(":")[1] for l in head.split("\r\n") if l.lower().startswith("content-length")))
            if len(buffer) >= end + 4 + length:
                buffer = buffer[end + 4 + length:]
                break
        chunk = s.recv(65536)
        assert chunk, "the relay closed the connection"
        buffer += chunk
s.close()
