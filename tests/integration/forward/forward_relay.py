"""The relay side of the forward-proxy tests (issue 26): whether the binary has the feature, the
`forward` config, clients that speak through the proxy (curl with `-x`, a raw TLS connection over
a `CONNECT` tunnel), and `oauth-relay ca`.

The tests that need the forward listener or the CA command are marked with `needs_forward` /
`needs_ca_command`: skipped while the binary under test lacks the feature (the check runs the
binary once per session), run as soon as it has it. Nothing else is skipped.
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
import ssl
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from deadlines import scaled, wait_until
from http_client import IO_SECONDS, CurlResult, RawConnection, Response, curl
from processes import (LOOPBACK, RELAY_BIN, STARTUP_SECONDS, can_connect, free_port, relay_config, run_cli,
                       write_config)

FORWARD_CA_FILES = ("ca.pem", "ca.key")


# ---------------------------------------------------------------------------------------------
# Is the feature in the binary under test?

def _binary_present() -> bool:
    return RELAY_BIN.is_file() and os.access(RELAY_BIN, os.X_OK)


@functools.lru_cache(maxsize=None)
def ca_command_missing() -> str | None:
    """Why the `ca` tests cannot run yet (the binary has no `ca` subcommand), or None. A missing
    binary is not a reason: those tests then fail on it like every other test."""
    if not _binary_present():
        return None
    # Without the subcommand, `oauth-relay ca --help` is the default subcommand's (run) help.
    proc = subprocess.run([str(RELAY_BIN), "ca", "--help"], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    if "oauth-relay ca" not in proc.stdout + proc.stderr:
        return f"{RELAY_BIN} has no `ca` subcommand yet (issue 26)"
    return None


@functools.lru_cache(maxsize=None)
def forward_listener_missing() -> str | None:
    """Why the forward-proxy tests cannot run yet (the binary accepts a `forward` config but does
    not listen on `forward.listen`), or None. Starts the binary once, on loopback."""
    if not _binary_present():
        return None
    with tempfile.TemporaryDirectory(prefix="relay-forward-probe-") as tmp:
        listen, forward = free_port(), free_port()
        config = relay_config(f"{LOOPBACK}:{listen}", [{"match": {"host": "api.test"}, "upstream": "http://127.0.0.1:9"}],
                              forward={"listen": f"{LOOPBACK}:{forward}", "caDirectory": f"{tmp}/forward-ca"})
        path = Path(tmp, "relay.json")
        path.write_text(json.dumps(config))
        env = {**os.environ, "XDG_STATE_HOME": f"{tmp}/state"}
        proc = subprocess.Popen([str(RELAY_BIN), "run", "--config", str(path)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        try:
            deadline = time.monotonic() + scaled(STARTUP_SECONDS)
            while time.monotonic() < deadline and proc.poll() is None:
                if can_connect(LOOPBACK, listen):
                    # The listeners are opened together: the main one up and the forward one
                    # not (after a last look) means there is none.
                    if can_connect(LOOPBACK, forward) or _listens_soon(forward):
                        return None
                    return f"{RELAY_BIN} does not listen on forward.listen yet (issue 26)"
                time.sleep(0.02)
            return f"{RELAY_BIN} does not run a forward config yet (exit {proc.poll()}; issue 26)"
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=scaled(10))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _listens_soon(port: int) -> bool:
    deadline = time.monotonic() + scaled(1)
    while time.monotonic() < deadline:
        if can_connect(LOOPBACK, port):
            return True
        time.sleep(0.02)
    return False


def needs_forward():
    """skipif for tests that start the relay with a forward listener (issue 26's data path; they
    run `oauth-relay ca` first, as users do)."""
    reason = ca_command_missing() or forward_listener_missing()
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def needs_ca_command():
    """skipif for tests of `oauth-relay ca`."""
    reason = ca_command_missing()
    return pytest.mark.skipif(reason is not None, reason=reason or "")


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
