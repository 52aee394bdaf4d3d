"""What sharing tokens through Redis (store.redis) costs, on loopback:

1. The request path: CPU per request of a relay with `store.redis` and of one without, both with
   one worker injecting a token (1 h lifetime, so nothing is refreshed while measured), under
   `wrk -t1 -c64`, in interleaved rounds. Redis is never on the request path, so the two should
   match; medians and the spread (min-max) are printed.
2. The token thread: a fleet of 3 relays sharing 2 s tokens (a refresh every second), idle, for
   a while; per refresh of the fleet: the Redis commands (INFO commandstats), the relays' CPU
   (all threads; idle workers cost nothing) and, with `--syscalls`, their system calls (strace
   -f -c). The same fleet over TLS (`rediss://`, a redis-server with `--tls-port` and a
   self-signed certificate made here), and without Redis for comparison (each relay then
   refreshes on its own).

    python3 bench/redis_cost.py [--seconds 5] [--rounds 5] [--fleet-seconds 20] [--syscalls] [--token-thread-only]

Needs wrk, nginx, redis-server (scripts/install-deps --test) and a release build. The machine
may be shared: read the ratios, and what else ran.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELAY = Path(os.environ.get("OAUTH_RELAY_BIN", ROOT / ".build/release/oauth-relay"))
KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"port {port} did not open")


def cpu_seconds(pid: int) -> float:
    """The time all threads of the process ran (schedstat, in nanoseconds: finer than utime+stime's ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return total / 1e9


class Bench:
    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.processes: list[subprocess.Popen] = []

    def spawn(self, *argv, **kw) -> subprocess.Popen:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=kw.pop("stderr", subprocess.DEVNULL), **kw)
        self.processes.append(proc)
        return proc

    def stop(self) -> None:
        for proc in self.processes:
            proc.send_signal(signal.SIGTERM)
        for proc in self.processes:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def nginx(self) -> int:
        port = free_port()
        conf = self.workdir / "nginx.conf"
        conf.write_text(f"""worker_processes 1; daemon off; pid {self.workdir}/nginx.pid; error_log {self.workdir}/nginx.err;
events {{ worker_connections 4096; }}
http {{ access_log off; keepalive_requests 1000000;
  server {{ listen 127.0.0.1:{port}; location / {{ return 200 "hello from upstream\\n"; }} }} }}
""")
        self.spawn("nginx", "-c", str(conf))
        wait_port(port)
        return port

    def issuer(self) -> int:
        port = free_port()
        self.spawn(sys.executable, str(ROOT / "bench/token_issuer.py"), str(port))
        wait_port(port)
        return port

    def redis(self, tls: bool = False) -> int:
        """A redis-server; with `tls`, on a TLS port only, its certificate `tls_certificate()`."""
        port = free_port()
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.workdir)]
        if tls:
            cert, key = self.tls_certificate()
            argv += ["--port", "0", "--tls-port", str(port), "--tls-cert-file", cert, "--tls-key-file", key,
                     "--tls-ca-cert-file", cert, "--tls-auth-clients", "no"]
        self.spawn(*argv)
        wait_port(port)
        return port

    def tls_certificate(self) -> tuple[str, str]:
        """A self-signed certificate for 127.0.0.1 (its own CA) and its key."""
        cert, key = self.workdir / "redis.pem", self.workdir / "redis.key"
        if not cert.exists():
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                            "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=redis",
                            "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        return str(cert), str(key)

    def relay(self, name: str, upstream: int, issuer: int, ttl: int, store: dict | None) -> tuple[subprocess.Popen, int]:
        port = free_port()
        config = {
            "listen": f"127.0.0.1:{port}", "admin": None, "workers": 1, "accessLog": False, "metrics": False,
            "identities": {"svc": {"tokenUrl": f"http://127.0.0.1:{issuer}/token?ttl={ttl}", "grant": "client_credentials",
                                   "clientId": "bench", "clientSecret": "bench-secret"}},
            "routes": [{"match": {"pathPrefix": "/"}, "upstream": f"http://127.0.0.1:{upstream}", "identity": "svc"}],
        }
        if store is not None:
            config["store"] = store
        path = self.workdir / f"{name}.json"
        path.write_text(json.dumps(config))
        log = open(self.workdir / f"{name}.log", "wb")
        proc = self.spawn(str(RELAY), "run", "--config", str(path), "--log-level", "warning", stderr=log)
        wait_port(port)
        return proc, port


def wrk(port: int, seconds: int) -> int:
    out = subprocess.run(["wrk", "-t1", "-c64", f"-d{seconds}s", f"http://127.0.0.1:{port}/"],
                         capture_output=True, text=True, check=True).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"wrk saw {errors.group(1)} non-2xx answers:\n{out}")
    return requests


def request_path(args) -> None:
    with tempfile.TemporaryDirectory() as directory:
        bench = Bench(Path(directory))
        try:
            upstream, issuer, redis = bench.nginx(), bench.issuer(), bench.redis()
            relays = {
                "without store": bench.relay("off", upstream, issuer, 3600, None),
                "store.redis": bench.relay("on", upstream, issuer, 3600, {"redis": f"redis://127.0.0.1:{redis}/0", "key": KEY}),
            }
            for _, port in relays.values():
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read()  # the token is there
                wrk(port, 1)  # warm-up
            cost: dict[str, list[float]] = {name: [] for name in relays}
            rate: dict[str, list[float]] = {name: [] for name in relays}
            names = list(relays)
            for round_ in range(args.rounds):
                for name in names[round_ % 2:] + names[:round_ % 2]:
                    proc, port = relays[name]
                    before = cpu_seconds(proc.pid)
                    requests = wrk(port, args.seconds)
                    cost[name].append((cpu_seconds(proc.pid) - before) / requests * 1e6)
                    rate[name].append(requests / args.seconds)
            print(f"request path: wrk -t1 -c64, {args.rounds} rounds of {args.seconds} s, interleaved")
            for name in names:
                print(f"  {name:14} CPU per request {statistics.median(cost[name]):6.1f} us "
                      f"(min {min(cost[name]):.1f}, max {max(cost[name]):.1f}); "
                      f"{statistics.median(rate[name]):8.0f} requests/s")
        finally:
            bench.stop()


def redis_commands(port: int, tls_ca: str | None = None) -> dict[str, int]:
    tls = ["--tls", "--cacert", tls_ca] if tls_ca else []
    out = subprocess.run(["redis-cli", *tls, "-p", str(port), "INFO", "commandstats"], capture_output=True, text=True, check=True).stdout
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"cmdstat_(\w+):calls=(\d+)", out)}


def issued(issuer: int) -> int:
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{issuer}/count", timeout=5).read())["count"]


def measure(fleet, issuer: int, redis: int, seconds: int, tls_ca: str | None = None) -> tuple[float, int, dict[str, int]]:
    """The fleet's CPU seconds, the token requests and the Redis commands over `seconds`."""
    cpu0 = sum(cpu_seconds(p.pid) for p, _ in fleet)
    tokens0, commands0 = issued(issuer), redis_commands(redis, tls_ca)
    time.sleep(seconds)
    cpu = sum(cpu_seconds(p.pid) for p, _ in fleet) - cpu0
    commands = {k: v - commands0.get(k, 0) for k, v in redis_commands(redis, tls_ca).items()}
    return cpu, issued(issuer) - tokens0, {k: v for k, v in commands.items() if v > 0}


def count_syscalls(fleet, issuer: int, seconds: int, directory: str) -> tuple[int, int]:
    """The fleet's system calls (strace -f -c, attached for `seconds`) and the token requests meanwhile."""
    tracers = [subprocess.Popen(["strace", "-f", "-c", "-o", f"{directory}/strace-{i}", "-p", str(proc.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i, (proc, _) in enumerate(fleet)]
    time.sleep(1)
    tokens0 = issued(issuer)
    time.sleep(seconds)
    tokens = issued(issuer) - tokens0
    calls = 0
    for i, tracer in enumerate(tracers):
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=10)
        # The rows between the dashed lines: % time, seconds, usecs/call, calls, [errors,] syscall.
        text = Path(f"{directory}/strace-{i}").read_text()
        rows = text.split("\n------")[1].splitlines()[1:] if "\n------" in text else []
        calls += sum(int(row.split()[3]) for row in rows if len(row.split()) >= 5)
    return calls, tokens


def token_thread(args) -> None:
    print(f"token thread: a fleet of 3 idle relays, 2 s tokens (a refresh a second), {args.fleet_seconds} s")
    for label in ("store.redis", "rediss:// (TLS)", "without store"):
        shared, tls = label != "without store", label.startswith("rediss")
        with tempfile.TemporaryDirectory() as directory:
            bench = Bench(Path(directory))
            try:
                upstream, issuer, redis = bench.nginx(), bench.issuer(), bench.redis(tls=tls)
                tls_ca = bench.tls_certificate()[0] if tls else None
                store = {"redis": f"redis://127.0.0.1:{redis}/0", "key": KEY} if shared else None
                if tls:
                    store = {"redis": f"rediss://127.0.0.1:{redis}/0", "key": KEY, "tls": {"caFile": tls_ca, "trust": "caFileOnly"}}
                fleet = [bench.relay(f"r{i}", upstream, issuer, 2, store) for i in range(3)]
                time.sleep(3)  # started, first refreshes done
                cpu, tokens, commands = measure(fleet, issuer, redis, args.fleet_seconds, tls_ca)
                # A refresh of the fleet: the shared one, or, without Redis, one per relay.
                refreshes = tokens if shared else tokens / 3
                line = (f"  {label:15} {tokens} token requests ({tokens / args.fleet_seconds:.1f}/s); per refresh of the fleet: "
                        f"{cpu / refreshes * 1e3:.2f} ms CPU for the 3 relays")
                if shared:
                    # Scripts' own calls are counted too: each acquire runs one HMGET and one PTTL.
                    reads = commands.get("hmget", 0) - commands.get("pttl", 0)
                    evals = commands.get("eval", 0)
                    line += (f", {(reads + evals) / refreshes:.1f} Redis round trips ({reads / refreshes:.1f} HMGET reads, "
                             f"{evals / refreshes:.1f} EVAL: acquires, writes, releases)")
                print(line)
                if args.syscalls:
                    calls, traced_tokens = count_syscalls(fleet, issuer, args.fleet_seconds // 2, directory)
                    traced_refreshes = traced_tokens if shared else traced_tokens / 3
                    print(f"  {'':15} {calls / max(traced_refreshes, 1):.0f} system calls per refresh of the fleet (strace -f -c)")
            finally:
                bench.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--fleet-seconds", type=int, default=20)
    parser.add_argument("--syscalls", action="store_true")
    parser.add_argument("--token-thread-only", action="store_true", help="skip the request path (wrk)")
    args = parser.parse_args()
    if not args.token_thread_only:
        request_path(args)
    token_thread(args)


if __name__ == "__main__":
    main()
