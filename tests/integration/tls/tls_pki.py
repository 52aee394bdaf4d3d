"""A test PKI made with the openssl CLI, once per session, into a temporary directory.

    ca            the test CA (the relay trusts it through `tls.caFile`)
    server        leaf for DNS:localhost, IP:127.0.0.1, IP:::1, signed by ca
    wrong_name    leaf for DNS:wrong.example only, signed by ca
    expired       leaf for localhost/127.0.0.1/::1, signed by ca, valid 2020-01-01 .. 2021-01-01
    other_ca      a second CA, unrelated to ca (nothing trusts it)
    other_server  leaf for localhost/127.0.0.1/::1, signed by other_ca ("unknown CA")
    client        client certificate (extendedKeyUsage clientAuth) signed by ca, for mTLS
    renewal(kind, n)  on demand: the n-th renewal of `server` or `client` (same subject, new key)
    unrelated     a key that is in no certificate (a pin that matches nothing)

Every leaf has its own EC P-256 key. `pin(name)` is the relay's pin format for that key,
`sha256/<base64 of the SHA-256 of the DER SubjectPublicKeyInfo>`, computed with the openssl
pipeline (`pkey -pubout -outform DER | dgst -sha256 -binary | base64`).

Certificates are signed with `openssl ca` (OpenSSL 3.0's `x509` cannot backdate a certificate;
`ca -startdate/-enddate` can), each with its own extensions.
"""

from __future__ import annotations

import base64
import datetime
import subprocess
from dataclasses import dataclass
from pathlib import Path

LOCAL_NAMES = "DNS:localhost,IP:127.0.0.1,IP:::1"
WRONG_NAME = "wrong.example"
EXPIRED_START, EXPIRED_END = "20200101000000Z", "20210101000000Z"
CA_START = "20190101000000Z"
CLIENT_SUBJECT = "/O=oauth-relay tests/OU=relay/CN=relay-client"
# How nginx writes that subject in $ssl_client_s_dn (RFC 2253: last RDN first, comma-separated).
CLIENT_DN_RFC2253 = "CN=relay-client,OU=relay,O=oauth-relay tests"

_CA_CONFIG = """\
[ ca ]
default_ca = test_ca

[ test_ca ]
dir              = {dir}
database         = $dir/index.txt
new_certs_dir    = $dir/newcerts
serial           = $dir/serial
default_md       = sha256
default_days     = 3650
policy           = policy_any
unique_subject   = no
copy_extensions  = none
email_in_dn      = no

[ policy_any ]
countryName             = optional
stateOrProvinceName     = optional
localityName            = optional
organizationName        = optional
organizationalUnitName  = optional
commonName              = supplied
emailAddress            = optional
"""

_EXTENSIONS = """\
[ ca_ext ]
basicConstraints       = critical, CA:TRUE, pathlen:0
keyUsage               = critical, keyCertSign, cRLSign
subjectKeyIdentifier   = hash

[ server_ext ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = {san}

[ client_ext ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature
extendedKeyUsage       = clientAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
"""


def openssl(*args: str, input: bytes | None = None, cwd: Path | None = None) -> bytes:
    proc = subprocess.run(["openssl", *args], input=input, capture_output=True, cwd=cwd, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)} failed ({proc.returncode}):\n"
                           f"{proc.stderr.decode(errors='replace')}")
    return proc.stdout


def spki_pin(key: Path) -> str:
    """`sha256/<base64>` of the SHA-256 of the DER SubjectPublicKeyInfo of a key (or certificate)."""
    if b"CERTIFICATE" in key.read_bytes()[:64]:
        public = openssl("x509", "-in", str(key), "-pubkey", "-noout")
    else:
        public = openssl("pkey", "-in", str(key), "-pubout")
    der = openssl("pkey", "-pubin", "-outform", "DER", input=public)
    digest = openssl("dgst", "-sha256", "-binary", input=der)
    return "sha256/" + base64.b64encode(digest).decode()


def curl_pin(pin: str) -> str:
    """The same pin in curl's --pinnedpubkey syntax (`sha256//<base64>`)."""
    return "sha256//" + pin.removeprefix("sha256/")


@dataclass(frozen=True)
class CertKey:
    cert: Path
    key: Path

    @property
    def pin(self) -> str:
        return spki_pin(self.key)

    def subject(self) -> str:
        return openssl("x509", "-in", str(self.cert), "-noout", "-subject", "-nameopt", "RFC2253").decode().strip()


class TestPKI:
    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path):
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca = self._make_ca("ca", "/O=oauth-relay tests/CN=oauth-relay test CA")
        self.other_ca = self._make_ca("other-ca", "/O=somebody else/CN=unrelated test CA")
        self.server = self._leaf("server", "ca", "/CN=localhost", "server_ext", LOCAL_NAMES)
        self.wrong_name = self._leaf("wrong-name", "ca", f"/CN={WRONG_NAME}", "server_ext", f"DNS:{WRONG_NAME}")
        self.expired = self._leaf("expired", "ca", "/CN=localhost", "server_ext", LOCAL_NAMES,
                                  start=EXPIRED_START, end=EXPIRED_END)
        self.other_server = self._leaf("other-server", "other-ca", "/CN=localhost", "server_ext", LOCAL_NAMES)
        self.client = self._leaf("client", "ca", CLIENT_SUBJECT, "client_ext", LOCAL_NAMES)
        self.unrelated_key = self._key("unrelated")
        self._leaves = {"server": self.server, "wrong_name": self.wrong_name, "expired": self.expired,
                             "other_ca": self.other_server}

    # -- the pieces ------------------------------------------------------------------------------

    def _key(self, name: str) -> Path:
        key = self.dir / f"{name}.key"
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(key))
        key.chmod(0o600)
        return key

    def _ca_dir(self, name: str) -> Path:
        d = self.dir / f"{name}.db"
        (d / "newcerts").mkdir(parents=True, exist_ok=True)
        (d / "index.txt").write_text("")
        (d / "serial").write_text("1000\n")
        (d / "openssl.cnf").write_text(_CA_CONFIG.format(dir=d))
        return d

    def _make_ca(self, name: str, subject: str) -> CertKey:
        key = self._key(name)
        db = self._ca_dir(name)
        ext = db / "ext.cnf"
        ext.write_text(_EXTENSIONS.format(san=LOCAL_NAMES))
        csr = self.dir / f"{name}.csr"
        openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
        cert = self.dir / f"{name}.pem"
        # Self-signed with `ca -selfsign`, valid since before the expired leaf was (so that leaf's
        # only fault is its age) and for ten years from now.
        openssl("ca", "-batch", "-notext", "-config", str(db / "openssl.cnf"), "-selfsign", "-keyfile", str(key),
                "-in", str(csr), "-out", str(cert), "-extfile", str(ext), "-extensions", "ca_ext",
                "-startdate", CA_START, "-enddate", _days_ago(-3650))
        return CertKey(cert, key)

    def _leaf(self, name: str, ca: str, subject: str, extensions: str, san: str,
              start: str | None = None, end: str | None = None) -> CertKey:
        key = self._key(name)
        db = self.dir / f"{ca}.db"
        ca_files = self.ca if ca == "ca" else self.other_ca
        ext = self.dir / f"{name}.ext.cnf"
        ext.write_text(_EXTENSIONS.format(san=san))
        csr = self.dir / f"{name}.csr"
        openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
        cert = self.dir / f"{name}.pem"
        dates = ["-startdate", start or _days_ago(1)] + (["-enddate", end] if end else ["-days", "825"])
        openssl("ca", "-batch", "-notext", "-config", str(db / "openssl.cnf"), "-cert", str(ca_files.cert),
                "-keyfile", str(ca_files.key), "-in", str(csr), "-out", str(cert), "-extfile", str(ext),
                "-extensions", extensions, *dates)
        return CertKey(cert, key)

    # -- facts the tests use ----------------------------------------------------------------------

    def pin(self, name: str) -> str:
        """The relay's pin of a leaf's key (`server`, `wrong_name`, ...), or of `unrelated`/`ca`."""
        if name == "unrelated":
            return spki_pin(self.unrelated_key)
        return getattr(self, name).pin

    def leaf(self, kind: str) -> CertKey:
        """The server certificate an upstream presents: server | wrong_name | expired | other_ca."""
        return self._leaves[kind]

    def renewal(self, kind: str, generation: int = 1) -> CertKey:
        """Renewal number `generation` of the `server` or `client` leaf, as cert-manager would issue
        it: the same subject, names and extensions from the same CA, with a new key and serial.
        Made on first use and kept for the session."""
        name = f"{kind}-renewal-{generation}"
        cached = getattr(self, "_renewals", {})
        self._renewals = cached
        if name not in cached:
            subject, extensions = ("/CN=localhost", "server_ext") if kind == "server" else (CLIENT_SUBJECT, "client_ext")
            cached[name] = self._leaf(name, "ca", subject, extensions, LOCAL_NAMES)
        return cached[name]

    def issuer(self, kind: str) -> CertKey:
        """The CA that signed the server certificate `kind`."""
        return self.other_ca if kind == "other_ca" else self.ca


def _days_ago(days: int) -> str:
    """An `openssl ca` date `days` before now (negative: after)."""
    t = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days)
    return t.strftime("%Y%m%d%H%M%SZ")


def is_expired(cert: Path) -> bool:
    """`openssl x509 -checkend 0`: exit 1 when the certificate has expired."""
    proc = subprocess.run(["openssl", "x509", "-in", str(cert), "-noout", "-checkend", "0"], capture_output=True)
    return proc.returncode == 1


def verify(cert: Path, ca: Path, name: str | None = None, ip: str | None = None,
           purpose: str = "sslserver") -> tuple[bool, str]:
    """`openssl verify` of `cert` against `ca` (optionally for a host name or IP): (ok, output)."""
    args = ["openssl", "verify", "-CAfile", str(ca), "-purpose", purpose]
    if name:
        args += ["-verify_hostname", name]
    if ip:
        args += ["-verify_ip", ip]
    proc = subprocess.run([*args, str(cert)], capture_output=True, text=True, timeout=30)
    return proc.returncode == 0, proc.stdout + proc.stderr
