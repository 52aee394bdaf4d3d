"""TLS clients for checking the fixtures without the relay (and the TLS IdP's control API):

- `TLSConnection`: the raw-socket client of http_client.py over Python's ssl module, with a
  chosen trust, client certificate and TLS session (to resume one).
- `curl_tls(url, ...)`: curl with the options the relay's `tls` block stands for (--cacert,
  --cert/--key, --resolve, --pinnedpubkey), returning http_client's CurlResult.
"""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

from http_client import IO_SECONDS, CurlResult, RawConnection, curl


def client_context(cafile: Path | None = None, cert: Path | None = None, key: Path | None = None,
                   verify: bool = True, maximum: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if maximum is not None:
        ctx.maximum_version = maximum
    ctx.set_alpn_protocols(["http/1.1"])
    ctx.options |= getattr(ssl, "OP_IGNORE_UNEXPECTED_EOF", 0)
    if verify:
        ctx.load_verify_locations(cafile=str(cafile)) if cafile else ctx.load_default_certs()
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key))
    return ctx


class TLSConnection(RawConnection):
    """RawConnection over TLS: the handshake happens in the constructor (ssl.SSLError if refused).
    `server_hostname` is sent as SNI and verified (default: `host`)."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext, server_hostname: str | None = None,
                 session: ssl.SSLSession | None = None, timeout: float = IO_SECONDS):
        super().__init__(host, port, timeout=timeout)
        try:
            self.sock = context.wrap_socket(self.sock, server_hostname=server_hostname or host, session=session)
        except BaseException:
            self.sock.close()
            raise

    @property
    def session(self) -> ssl.SSLSession | None:
        return self.sock.session

    @property
    def session_reused(self) -> bool:
        return self.sock.session_reused

    def close(self) -> None:
        try:
            self.sock.unwrap() if isinstance(self.sock, ssl.SSLSocket) and self.sock.fileno() >= 0 else None
        except (OSError, ValueError):
            pass
        self.sock.close()


def curl_tls(url: str, *args: str, cacert: Path | None = None, cert: Path | None = None, key: Path | None = None,
             resolve: str | None = None, pin: str | None = None, timeout: float = 15) -> CurlResult:
    """curl with TLS options; `pin` in the relay's format (`sha256/<b64>`), `resolve` as
    `name:port:address`."""
    opts: list[str] = []
    if cacert is not None:
        opts += ["--cacert", str(cacert)]
    if cert is not None:
        opts += ["--cert", str(cert), "--key", str(key)]
    if resolve is not None:
        opts += ["--resolve", resolve]
    if pin is not None:
        opts += ["--pinnedpubkey", "sha256//" + pin.removeprefix("sha256/")]
    return curl(url, *opts, *args, timeout=timeout)


def handshake_refused(host: str, port: int, context: ssl.SSLContext, server_hostname: str | None = None) -> str | None:
    """None when a TLS handshake succeeds, else the error (e.g. CERTIFICATE_VERIFY_FAILED ...)."""
    try:
        with socket.create_connection((host, port), timeout=5) as raw:
            with context.wrap_socket(raw, server_hostname=server_hostname or host):
                return None
    except ssl.SSLError as e:
        return str(e)
