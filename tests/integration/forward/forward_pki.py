"""Certificates of the forward-proxy tests, made with the openssl CLI (../tls/tls_pki.py's `openssl`).

    api_ca, api          the "API"'s own CA and its leaf for DNS:api.test: what nginx behind the
                         relay presents (the relay trusts api_ca through the route's `tls.caFile`)
    other_ca, other      an unrelated CA and its leaf for DNS:other.test and DNS:localhost: the
                         server of a host no route names, whose certificate must reach the client
                         through the tunnel unchanged
    constrained_ca(dir)  a CA made like the relay's (ECDSA P-256, pathlen 0, keyCertSign+cRLSign,
                         critical nameConstraints: permitted DNS api.test, excluded every IPv4 and
                         IPv6 address): the standalone proof that the refusal checks of the name
                         constraint tests see a constraint violation, before the relay makes one
    sign_leaf(...)       a server leaf for a DNS name or an IP address signed by any CA whose
                         certificate and key are files (the relay's `ca.pem`/`ca.key` included)

Leaves are ECDSA P-256 with SAN, extendedKeyUsage serverAuth, valid from an hour ago for a day.
"""

from __future__ import annotations

import ipaddress
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "tls") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "tls"))

from tls_pki import CertKey, openssl  # noqa: E402

API_HOST = "api.test"
OTHER_HOST = "other.test"
# A name outside every constraint the tests' CAs carry: what a stolen CA key would sign for.
EVIL_HOST = "evil.test"

_CA_EXTENSIONS = """\
[ ca_ext ]
basicConstraints       = critical, CA:TRUE, pathlen:0
keyUsage               = critical, keyCertSign, cRLSign
subjectKeyIdentifier   = hash
{constraints}
"""

_LEAF_EXTENSIONS = """\
[ leaf_ext ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = {san}
"""

# The relay's constraint, in OpenSSL's configuration syntax: exactly the routes' host names, and
# no address at all (IPv4 and IPv6 written as address/mask).
RELAY_LIKE_CONSTRAINTS = ("nameConstraints = critical, permitted;DNS:{host}, excluded;IP:0.0.0.0/0.0.0.0, "
                          "excluded;IP:0:0:0:0:0:0:0:0/0:0:0:0:0:0:0:0")


def _key(path: Path) -> Path:
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(path))
    path.chmod(0o600)
    return path


def make_ca(directory: Path, name: str, subject: str, constraints: str = "") -> CertKey:
    """A self-signed ECDSA P-256 CA valid for ten years (from a day ago), with the given extra
    extension lines (a `nameConstraints = ...`, or none)."""
    directory.mkdir(parents=True, exist_ok=True)
    key = _key(directory / f"{name}.key")
    ext = directory / f"{name}.ext.cnf"
    ext.write_text(_CA_EXTENSIONS.format(constraints=constraints))
    cert = directory / f"{name}.pem"
    openssl("req", "-new", "-x509", "-key", str(key), "-subj", subject, "-days", "3650", "-sha256",
            "-config", str(ext), "-extensions", "ca_ext", "-out", str(cert))
    return CertKey(cert, key)


def san_of(name: str) -> str:
    """`DNS:name` or `IP:address`."""
    try:
        ipaddress.ip_address(name)
        return f"IP:{name}"
    except ValueError:
        return f"DNS:{name}"


def sign_leaf(directory: Path, name: str, ca_cert: Path, ca_key: Path, *extra_names: str) -> CertKey:
    """A server leaf for `name` (and `extra_names`; DNS names or IP addresses) signed by the CA in
    `ca_cert`/`ca_key`, into directory/<label>.pem and .key."""
    directory.mkdir(parents=True, exist_ok=True)
    label = re.sub(r"[^A-Za-z0-9.-]", "_", f"{name}-by-{ca_cert.stem}")
    key = _key(directory / f"{label}.key")
    csr = directory / f"{label}.csr"
    openssl("req", "-new", "-key", str(key), "-subj", f"/CN={name}", "-out", str(csr))
    ext = directory / f"{label}.ext.cnf"
    ext.write_text(_LEAF_EXTENSIONS.format(san=", ".join(san_of(n) for n in (name, *extra_names))))
    cert = directory / f"{label}.pem"
    openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-CAcreateserial",
            "-days", "1", "-sha256", "-extfile", str(ext), "-extensions", "leaf_ext", "-out", str(cert))
    return CertKey(cert, key)


def constrained_ca(directory: Path, host: str = API_HOST) -> CertKey:
    """A CA with the relay's extensions, constrained to `host` (ca.pem and ca.key in directory,
    the names the relay gives its own)."""
    return make_ca(directory, "ca", "/O=oauth-relay tests/CN=constrained like the relay's CA",
                   RELAY_LIKE_CONSTRAINTS.format(host=host))


class ForwardPKI:
    """The session's certificates: the API's CA and leaf, the unrelated site's CA and leaf."""
    __test__ = False

    def __init__(self, directory: Path):
        self.dir = directory
        self.api_ca = make_ca(directory, "api-ca", "/O=the API's operator/CN=API test CA")
        self.api = sign_leaf(directory, API_HOST, self.api_ca.cert, self.api_ca.key)
        self.other_ca = make_ca(directory, "other-ca", "/O=somebody else/CN=other site test CA")
        self.other = sign_leaf(directory, OTHER_HOST, self.other_ca.cert, self.other_ca.key, "localhost")


def issuer_of(cert_pem: bytes | Path) -> str:
    """The issuer DN of a PEM certificate (RFC 2253)."""
    data = cert_pem.read_bytes() if isinstance(cert_pem, Path) else cert_pem
    return openssl("x509", "-noout", "-issuer", "-nameopt", "RFC2253", input=data).decode().strip().removeprefix("issuer=")


def subject_of(cert_pem: bytes | Path) -> str:
    data = cert_pem.read_bytes() if isinstance(cert_pem, Path) else cert_pem
    return openssl("x509", "-noout", "-subject", "-nameopt", "RFC2253", input=data).decode().strip().removeprefix("subject=")


def sha256_fingerprint(cert: Path) -> str:
    """`openssl x509 -fingerprint -sha256 -noout`: `AA:BB:...` (upper-case hex pairs)."""
    out = openssl("x509", "-fingerprint", "-sha256", "-noout", "-in", str(cert)).decode().strip()
    return out.split("=", 1)[1]
