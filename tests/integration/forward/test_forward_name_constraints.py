"""The issue's key test: the relay's CA can sign for nothing but the routes' hosts, even in the
hands of whoever steals its key. With the relay's own `ca.key` (a test may read it; no command
exports it), leaves are signed for `evil.test` (outside the constraint) and for 127.0.0.1 (every
address is excluded) and served from loopback: OpenSSL (`verify`, `s_client`), curl, Python
(`ssl`, requests) and Chromium (the CA trusted in its NSS database) all refuse them, while a leaf
for api.test signed and served the same way is accepted. test_forward_fixtures.py runs the same
check against a CA made here with the same extensions, and its control without a constraint."""

from __future__ import annotations

import ipaddress

import pytest

from constraint_checks import assert_constraint_holds, client_verdicts
from forward_pki import API_HOST
from forward_relay import run_ca_command
from processes import LOOPBACK, free_port, relay_config, write_config
from tls_pki import CertKey



@pytest.fixture
def relay_ca(tmp_path, ca_directory) -> CertKey:
    """The CA `oauth-relay ca` makes for a config whose one route names api.test."""
    config = relay_config(f"{LOOPBACK}:{free_port()}",
                          [{"match": {"host": API_HOST}, "upstream": "https://127.0.0.1:1", "name": "api"}],
                          forward={"listen": f"{LOOPBACK}:{free_port()}", "caDirectory": str(ca_directory)})
    result = run_ca_command(write_config(tmp_path / "ca.json", config))
    assert result.returncode == 0, result.stderr
    return CertKey(ca_directory / "ca.pem", ca_directory / "ca.key")


def test_the_relays_ca_carries_the_issues_extensions(relay_ca):
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

    ca = x509.load_pem_x509_certificate(relay_ca.cert.read_bytes())
    basic = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert basic.critical and basic.value.ca and basic.value.path_length == 0
    usage = ca.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value.key_cert_sign and usage.value.crl_sign and not usage.value.digital_signature
    constraints = ca.extensions.get_extension_for_class(x509.NameConstraints)
    assert constraints.critical
    # DNS: the routes' hosts; e-mail addresses and URIs: none outside .invalid (so the key signs
    # no S/MIME or client certificate naming a real address).
    assert set(constraints.value.permitted_subtrees) == {x509.DNSName(API_HOST), x509.RFC822Name(".invalid"),
                                                         x509.UniformResourceIdentifier(".invalid")}
    assert set(constraints.value.excluded_subtrees) == {x509.IPAddress(ipaddress.ip_network("0.0.0.0/0")),
                                                        x509.IPAddress(ipaddress.ip_network("::/0"))}
    assert isinstance(ca.public_key(), ec.EllipticCurvePublicKey) and ca.public_key().curve.name == "secp256r1"
    eku = ca.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    assert not eku.critical and list(eku.value) == [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]


def test_every_client_refuses_what_the_stolen_ca_key_signs_outside_the_routes_hosts(relay_ca, tmp_path, start_site,
                                                                                     nss_home, nss_chromium):
    assert_constraint_holds(client_verdicts(relay_ca, tmp_path / "leaves", start_site, nss_home, nss_chromium))
