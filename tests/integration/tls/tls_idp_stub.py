"""The scripted IdP stub of ../oauth/idp_stub.py behind TLS: an https token endpoint.

The same `Stub` (script, records, control paths /_stub/...), served by asyncio with an
ssl.SSLContext: the given certificate and key, TLS 1.2 minimum, ALPN http/1.1. Its control API
is on the same TLS port (the tests' client trusts the CA that signed the certificate).

    python3 tls_idp_stub.py --port 0 --cert server.pem --key server.key [--host 127.0.0.1] [--client-ca ca.pem]
With --client-ca it asks for a client certificate (optional; verified against that CA when one is
presented), and each token request's record holds the certificate's SHA-256 (`client_cert_sha256`).
The first line on stdout is `LISTENING <host> <port>`; SIGTERM or SIGINT stops it. (asyncio
does not log refused handshakes: a relay that rejects the certificate leaves no record.)
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "oauth"))
from idp_stub import MAX_HEAD_BYTES, Stub  # noqa: E402
from loopback_server import wait_for_stop_signal  # noqa: E402


def server_context(cert: str, key: str, client_ca: str | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])
    if client_ca is not None:
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(client_ca)
    return ctx


async def _main(host: str, port: int, cert: str, key: str, client_ca: str | None) -> None:
    server = await asyncio.start_server(lambda r, w: stub.connection(r, w), host, port, limit=MAX_HEAD_BYTES,
                                        ssl=server_context(cert, key, client_ca), ssl_handshake_timeout=10)
    bound = server.sockets[0].getsockname()[1]
    # The stub's login endpoints name their own URLs (discovery, verification URIs).
    stub = Stub(f"https://{f'[{host}]' if ':' in host else host}:{bound}")
    stub.scheme = "https"
    stub.server = server
    print(f"LISTENING {host} {bound}", flush=True)
    await wait_for_stop_signal()
    stub.server.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--client-ca")
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "::1"):
        parser.error("only loopback addresses (127.0.0.1, ::1)")
    asyncio.run(_main(args.host, args.port, args.cert, args.key, args.client_ca))


if __name__ == "__main__":
    sys.exit(main())
