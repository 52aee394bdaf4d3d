"""The clients the forward-proxy tests run as users' tools would, each in its own process with only
the environment a user would set: Python `requests` (HTTPS_PROXY, REQUESTS_CA_BUNDLE), `openssl
s_client`, curl (through forward_relay.proxy_curl or directly with --resolve).

What a site answered (tls_nginx.py's JSON) comes back with its Authorization replaced by the
SHA-256 of the bearer token (`authorization_sha256`), so no token is ever printed, not even in
an assertion message.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from deadlines import scaled
from http_client import curl

# Run by a fresh interpreter: one GET with requests; prints {"status", "answer" | "error"}.
# RESOLVE (JSON, optional) maps names to addresses, as curl's --resolve does, for a site reached
# without a proxy.
_REQUESTS_SCRIPT = r"""
import hashlib, json, os, socket, sys
import requests
resolve = json.loads(os.environ.get("RESOLVE_FOR_TEST", "{}"))
if resolve:
    real = socket.getaddrinfo
    socket.getaddrinfo = lambda host, *a, **k: real(resolve.get(host, host), *a, **k)
try:
    resp = requests.get(sys.argv[1], timeout=float(sys.argv[2]))
except requests.exceptions.SSLError as e:
    print(json.dumps({"error": "ssl", "detail": str(e)}))
    sys.exit(0)
except requests.exceptions.RequestException as e:
    print(json.dumps({"error": type(e).__name__, "detail": str(e)}))
    sys.exit(0)
out = {"status": resp.status_code}
try:
    answer = resp.json()
except ValueError:
    answer = None
if isinstance(answer, dict) and "authorization" in answer:
    value = answer.pop("authorization")
    token = value.removeprefix("Bearer ") if value.startswith("Bearer ") else None
    answer["authorization_scheme"] = value.split(" ")[0] if value else ""
    answer["authorization_sha256"] = hashlib.sha256(token.encode()).hexdigest() if token else None
out["answer"] = answer
print(json.dumps(out))
"""


def token_sha256(authorization: str) -> str | None:
    """The SHA-256 (hex) of the token of `Bearer <token>`; None for anything else."""
    if not authorization.startswith("Bearer "):
        return None
    return hashlib.sha256(authorization.removeprefix("Bearer ").encode()).hexdigest()


def site_answer(body: bytes) -> dict:
    """A site's JSON answer with `authorization` replaced by `authorization_scheme` and
    `authorization_sha256`."""
    answer = json.loads(body)
    value = answer.pop("authorization")
    answer["authorization_scheme"] = value.split(" ")[0] if value else ""
    answer["authorization_sha256"] = token_sha256(value)
    return answer


def python_requests(url: str, env: dict[str, str], resolve: dict[str, str] | None = None, timeout: float = 15) -> dict:
    """GET `url` with requests in a fresh interpreter whose environment is the test runner's minus
    every proxy variable, plus `env` (HTTPS_PROXY, REQUESTS_CA_BUNDLE, ...)."""
    base = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k not in ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE")}
    if resolve:
        base["RESOLVE_FOR_TEST"] = json.dumps(resolve)
    proc = subprocess.run([sys.executable, "-c", _REQUESTS_SCRIPT, url, str(scaled(timeout))], env={**base, **env},
                          capture_output=True, text=True, timeout=scaled(timeout) + 10, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and proc.stdout.strip(), f"the requests script failed ({proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


def s_client(connect: str, server_name: str, ca_file: Path, proxy: str | None = None, timeout: float = 15) -> tuple[bool, str]:
    """`openssl s_client -verify_return_error` (through `-proxy host:port` when given): (the
    handshake verified, s_client's output minus the certificate PEM)."""
    args = ["openssl", "s_client", "-connect", connect, "-servername", server_name, "-CAfile", str(ca_file),
            "-verify_return_error", "-verify_hostname", server_name, "-brief"]
    if proxy:
        args += ["-proxy", proxy]
    proc = subprocess.run(args, input="", capture_output=True, text=True, timeout=scaled(timeout))
    output = proc.stdout + proc.stderr
    verified = proc.returncode == 0 and "Verification: OK" in output
    return verified, output


def presented_certificate(connect: str, server_name: str, proxy: str | None = None, timeout: float = 15) -> bytes:
    """The leaf certificate (PEM) a server presents, through `-proxy` when given, without
    verifying it."""
    args = ["openssl", "s_client", "-connect", connect, "-servername", server_name, "-showcerts"]
    if proxy:
        args += ["-proxy", proxy]
    proc = subprocess.run(args, input="", capture_output=True, text=True, timeout=scaled(timeout))
    text = proc.stdout
    start, end = text.find("-----BEGIN CERTIFICATE-----"), text.find("-----END CERTIFICATE-----")
    assert start >= 0 and end > start, f"no certificate from {connect} ({server_name}): {proc.stderr[-1000:]}"
    return text[start:end + len("-----END CERTIFICATE-----")].encode() + b"\n"


def direct_curl(url: str, ca_file: Path, resolve: dict[str, str] | None = None, *args: str):
    """curl (no proxy) trusting `ca_file`; `resolve` maps "name:port" to an address (--resolve)."""
    extra = []
    for name_port, address in (resolve or {}).items():
        extra += ["--resolve", f"{name_port}:{address}"]
    return curl(url, "--cacert", str(ca_file), *extra, *args)
