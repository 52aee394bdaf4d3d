"""Opens N keep-alive connections to a proxy, makes one request on each, keeps them all open and
idle, and prints what the proxy's processes (PID and its descendants) hold for them: their resident
memory before and while the connections are held, and the difference per connection. Loopback only.

Two ways to make the requests:
- sequential (the default): at most 64 in flight, as a client pool would;
- `--burst`: every connection is opened first, then all N requests are sent at once, so that up to N
  are in flight together (each needs its request buffers and an upstream connection while it waits),
  and only then are the answers collected. What the proxy still holds once they are answered and
  idle is what the burst left behind: memory, and upstream connections.

With `--upstream-port PORT` it also counts the proxy's established TCP connections to that port
once the connections are idle (`ss -tnp`, the proxy's processes only: several proxies may share the
upstream). The memory is read once the proxy's RSS has stayed within 1% for 3 s, sampled from 2 s
after the last answer (at most 20 s after it), so a proxy that gives memory back shortly after a
burst is measured after it did. The memory is divided by the connections the proxy still holds
(`held`), not by those answered: a proxy that dropped some would otherwise be credited with their
share; `partial` ends the line when not every request was answered.

    python3 bench/idle_connections.py [--burst] [--upstream-port PORT] [--hold SECONDS] HOST PORT N PID
    -> answered=N held=N rss_before_kib=... rss_idle_kib=... bytes_per_connection=... upstream_connections=... [partial]
"""
import argparse
import os
import re
import resource
import selectors
import socket
import subprocess
import time

MAX_IN_FLIGHT = 64


def process_tree(root):
    """PID and every descendant (from /proc/*/stat), so nginx's and h2o's workers count too."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # The command name may contain spaces; the parent PID follows its closing ')'.
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def rss_kib(root):
    total = 0
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
        except (OSError, StopIteration):
            pass
    return total


def upstream_connections(root, port):
    """Established TCP connections from the proxy's processes to `port` (ss names each socket's
    owners as `pid=N`)."""
    pids = set(process_tree(root))
    out = subprocess.run(["ss", "-tnpH", "state", "established", f"( dport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if any(int(p) in pids for p in re.findall(r"pid=(\d+)", line)))


def settled_rss(pid, deadline):
    """The proxy's RSS once four samples a second apart (3 s) stayed within 1%, sampled from 2 s
    after the last response: the relay returns a burst's memory at least 1 s after its pools' last
    free, so an earlier quiet second is not the end. At the deadline, the last sample."""
    time.sleep(2)
    window = [rss_kib(pid)]
    while time.monotonic() < deadline:
        time.sleep(1)
        window = (window + [rss_kib(pid)])[-4:]
        if len(window) == 4 and max(window) - min(window) <= min(window) / 100:
            break
    return window[-1]


def held_connections(sockets):
    """The sockets the proxy has not closed: read to what has arrived, they end with no data
    waiting (not an end of stream or a reset)."""
    held = 0
    for s in sockets:
        s.setblocking(False)
        try:
            while s.recv(65536):
                pass
        except BlockingIOError:
            held += 1
        except OSError:
            pass
    return held


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--burst", action="store_true", help="all requests in flight at once")
    parser.add_argument("--upstream-port", type=int)
    parser.add_argument("--hold", type=float, default=0, help="seconds to keep the connections open after printing")
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("count", type=int)
    parser.add_argument("pid", type=int)
    args = parser.parse_args()
    host, port, count, pid = args.host, args.port, args.count, args.pid
    assert host.startswith("127.") or host == "::1", "loopback only"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 1024), hard))

    before = rss_kib(pid)
    request = f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    sockets, answered, in_flight = [], 0, 0
    selector = selectors.DefaultSelector()
    deadline = time.monotonic() + 180

    def collect(timeout):
        nonlocal answered, in_flight
        for key, _ in selector.select(timeout=timeout):
            # One small response each: the first bytes of it are enough to know it came.
            try:
                if key.fileobj.recv(65536):
                    answered += 1
            except ConnectionError:
                pass  # refused (a connection limit): not counted as answered
            in_flight -= 1
            selector.unregister(key.fileobj)

    def send(s):
        nonlocal in_flight
        s.sendall(request)
        s.setblocking(False)
        selector.register(s, selectors.EVENT_READ)
        in_flight += 1

    if args.burst:
        sockets = [socket.create_connection((host, port), timeout=10) for _ in range(count)]
        for s in sockets:
            send(s)
    else:
        for _ in range(count):
            while in_flight >= MAX_IN_FLIGHT and time.monotonic() < deadline:
                collect(1)
            s = socket.create_connection((host, port), timeout=10)
            sockets.append(s)
            send(s)
    while in_flight > 0 and time.monotonic() < deadline:
        collect(1)
    idle = settled_rss(pid, time.monotonic() + 20)
    # Per connection the proxy still holds: a proxy that refused or dropped some is not credited
    # with their share, and "partial" says not every request was answered.
    held = held_connections(sockets)
    per_connection = (idle - before) * 1024 / max(held, 1)
    line = (f"answered={answered} held={held} rss_before_kib={before} rss_idle_kib={idle}"
            f" bytes_per_connection={per_connection:.0f}")
    if args.upstream_port:
        line += f" upstream_connections={upstream_connections(pid, args.upstream_port)}"
    if answered < count:
        line += " partial"
    print(line, flush=True)
    time.sleep(args.hold)
    for s in sockets:
        s.close()


main()
