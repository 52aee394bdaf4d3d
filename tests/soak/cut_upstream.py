"""The soak's upstream that breaks its answers mid-body (no real server can be told to), in the
harness's process (threads, loopback only).

Each connection takes one request (it answers `Connection: close`), checks every field the
relay sends that the scenario fixes: method GET, a target under `/cut/`, `Host`, a `Bearer`
token in `Authorization` (the route has an identity), `Via`, and no body. A request that fails
a check gets a 400 and is counted in `refused`, which the harness reports as a failure.

    /cut/whole     200, 64 KiB with Content-Length, sent whole
    /cut/reset     200 with Content-Length 64 KiB, 8 KiB of it, then a reset (SO_LINGER 0)
    /cut/fin       200 with Content-Length 64 KiB, 8 KiB of it, then a close (FIN)
"""

from __future__ import annotations

import socket
import struct
import threading

BODY_LENGTH = 64 * 1024
SENT_BEFORE_CUT = 8 * 1024
READ_SECONDS = 10
MAX_HEAD = 64 * 1024


class CutUpstream:
    def __init__(self, host: str = "127.0.0.1"):
        self.listener = socket.create_server((host, 0), backlog=128)
        self.host, self.port = self.listener.getsockname()[:2]
        self.refused: list[str] = []  # why a request failed a check (no field values: they may hold a token)
        self.answered = {"whole": 0, "reset": 0, "fin": 0}
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, name="cut-upstream", daemon=True)
        self.stopping = False

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> "CutUpstream":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping = True
        self.listener.close()
        self.thread.join(timeout=5)

    def _accept(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _refuse(self, conn: socket.socket, why: str) -> None:
        with self.lock:
            self.refused.append(why)
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(READ_SECONDS)
            head = b""
            try:
                while b"\r\n\r\n" not in head:
                    data = conn.recv(4096)
                    if not data:
                        return  # the relay closed an idle pooled connection
                    head += data
                    if len(head) > MAX_HEAD:
                        return self._refuse(conn, "request head over 64 KiB")
            except OSError:
                return
            lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            method, target, _version = (lines[0].split(" ") + ["", ""])[:3]
            fields: dict[str, list[str]] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                fields.setdefault(name.strip().lower(), []).append(value.strip())
            kind = target.removeprefix("/cut/")
            problems = []
            if method != "GET":
                problems.append(f"method {method}")
            if kind not in self.answered:
                problems.append("a target not under /cut/whole, /cut/reset, /cut/fin")
            if fields.get("host") != [f"{self.host}:{self.port}"]:
                problems.append("Host is not the upstream's address")
            auth = fields.get("authorization", [])
            if len(auth) != 1 or not auth[0].startswith("Bearer ") or len(auth[0]) <= len("Bearer "):
                problems.append("not exactly one Bearer Authorization")
            if not fields.get("via"):
                problems.append("no Via")
            if fields.get("content-length", ["0"]) != ["0"] or "transfer-encoding" in fields:
                problems.append("a body on a GET")
            if problems:
                return self._refuse(conn, "; ".join(problems))
            with self.lock:
                self.answered[kind] += 1
            body = bytes(BODY_LENGTH)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         + f"Content-Length: {BODY_LENGTH}\r\nConnection: close\r\n\r\n".encode())
            if kind == "whole":
                conn.sendall(body)
                return
            conn.sendall(body[:SENT_BEFORE_CUT])
            if kind == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
