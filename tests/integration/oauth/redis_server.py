"""The Redis of the fleet tests: Debian's redis-server on a loopback port, nothing persisted
(`--save "" --appendonly no`), in a directory of its own; `redis-cli` (redis-tools) to look at
what the relays keep in it. `SentinelServer`: Debian's redis-sentinel watching such a server. And
`SilentRedis`: a listener that accepts connections and never
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


class SentinelServer(_Process):
    """`redis-sentinel` on a loopback port, monitoring `master_name` at `master_port` (a
    RedisServer) with `quorum`; the master's password, if any, as `sentinel auth-pass`. Quick to
    act: a master silent for `down_after_ms` is down, a failover may be retried after
    `failover_timeout_ms`. Its own config file (Sentinel rewrites it) in `workdir`."""

    name = "redis-sentinel"

    def __init__(self, workdir: Path, master_port: int, master_name: str = "relay-store", quorum: int = 2,
                 password: str | None = None, down_after_ms: int = 500, failover_timeout_ms: int = 2000):
        super().__init__(workdir / "sentinel.log")
        self.workdir = workdir
        self.port = free_port()
        self.master_name = master_name
        lines = [f"port {self.port}", f"bind {LOOPBACK}", f"dir {workdir}", 'logfile ""',
                 f"sentinel monitor {master_name} {LOOPBACK} {master_port} {quorum}",
                 f"sentinel down-after-milliseconds {master_name} {down_after_ms}",
                 f"sentinel failover-timeout {master_name} {failover_timeout_ms}",
                 f"sentinel parallel-syncs {master_name} 1"]
        if password:
            lines.append(f"sentinel auth-pass {master_name} {password}")
        self.config = workdir / "sentinel.conf"
        self.config.write_text("\n".join(lines) + "\n")
        self.config.chmod(0o600)

    def start(self) -> "SentinelServer":
        if shutil.which("redis-sentinel") is None:
            pytest.fail("redis-sentinel is not installed (scripts/install-deps --test)")
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(["redis-sentinel", str(self.config)], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + scaled(STARTUP_SECONDS)
        while not can_connect(LOOPBACK, self.port):
            if not self.running() or time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"redis-sentinel did not listen on port {self.port}\n{self.log()[-3000:]}")
            time.sleep(0.02)
        return self

    def cli(self, *args: str) -> str:
        result = subprocess.run(["redis-cli", "-h", LOOPBACK, "-p", str(self.port), *args], capture_output=True,
                                timeout=scaled(10))
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        return result.stdout.decode("latin-1")

    def master_port(self) -> int | None:
        """The master's port as this sentinel names it now."""
        lines = self.cli("SENTINEL", "get-master-addr-by-name", self.master_name).split()
        return int(lines[1]) if len(lines) == 2 else None

    def knows(self, replicas: int, sentinels: int) -> bool:
        """This sentinel has found `replicas` replicas and `sentinels` other sentinels (what a
        failover needs)."""
        def count(kind: str) -> int:
            return self.cli("SENTINEL", kind, self.master_name).splitlines().count("name")
        return count("replicas") >= replicas and count("sentinels") >= sentinels


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
