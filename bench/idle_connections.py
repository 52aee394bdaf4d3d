"""Opens N keep-alive connections to a proxy, makes one request on each, keeps them all open
and idle, and prints the proxy's RSS (VmRSS of PID) while they are held. Loopback only.

    python3 bench/idle_connections.py HOST PORT N PID
"""
import resource
import selectors
import socket
import sys
import time

host, port, count, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
assert host.startswith("127.") or host == "::1", "loopback only"
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 1024), hard))

def rss_kib():
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))

request = f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
sockets, answered = [], 0
deadline = time.monotonic() + 120
selector = selectors.DefaultSelector()
for i in range(count):
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(request)
    s.setblocking(False)
    selector.register(s, selectors.EVENT_READ)
    sockets.append(s)
    # Read answers as they come, so the proxy's write buffers stay empty.
    for key, _ in selector.select(timeout=0):
        if key.fileobj.recv(65536):
            answered += 1
            selector.unregister(key.fileobj)
while answered < count and time.monotonic() < deadline:
    for key, _ in selector.select(timeout=1):
        if key.fileobj.recv(65536):
            answered += 1
            selector.unregister(key.fileobj)
time.sleep(1)
print(f"  relay RSS with {answered}/{count} idle keep-alive connections: {rss_kib()} KiB")
for s in sockets:
    s.close()
