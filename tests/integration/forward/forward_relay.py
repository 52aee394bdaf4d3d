"""The relay side of the forward-proxy tests (issue 26): the `forward` config, clients that speak
through the proxy (curl with `-x`, a raw TLS connection over a `CONNECT` tunnel), and
`oauth-relay ca`."""

from __future__ import annotations

import re
import socket
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

from deadlines import scaled, wait_until
from http_client import IO_SECONDS, CurlResult, RawConnection, Response, curl
from processes import (LOOPBACK, STARTUP_SECONDS, can_connect, free_port, relay_config, run_cli,
                       write_config)

FORWARD_CA_FILES = ("ca.pem", "ca.key")


# ---------------------------------------------------------------------------------------------
# The config.

def forward_section(port: int, ca_directory: Path, connect_ports=(443,), **options) -> dict:
    """`forward`: listen on 127.0.0.1:port, the CA in ca_directory, CONNECT to these ports."""
    return {"listen": f"{LOOPBACK}:{port}", "connectPorts": list(connect_ports), "caDirectory": str(ca_directory),
            **options}


def api_route(host: str, upstream_url: str, ca_file: Path, identity: str | None = None, **options) -> dict:
    """A route on `match.host` to an https upstream that presents a certificate for `host` from
    `ca_file`'s CA (the upstream is reached by address; SNI and the checked name are `host`)."""
    r = {"match": {"host": host}, "upstream": upstream_url, "tls": {"caFile": str(ca_file), "serverName": host},
         **options}
    if identity is not None:
        r["identity"] = identity
    return r


@dataclass
class ForwardRelay:
    """A running relay with a forward listener: `relay` (its reverse listener and process),
    `port` (the forward listener), `ca_pem` (the CA its clients trust)."""
    relay: object
    port: int
    ca_pem: Path

    @property
    def proxy_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"


def start_forward_relay(start_relay, routes: list, ca_directory: Path, connect_ports=(443,),
                        forward_options: dict | None = None, **top) -> ForwardRelay:
    """As a user does: `oauth-relay ca --config` first (it creates the CA and says where it is),
    then the relay on the same config with a `forward` listener on a free port; returns once
    both listeners accept."""
    port = free_port()
    forward = forward_section(port, ca_directory, connect_ports, **(forward_options or {}))
    ca_directory.parent.mkdir(parents=True, exist_ok=True)
    config = write_config(ca_directory.parent / f"ca-config-{port}.json",
                          relay_config(f"{LOOPBACK}:{free_port()}", routes, forward=forward, **top))
    result = run_ca_command(config)
    assert result.returncode == 0, f"oauth-relay ca failed ({result.returncode}): {result.stderr[-2000:]}"
    relay = start_relay(routes, forward=forward, **top)
    wait_until(lambda: can_connect(LOOPBACK, port), STARTUP_SECONDS, f"the forward listener on port {port}")
    return ForwardRelay(relay, port, ca_directory / "ca.pem")


# ---------------------------------------------------------------------------------------------
# Clients through the proxy.

def proxy_curl(proxy_port: int, url: str, *args: str, timeout: float = 15) -> CurlResult:
    """curl through the forward proxy (`-x http://127.0.0.1:PORT`), nothing from the environment."""
    return curl(url, "--noproxy", "", "-x", f"http://{LOOPBACK}:{proxy_port}", *args, timeout=timeout)


def open_tunnel(proxy_port: int, target: str, headers=(), timeout: float = IO_SECONDS) -> tuple[RawConnection, Response]:
    """A connection to the proxy that has sent `CONNECT target` and read the answer's head:
    (the connection, the answer). A 2xx answer has no body (the tunnel follows); any other is
    read whole."""
    conn = RawConnection(LOOPBACK, proxy_port, timeout=timeout)
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}", *(f"{k}: {v}" for k, v in headers)]
    conn.send(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    head = conn.read_until(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if 200 <= status < 300:
        fields = [tuple(part.strip() for part in line.split(":", 1)) for line in head.decode("latin-1").split("\r\n")[1:] if line]
        return conn, Response(status, headers=fields)
    conn.buf[:0] = head
    return conn, conn.read_final_response()


def client_context(ca_file: Path) -> ssl.SSLContext:
    """Verification on, only `ca_file` trusted, ALPN http/1.1 (what an HTTPS_PROXY client does)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    context.set_alpn_protocols(["http/1.1"])
    return context


def intercepted_connection(proxy_port: int, host: str, ca_file: Path, port: int = 443,
                           timeout: float = IO_SECONDS) -> RawConnection:
    """A RawConnection speaking TLS to `host` through a `CONNECT host:port` tunnel, trusting only
    `ca_file` (the relay's CA for an intercepted host): raw request bytes written to it reach the
    relay's parser inside the intercepted connection."""
    conn, answer = open_tunnel(proxy_port, f"{host}:{port}", timeout=timeout)
    assert answer.status == 200, f"CONNECT {host}:{port} answered {answer.status}: {answer.body[:300]!r}"
    assert not conn.buf, f"bytes after the CONNECT answer: {bytes(conn.buf[:100])!r}"
    conn.sock.settimeout(scaled(timeout))
    conn.sock = client_context(ca_file).wrap_socket(conn.sock, server_hostname=host)
    return conn


def peer_certificate_pem(conn: RawConnection) -> bytes:
    """The leaf certificate the TLS peer of an intercepted (or tunnelled) connection presented."""
    return ssl.DER_cert_to_PEM_cert(conn.sock.getpeercert(binary_form=True)).encode()


# ---------------------------------------------------------------------------------------------
# `oauth-relay ca`.

# The CA's fingerprint line, as `openssl x509 -fingerprint -sha256 -noout` prints it (a line of
# its own: a fingerprint quoted inside another line, such as a previous CA's, is not it).
FINGERPRINT = re.compile(r"^SHA256 Fingerprint=((?:[0-9A-F]{2}:){31}[0-9A-F]{2})$", re.MULTILINE)


def run_ca_command(config_path: Path) -> subprocess.CompletedProcess:
    return run_cli("ca", "--config", str(config_path))


def printed_fingerprint(output: str) -> str:
    found = FINGERPRINT.findall(output)
    assert len(found) == 1, f"expected one 'SHA256 Fingerprint=AA:BB:...' line, found {len(found)} in:\n{output}"
    return found[0]


def mode_of(path: Path) -> int:
    return path.stat().st_mode & 0o777


def tls_handshake_refused(host: str, port: int, ca_file: Path, server_hostname: str | None) -> str | None:
    """Python's ssl against host:port trusting only `ca_file`: None when the handshake verifies,
    else OpenSSL's reason for the refusal (`verify_message`)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    with socket.create_connection((host, port), timeout=scaled(IO_SECONDS)) as raw:
        try:
            with context.wrap_socket(raw, server_hostname=server_hostname):
                return None
        except ssl.SSLCertVerificationError as e:
            return e.verify_message or str(e)
