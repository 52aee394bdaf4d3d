"""The Redis of the fleet tests: Debian's redis-server on a loopback port, nothing persisted
(`--save "" --appendonly no`), in a directory of its own; `redis-cli` (redis-tools) to look at
what the relays keep in it. And `SilentRedis`: a listener that accepts connections and never
answers, the one Redis fault a real server cannot be told to produce.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from deadlines import scaled
from processes import LOOPBACK, _Process, can_connect, free_port

STARTUP_SECONDS = 10


class RedisServer(_Process):
    name = "redis-server"

    def __init__(self, workdir: Path, password: str | None = None, options: tuple[str, ...] = ()):
        super().__init__(workdir / "redis.log")
        self.workdir = workdir
        self.password = password
        self.options = list(options)  # more redis-server arguments (`--timeout 1`)
        self.port = free_port()

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}{LOOPBACK}:{self.port}/0"

    def start(self) -> "RedisServer":
        """Starts (or starts again, on the same port, with nothing in it)."""
        if shutil.which("redis-server") is None:
            pytest.fail("redis-server is not installed (scripts/install-deps --test)")
        args = ["redis-server", "--port", str(self.port), "--bind", LOOPBACK, "--save", "", "--appendonly", "no",
                "--dir", str(self.workdir), "--logfile", ""]
        if self.password:
            args += ["--requirepass", self.password]
        args += self.options
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        self.signalled = False
        deadline = time.monotonic() + scaled(STARTUP_SECONDS)
        while not can_connect(LOOPBACK, self.port):
            if not self.running() or time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"redis-server did not listen on port {self.port}\n{self.log()[-3000:]}")
            time.sleep(0.02)
        return self

    def sigkill(self) -> None:
        self.signalled = True
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=scaled(10))

    def cli(self, *args: str) -> str:
        """`redis-cli` with `args`; its stdout (raw output, one value per line)."""
        command = ["redis-cli", "-h", LOOPBACK, "-p", str(self.port), "--no-auth-warning"]
        if self.password:
            command += ["-a", self.password]
        result = subprocess.run([*command, *args], capture_output=True, timeout=scaled(10))
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        return result.stdout.decode("latin-1")

    def dump(self) -> dict[str, str]:
        """Every key and all it holds, as redis-cli prints it: what anyone with access to this
        Redis can read."""
        everything = {}
        for key in [k for k in self.cli("--scan").splitlines() if k]:
            kind = self.cli("TYPE", key).strip()
            if kind == "hash":
                everything[key] = self.cli("HGETALL", key)
            elif kind == "string":
                everything[key] = self.cli("GET", key)
            else:
                everything[key] = f"<{kind}>"
        return everything


class SilentRedis:
    """Accepts connections on a loopback port and never answers (nor closes): a Redis that hangs."""

    def __init__(self):
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind((LOOPBACK, 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.stopped = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopped:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            self.accepted.append(conn)

    def close(self) -> None:
        self.stopped = True
        self.thread.join(timeout=5)
        for conn in self.accepted:
            conn.close()
        self.listener.close()
