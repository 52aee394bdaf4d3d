"""Times a relay's start-up and reloads with a configuration from bench/scale_config.py, for
bench/config-scale.sh.

    python3 bench/scale_probe.py --relay BIN --routes N --identities M --upstream URL --token-url URL
                                 [--reloads K] [--workers W]

Starts the relay on free loopback ports and prints one JSON object:
- `accepting_ms`: from the start of the process to the listener accepting a connection;
- `healthz_ms`: to `GET /healthz` answering 200 on the admin listener;
- `ready_ms`: to `GET /readyz` answering 200 (every identity holds a token);
- `ready_cpu_ms`: the relay's CPU time (user and system, all threads) when `/readyz` first
  answered 200: what start-up costs whatever else the machine runs, where the times above
  also hold the waits for a busy CPU;
- `rss_kib`: the relay's VmRSS once ready, after one request through the typical route;
- `reloads`: K `POST /reload`s, each after the file was rewritten with every route's upstream
  path changed (`--variant`), each as `answer_ms` (request sent to answer read) and `serving_ms`
  (request sent to the typical route's answer showing the new upstream path; the upstream must
  answer with the request's path, as bench/config-scale.sh's nginx does), and `cpu_ms` (the
  relay's CPU time from the request to the answer).
The relay logs at its default level (info) to a file, shown only on failure.
"""
import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scale_config  # noqa: E402

DEADLINE_SECONDS = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def milliseconds_since(start):
    return round((time.monotonic() - start) * 1000, 1)


def until(condition, start, what):
    """Polls `condition` every millisecond until true; the elapsed time since `start` in ms."""
    while not condition():
        if time.monotonic() - start > DEADLINE_SECONDS:
            raise SystemExit(f"{what}: not within {DEADLINE_SECONDS} s")
        time.sleep(0.001)
    return milliseconds_since(start)


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def get(port, path, host=None, method="GET"):
    """(status, body) of one request, or (None, b"") when nothing answers."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request(method, path, headers={"Host": host or f"127.0.0.1:{port}"})
        response = connection.getresponse()
        result = (response.status, response.read())
        connection.close()
        return result
    except OSError:
        return (None, b"")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def cpu_ms(pid):
    """User and system time of every thread of `pid`, in milliseconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def write_config(path, args, listen, admin, variant):
    namespace = argparse.Namespace(routes=args.routes, identities=args.identities, upstream=args.upstream,
                                   token_url=args.token_url, listen=f"127.0.0.1:{listen}", admin=f"127.0.0.1:{admin}",
                                   workers=args.workers, variant=variant)
    text = json.dumps(scale_config.config(namespace))
    with open(path + ".tmp", "w") as file:
        file.write(text)
    os.replace(path + ".tmp", path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--relay", required=True)
    parser.add_argument("--routes", type=int, required=True)
    parser.add_argument("--identities", type=int, default=0)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--token-url", default="http://127.0.0.1:9/token")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--reloads", type=int, default=0)
    args = parser.parse_args()

    directory = tempfile.mkdtemp()
    path = os.path.join(directory, "relay.json")
    listen, admin = free_port(), free_port()
    write_config(path, args, listen, admin, "/v0")
    log = open(os.path.join(directory, "relay.log"), "w+")
    start = time.monotonic()
    relay = subprocess.Popen([args.relay, "run", "--config", path], stderr=log)
    result = {}
    try:
        result["accepting_ms"] = until(lambda: accepts(listen), start, "the listener")
        result["healthz_ms"] = until(lambda: get(admin, "/healthz")[0] == 200, start, "/healthz")
        result["ready_ms"] = until(lambda: get(admin, "/readyz")[0] == 200, start, "/readyz")
        result["ready_cpu_ms"] = cpu_ms(relay.pid)
        typical = scale_config.TYPICAL
        status, body = get(listen, typical["pathPrefix"] + "orders", host=typical["host"])
        if status != 200 or not body.startswith(b"/v0/"):
            raise SystemExit(f"the typical route answered {status}")
        result["rss_kib"] = rss_kib(relay.pid)
        reloads = []
        for round in range(1, args.reloads + 1):
            variant = f"/v{round}"
            write_config(path, args, listen, admin, variant)
            sent, cpu_before = time.monotonic(), cpu_ms(relay.pid)
            status, body = get(admin, "/reload", method="POST")
            answer_ms, cpu = milliseconds_since(sent), cpu_ms(relay.pid) - cpu_before
            if status != 200:
                raise SystemExit(f"POST /reload answered {status}: {body[:200]!r}")
            serving_ms = until(lambda: get(listen, typical["pathPrefix"] + "orders", host=typical["host"])[1]
                               .startswith(variant.encode() + b"/"), sent, "the reloaded route")
            reloads.append({"answer_ms": answer_ms, "serving_ms": serving_ms, "cpu_ms": cpu})
        result["reloads"] = reloads
    except BaseException:
        log.seek(0)
        sys.stderr.write(log.read()[-4000:])
        raise
    finally:
        relay.terminate()
        relay.wait(timeout=30)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
