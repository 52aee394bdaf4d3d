"""Opens N keep-alive connections to a proxy, makes one request on each (at most 64 in flight, as
a client pool would), keeps them all open and idle, and prints what the proxy's processes (PID and
its descendants) hold for them: their resident memory before and while the connections are held,
and the difference per connection. Loopback only.

    python3 bench/idle_connections.py HOST PORT N PID
    -> answered=N rss_before_kib=... rss_idle_kib=... bytes_per_connection=...
"""
import os
import resource
import selectors
import socket
import sys
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


def main():
    host, port, count, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
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

    for _ in range(count):
        while in_flight >= MAX_IN_FLIGHT and time.monotonic() < deadline:
            collect(1)
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(request)
        s.setblocking(False)
        selector.register(s, selectors.EVENT_READ)
        sockets.append(s)
        in_flight += 1
    while in_flight > 0 and time.monotonic() < deadline:
        collect(1)
    time.sleep(1)
    idle = rss_kib(pid)
    per_connection = (idle - before) * 1024 / max(answered, 1)
    print(f"answered={answered} rss_before_kib={before} rss_idle_kib={idle} bytes_per_connection={per_connection:.0f}")
    for s in sockets:
        s.close()


main()
