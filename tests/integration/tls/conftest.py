"""Fixtures of the TLS tests (on top of ../conftest.py: start_relay, upstream, start_upstream, ...).

- `tls_pki` (session): the test PKI (tls_pki.py): a CA, server certificates good / wrong name /
  expired / from another CA, a client certificate, SPKI pins.
- `nginx_tls` / `start_nginx_tls(cert="server", echo=None, protocols=..., verify_client=...)`:
  a real TLS upstream (tls_nginx.py) reporting what it saw of each request and connection.
- `tls_stub_idp` / `start_tls_stub_idp(cert="server", ask_client_cert=False)`: ../oauth's scripted
  token endpoint over TLS (tls_idp.py).
- `silent_port`: a loopback port that accepts TCP connections and never says a word (a TLS
  handshake there can only time out).
- autouse `no_key_material_in_relay_logs`: after every test here, no relay log holds a line of
  a private key of the test PKI, nor a secret or token of a TLS stub IdP.
A failing test's report carries the nginx and IdP logs (relay and echo logs: ../conftest.py).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# The OAuth helpers (idp_processes, idp_relay, idp_stub) live in ../oauth.
if str(HERE.parent / "oauth") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "oauth"))

from idp_relay import find_leaks, relay_logs  # noqa: E402
from processes import LOOPBACK  # noqa: E402
from tls_idp import TLSStubIdP  # noqa: E402
from tls_nginx import NginxTLS  # noqa: E402
from tls_pki import TestPKI  # noqa: E402

_PROCS = pytest.StashKey[list]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        for proc in item.stash.get(_PROCS, []):
            text = proc.log()
            if len(text) > 30_000:
                text = "[...]\n" + text[-30_000:]
            report.sections.append((f"{proc.name} log ({proc.log_path.parent})", text or "(empty)"))
    return report


@pytest.fixture(scope="session")
def tls_pki(tmp_path_factory) -> TestPKI:
    return TestPKI(tmp_path_factory.mktemp("tls-pki"))


@pytest.fixture
def start_nginx_tls(request, tmp_path, tls_pki, start_upstream):
    """start_nginx_tls(cert="server", echo=None, protocols="TLSv1.2 TLSv1.3",
    verify_client="optional", keepalive_requests=10000) -> NginxTLS. `echo`: an EchoUpstream served under /echo/.
    (Depends on start_upstream so that nginx stops before the echo upstreams it proxies to.)"""
    started: list[NginxTLS] = []

    def start(cert: str = "server", echo=None, **options) -> NginxTLS:
        nginx = NginxTLS(tmp_path / f"nginx-{len(started)}", tls_pki, cert, echo, **options)
        started.append(nginx)
        request.node.stash.setdefault(_PROCS, []).append(nginx)
        return nginx.start()

    yield start
    for nginx in started:
        nginx.kill()


@pytest.fixture
def nginx_tls(start_nginx_tls) -> NginxTLS:
    """nginx presenting the good server certificate (localhost, 127.0.0.1, ::1; the test CA)."""
    return start_nginx_tls()


@pytest.fixture
def start_tls_stub_idp(request, tmp_path, tls_pki):
    started: list[TLSStubIdP] = []

    def start(cert: str = "server", ask_client_cert: bool = False) -> TLSStubIdP:
        idp = TLSStubIdP(tmp_path / f"tls-stub-idp-{len(started)}.log", tls_pki, cert, ask_client_cert)
        started.append(idp)
        request.node.stash.setdefault(_PROCS, []).append(idp)
        return idp.start()

    yield start
    for idp in started:
        if idp.running():  # its records, for the log scan after the relays have stopped
            try:
                idp.final_sensitive_values = idp.sensitive_values()
            except (OSError, AssertionError):
                pass
        idp.kill()


@pytest.fixture
def tls_stub_idp(start_tls_stub_idp) -> TLSStubIdP:
    return start_tls_stub_idp()


@pytest.fixture
def silent_port() -> int:
    """A listener that never accepts: the kernel completes TCP handshakes (backlog), nobody reads
    the ClientHello, nothing is ever sent back."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((LOOPBACK, 0))
    listener.listen(16)
    yield listener.getsockname()[1]
    listener.close()


def private_key_lines(pki: TestPKI) -> dict[str, str]:
    """The base64 lines of every private key of the PKI (each one is key material)."""
    out = {}
    for path in sorted(pki.dir.glob("*.key")):
        lines = [line for line in path.read_text().splitlines() if line and not line.startswith("-----")]
        for i, line in enumerate(lines):
            if len(line) >= 16:
                out[f"line {i + 1} of private key {path.name}"] = line
    return out


@pytest.fixture(autouse=True)
def no_key_material_in_relay_logs(tmp_path, tls_pki, request):
    """Set up before (so torn down after) the relays of the test: their logs are complete."""
    yield
    logs = relay_logs(tmp_path)
    if not logs:
        return
    leaks = [f"{label} in {where}" for label, line in private_key_lines(tls_pki).items()
             for where, text in logs.items() if line in text]
    for idp in request.node.stash.get(_PROCS, []):
        if isinstance(idp, TLSStubIdP):
            values = getattr(idp, "final_sensitive_values", None) or {"client secret": idp.client_secret}
            leaks += find_leaks(logs, {k: v for k, v in values.items() if v and len(v) >= 8})
    if leaks:
        pytest.fail("key material or secrets in the relay's output:\n  " + "\n  ".join(leaks), pytrace=False)
