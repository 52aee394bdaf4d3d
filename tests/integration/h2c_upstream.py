"""An h2c-capable upstream for the oauth-relay integration tests: hypercorn serving a tiny ASGI app
on loopback, cleartext, HTTP/1.1 and HTTP/2.

Hypercorn answers a body-less HTTP/1.1 request carrying `Upgrade: h2c` with `101 Switching
Protocols` and then speaks HTTP/2 on that connection (RFC 7540 §3.2): the upgrade request itself
becomes stream 1, and the client may open any other stream, for any path. That is what a relay
must not tunnel unless the route allows it.

Run it:
    python3 h2c_upstream.py --port N [--host 127.0.0.1]       (--port 0 picks a free port)
The first line on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT stops it.

Answers, on any path but /seen: 200, `application/json`,
    {"path", "query", "method", "http_version", "headers": [[name, value], ...] (names lower-case)}
and every such request is recorded.
    GET /seen      the records so far, in order (itself not recorded): ask it directly, not
                   through the relay, to learn every request the app was given and over what.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sys

from loopback_server import run_loopback_server, wait_for_stop_signal

SEEN: list[dict] = []


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    record = {
        "path": scope["path"],
        "query": scope["query_string"].decode("latin-1"),
        "method": scope["method"],
        "http_version": scope["http_version"],
        "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
    }
    if scope["path"] == "/seen":
        body = json.dumps(SEEN).encode()
    else:
        SEEN.append(record)
        body = json.dumps(record).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _main(host: str, port: int) -> None:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]
    access = logging.getLogger("h2c_upstream.access")
    access.addHandler(logging.StreamHandler(sys.stderr))
    access.setLevel(logging.INFO)
    access.propagate = False
    config.accesslog = access  # stdout carries only the LISTENING line
    config.errorlog = "-"  # stderr
    config.graceful_timeout = 1
    print(f"LISTENING {host} {sock.getsockname()[1]}", flush=True)
    await serve(app, config, shutdown_trigger=wait_for_stop_signal)


def main(argv: list[str] | None = None) -> None:
    run_loopback_server(__doc__.split("\n\n")[0], _main, argv)


if __name__ == "__main__":
    sys.exit(main())
