"""The command line shared by the test servers (echo upstream, IdP stub): `--host`/`--port`,
loopback only, and serving until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import signal


async def wait_for_stop_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def run_loopback_server(description: str, serve, argv: list[str] | None = None) -> None:
    """Parses the command line and runs `serve(host, port)` (a coroutine) to its end."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "::1"):
        parser.error("only loopback addresses (127.0.0.1, ::1)")
    asyncio.run(serve(args.host, args.port))
