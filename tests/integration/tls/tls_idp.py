"""The https token endpoint of the TLS tests: ../oauth's scripted stub served over TLS
(tls_idp_stub.py) with a server certificate of the test PKI; with `ask_client_cert`, it asks for
a client certificate from the test CA and records the one presented. Everything else (script, records,
identity(), sensitive_values()) is StubIdP's; its control API is reached over TLS too.
"""

from __future__ import annotations

import sys
from pathlib import Path

from http_client import IO_SECONDS
from idp_processes import StubIdP
from processes import host_port
from tls_clients import TLSConnection, client_context
from tls_pki import TestPKI

HERE = Path(__file__).resolve().parent


class TLSStubIdP(StubIdP):
    name = "idp stub (TLS)"

    def __init__(self, log_path: Path, pki: TestPKI, cert: str = "server", ask_client_cert: bool = False):
        super().__init__(log_path)
        self.pki = pki
        self.cert_kind = cert
        self.ask_client_cert = ask_client_cert

    def start(self) -> "TLSStubIdP":
        leaf = self.pki.leaf(self.cert_kind)
        client_ca = ["--client-ca", str(self.pki.ca.cert)] if self.ask_client_cert else []
        self._spawn([sys.executable, str(HERE / "tls_idp_stub.py"), "--host", self.host, "--port", "0",
                     "--cert", str(leaf.cert), "--key", str(leaf.key), *client_ca], 10)
        return self

    @property
    def url(self) -> str:
        return f"https://{host_port(self.host, self.port)}"

    def connect(self, timeout: float = IO_SECONDS) -> TLSConnection:
        """A verified TLS connection to the stub (trusting the CA that signed its certificate)."""
        return TLSConnection(self.host, self.port, client_context(self.pki.issuer(self.cert_kind).cert),
                             timeout=timeout)
