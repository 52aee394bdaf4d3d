"""A keep-alive HTTPS load client for bench/forward-cpu.sh: C processes, one TLS connection each,
each sending `GET PATH` to HOST for SECONDS and reading every response (Content-Length framed) before
the next. With --proxy the connection is opened through a forward proxy's CONNECT (the relay's
interception); without it, straight to --port (a TLS-terminating peer). Prints the requests completed
and the non-200 answers. Loopback only; bounded by SECONDS.

    python3 bench/tls_keepalive_client.py --port P [--proxy FWDPORT] --host api.test --cafile CA \
        --connections C --seconds D [--path /]
"""
import argparse
import multiprocessing
import socket
import ssl
import time


def open_connection(args):
    sock = socket.create_connection(("127.0.0.1", args.proxy or args.port), timeout=10)
    if args.proxy:
        sock.sendall(f"CONNECT {args.host}:{args.port} HTTP/1.1\r\nHost: {args.host}:{args.port}\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                raise SystemExit("the proxy closed the connection after CONNECT")
            answer += chunk
        if not answer.startswith(b"HTTP/1.1 200"):
            status_line = answer.split(b"\r\n", 1)[0]
            raise SystemExit(f"CONNECT refused: {status_line!r}")
    context = ssl.create_default_context(cafile=args.cafile)
    return context.wrap_socket(sock, server_hostname=args.host)


def read_response(tls, buffer):
    while b"\r\n\r\n" not in buffer:
        chunk = tls.recv(65536)
        if not chunk:
            raise SystemExit("the connection closed mid-response")
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = tls.recv(65536)
        if not chunk:
            raise SystemExit("the connection closed mid-body")
        rest += chunk
    return head[9:12], rest[length:]


def worker(args, results):
    tls = open_connection(args)
    request = f"GET {args.path} HTTP/1.1\r\nHost: {args.host}\r\n\r\n".encode()
    done = refused = 0
    buffer = b""
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        tls.sendall(request)
        status, buffer = read_response(tls, buffer)
        done += 1
        refused += status != b"200"
    tls.close()
    results.put((done, refused))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--proxy", type=int)
    parser.add_argument("--host", required=True)
    parser.add_argument("--cafile", required=True)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--path", default="/")
    args = parser.parse_args()
    results = multiprocessing.Queue()
    processes = [multiprocessing.Process(target=worker, args=(args, results)) for _ in range(args.connections)]
    for process in processes:
        process.start()
    totals = [results.get(timeout=args.seconds + 30) for _ in processes]
    for process in processes:
        process.join(timeout=10)
    print(sum(t[0] for t in totals), sum(t[1] for t in totals))


if __name__ == "__main__":
    main()
