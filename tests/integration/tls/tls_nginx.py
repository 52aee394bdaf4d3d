"""A real TLS upstream for the relay: Debian's nginx, started per test with a generated config.

One `server` listens with TLS on 127.0.0.1 (and ::1 when the host has IPv6 loopback) on a port
picked free at start, presenting one of the test PKI's server certificates (`cert`: server |
wrong_name | expired | other_ca). It asks for a client certificate (`ssl_verify_client optional`,
trusting the test CA), keeps connections alive (for `keepalive_requests` requests each, 10,000
unless told: 1 makes every request close its connection) and caches TLS sessions (session IDs and
tickets).

What it answers:
    every path           200 application/json, what nginx saw of the request and its connection:
                         {"request", "method", "uri", "host", "authorization", "ssl_protocol",
                          "ssl_cipher", "ssl_session_reused" ("r" or "."), "ssl_server_name" (SNI),
                          "ssl_alpn_protocol", "ssl_client_verify" (SUCCESS | NONE | FAILED:...),
                          "ssl_client_s_dn", "ssl_client_i_dn", "ssl_client_fingerprint" (SHA-1 of
                          the client certificate, hex), "connection" (nginx's connection
                          serial number), "connection_requests" (1, 2, ... on that connection)}
    /close               the same, with `Connection: close`, and the connection is closed
    /echo/...            proxied (unbuffered both ways, no body size limit) to the echo upstream
                         given at start, as `/...`: /echo/download?bytes=N streams N pattern bytes,
                         PUT /echo/upload reports the SHA-256 of what it received
Every answer (404s and proxied ones included) carries the TLS facts as response headers:
    X-Tls-Protocol, X-Tls-Session-Reused, X-Tls-Server-Name, X-Tls-Alpn, X-Tls-Client-Verify,
    X-Tls-Client-S-Dn, X-Tls-Connection, X-Tls-Connection-Requests, X-Tls-Request
(nginx omits a header whose value is empty: no SNI, no ALPN, no client DN).

The access log (one JSON object per request, `access_records()`) holds the same facts minus the
Authorization header; the error log (level info) shows refused handshakes, e.g. "alert unknown ca"
when the relay rejected nginx's certificate. Both are attached to a failing test's report.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from deadlines import scaled
from processes import LOOPBACK, STARTUP_SECONDS, _Process, can_connect, free_port, ipv6_loopback_available
from tls_pki import TestPKI

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

# The facts nginx reports, as (json key, nginx variable, response header or None).
FACTS = [
    ("request", "$request", "X-Tls-Request"),
    ("method", "$request_method", None),
    ("uri", "$request_uri", None),
    ("host", "$http_host", None),
    ("authorization", "$http_authorization", None),
    ("ssl_protocol", "$ssl_protocol", "X-Tls-Protocol"),
    ("ssl_cipher", "$ssl_cipher", None),
    ("ssl_session_reused", "$ssl_session_reused", "X-Tls-Session-Reused"),
    ("ssl_server_name", "$ssl_server_name", "X-Tls-Server-Name"),
    ("ssl_alpn_protocol", "$ssl_alpn_protocol", "X-Tls-Alpn"),
    ("ssl_client_verify", "$ssl_client_verify", "X-Tls-Client-Verify"),
    ("ssl_client_s_dn", "$ssl_client_s_dn", "X-Tls-Client-S-Dn"),
    ("ssl_client_i_dn", "$ssl_client_i_dn", None),
    ("ssl_client_fingerprint", "$ssl_client_fingerprint", None),
    ("connection", "$connection", "X-Tls-Connection"),
    ("connection_requests", "$connection_requests", "X-Tls-Connection-Requests"),
]
NUMERIC = {"connection", "connection_requests"}
LOGGED = [f for f in FACTS if f[0] != "authorization"]


def _json_template(facts) -> str:
    """A JSON object of nginx variables for `return` / `log_format` (values have no quotes in
    these tests: request lines, DNs and tokens of the test PKI and IdPs)."""
    parts = [f'"{key}":{var}' if key in NUMERIC else f'"{key}":"{var}"' for key, var, _ in facts]
    return "{" + ",".join(parts) + "}"


def _config(workdir: Path, ports: list[tuple[str, int]], cert: Path, key: Path, client_ca: Path,
            protocols: str, echo_port: int | None, verify_client: str, keepalive_requests: int) -> str:
    listen = "\n".join(f"        listen {f'[{h}]' if ':' in h else h}:{p} ssl;" for h, p in ports)
    headers = "\n".join(f"        add_header {h} \"{var}\" always;" for _, var, h in FACTS if h)
    body = _json_template(FACTS)
    temp = "\n".join(f"    {kind}_temp_path {workdir / ('tmp-' + kind)};"
                     for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    echo = ""
    if echo_port is not None:
        echo = f"""
        location /echo/ {{
            proxy_pass http://127.0.0.1:{echo_port}/;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 120s;
            proxy_send_timeout 120s;
        }}"""
    client_auth = "" if verify_client == "off" else f"""
        ssl_client_certificate {client_ca};
        ssl_verify_client {verify_client};
        ssl_verify_depth 2;"""
    # Workers of a root master run as `nobody` unless told otherwise; they must read this
    # test's private directory (temp paths), so they keep the test runner's identity.
    user = "user root root;" if os.geteuid() == 0 else ""
    return f"""\
{user}
daemon off;
master_process on;
worker_processes 1;
pid {workdir / 'nginx.pid'};
error_log {workdir / 'error.log'} info;
events {{ worker_connections 1024; }}
http {{
{temp}
    log_format tls escape=json '{_json_template(LOGGED)}';
    access_log {workdir / 'access.log'} tls;
    server_tokens off;
    keepalive_timeout 60s;
    keepalive_requests {keepalive_requests};
    client_max_body_size 0;
    client_body_buffer_size 64k;
    sendfile off;

    server {{
{listen}
        server_name localhost;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols {protocols};
        ssl_session_cache shared:tls:1m;
        ssl_session_timeout 10m;
        ssl_session_tickets on;{client_auth}

{headers}

        location / {{
            default_type application/json;
            return 200 '{body}';
        }}
        location = /close {{
            keepalive_timeout 0;
            default_type application/json;
            return 200 '{body}';
        }}{echo}
    }}
}}
"""


class NginxTLS(_Process):
    """nginx with TLS on a free loopback port; `url()` is its https base URL."""
    name = "nginx (TLS upstream)"

    def __init__(self, workdir: Path, pki: TestPKI, cert: str = "server", echo=None,
                 protocols: str = "TLSv1.2 TLSv1.3", verify_client: str = "optional",
                 ipv6: bool | None = None, keepalive_requests: int = 10000):
        workdir.mkdir(parents=True, exist_ok=True)
        super().__init__(workdir / "nginx.stderr")
        self.workdir = workdir
        self.pki = pki
        self.cert_kind = cert
        self.echo = echo
        self.protocols = protocols
        self.verify_client = verify_client
        self.keepalive_requests = keepalive_requests
        self.ipv6 = ipv6_loopback_available() if ipv6 is None else ipv6
        self.host = LOOPBACK
        self.port = 0
        self.config_path = workdir / "nginx.conf"

    # -- process -------------------------------------------------------------------------------

    def start(self) -> "NginxTLS":
        leaf = self.pki.leaf(self.cert_kind)
        for attempt in range(5):
            self.port = free_port(LOOPBACK)
            ports = [(LOOPBACK, self.port)] + ([("::1", self.port)] if self.ipv6 else [])
            self.config_path.write_text(_config(self.workdir, ports, leaf.cert, leaf.key, self.pki.ca.cert,
                                                self.protocols, self.echo.port if self.echo else None,
                                                self.verify_client, self.keepalive_requests))
            for name in ("error.log", "access.log"):
                (self.workdir / name).unlink(missing_ok=True)
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen([NGINX, "-p", str(self.workdir), "-c", str(self.config_path),
                                          "-e", str(self.workdir / "error.log")],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
            log.close()
            deadline = time.monotonic() + scaled(STARTUP_SECONDS)
            while not can_connect(LOOPBACK, self.port):
                if not self.running():
                    break
                if time.monotonic() > deadline:
                    self.kill()
                    pytest.fail(f"nginx did not listen on port {self.port} within {scaled(STARTUP_SECONDS):.0f}s\n"
                                f"{self.log()}")
                time.sleep(0.02)
            else:
                return self
            if "in use" not in self.log() or attempt == 4:
                pytest.fail(f"nginx exited with {self.proc.returncode} at start\n{self.log()}")
        raise AssertionError("unreachable")

    def kill(self) -> None:
        """Fast shutdown (SIGTERM to the master, which stops its worker); the whole process group
        (only nginx's own processes: it was started in a new session) is killed if that hangs."""
        if self.proc is None:
            return
        if self.running():
            self.signalled = True
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # stray workers of a master that is gone
        except (ProcessLookupError, PermissionError):
            pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=5)

    def log(self) -> str:
        parts = []
        for name in ("nginx.stderr", "error.log", "access.log"):
            try:
                text = (self.workdir / name).read_text(errors="replace")
            except FileNotFoundError:
                continue
            if text:
                parts.append(f"--- {name}\n{text}")
        return "\n".join(parts)

    # -- what the tests use ----------------------------------------------------------------------

    def url(self, host: str = LOOPBACK) -> str:
        """https://HOST:PORT (host: 127.0.0.1, localhost, or ::1 when listening there)."""
        return f"https://{f'[{host}]' if ':' in host else host}:{self.port}"

    def access_records(self, count: int | None = None, timeout: float = 5) -> list[dict]:
        """One dict per request nginx finished, in order (the FACTS minus authorization).

        nginx writes a request's line after its response has gone, so a test that has just read a
        response passes `count`: the records once there are at least that many (a bounded wait)."""
        records = self._read_access_records()
        deadline = time.monotonic() + scaled(timeout)
        while count is not None and len(records) < count and time.monotonic() < deadline:
            time.sleep(0.02)
            records = self._read_access_records()
        return records

    def _read_access_records(self) -> list[dict]:
        try:
            text = (self.workdir / "access.log").read_text()
        except FileNotFoundError:
            return []
        # A line nginx is still writing has no newline yet: only whole lines are records.
        return [json.loads(line) for line in text.split("\n")[:-1] if line.strip()]

    def error_log(self) -> str:
        try:
            return (self.workdir / "error.log").read_text(errors="replace")
        except FileNotFoundError:
            return ""
