"""Certificate credentials (private_key_jwt with `clientCertFile`), against the scripted stub made
to check them as Microsoft Entra ID does (client_assertions.py with a "certificate" policy): the
signature with the registered certificate's public key, the header's typ, alg (RS256 or PS256)
and x5t#S256 or x5t equal to that certificate's thumbprints, an x5c starting with it; iss = sub =
client_id, aud = the token endpoint, a jti never replayed, exp - iat at most 10 minutes; and the
form: client_id equal to iss, client_assertion_type, grant_type and scope, and nothing else. A
request that fails any of these is answered 401 invalid_client, which the relay shows as its
identity failing with the IdP's error. And a key and its certificate rotated in a Kubernetes
Secret volume while the relay runs: the next token request names the new certificate.

The certificates are made here with `cryptography` and their thumbprints computed with hashlib:
nothing of the relay's code."""

from __future__ import annotations

import base64
import datetime
import hashlib

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from admin_client import start_with_admin
from idp_processes import form
from idp_relay import assert_oauth_problem, bearer, oauth_route
from key_files import key_file, pem
from login_relay import wait_for_state
from rotating_files import KubeletVolume
from rotation_support import CHANGED, RELAY_ARGS, UNUSABLE, credential_log, force_token_request, serves_token_of

pytestmark = pytest.mark.oauth

SCOPE = "api://orders/.default"
ENTRA_MAX_LIFETIME = 600


def certificate(key, subject: str, issuer_key=None, issuer: str | None = None, ca: bool = False) -> x509.Certificate:
    """A certificate for `key`'s public half, self-signed or signed by `issuer_key` (named `issuer`)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
               .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer or subject)]))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    return builder.sign(issuer_key or key, hashes.SHA256())


def pem_text(*certificates: x509.Certificate) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)


def der(certificate_: x509.Certificate) -> bytes:
    return certificate_.public_bytes(serialization.Encoding.DER)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def entra_policy(stub, registered: x509.Certificate, **rules) -> dict:
    """What Entra ID knows of the client: its certificate, and its rules for the token request."""
    return {"client_id": stub.client_id, "audience": stub.token_url, "certificate": pem_text(registered),
            "max_lifetime": ENTRA_MAX_LIFETIME, "client_id_in_form": True,
            "form": {"grant_type": "client_credentials", "scope": SCOPE}, **rules}


def certificate_identity(stub, tmp_path, sensitive, key, chain: list[x509.Certificate], **options) -> dict:
    cert_path = tmp_path / "client-cert.pem"
    cert_path.write_text(pem_text(*chain))
    return stub.identity(clientSecret=None, clientAuth="private_key_jwt", clientKeyFile=key_file(tmp_path, sensitive, key),
                         clientCertFile=str(cert_path), clientKeyId="relay-cert-1", scope=SCOPE, **options)


def test_an_entra_certificate_credential_gets_a_token(stub_idp, upstream, start_relay, tmp_path, sensitive):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = certificate(key, "orders-relay")
    stub_idp.script(client_assertion=entra_policy(stub_idp, cert))
    identity = certificate_identity(stub_idp, tmp_path, sensitive, key, [cert])
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity}, args=("--log-level", "trace"))
    token = bearer(relay.request("GET", "/x"))
    [record] = stub_idp.token_requests()
    assert record["status"] == 200, record.get("assertion")
    assert token == record["issued"]["access_token"]
    header = record["assertion"]["header"]
    # Without clientCertHeaders both thumbprints: Entra documents x5t#S256, ADFS reads only x5t.
    assert header == {"typ": "JWT", "alg": "RS256", "kid": "relay-cert-1",
                      "x5t#S256": b64url(hashlib.sha256(der(cert)).digest()),
                      "x5t": b64url(hashlib.sha1(der(cert)).digest())}, header
    assert sorted(name for name, _ in record["form"]) == [
        "client_assertion", "client_assertion_type", "client_id", "grant_type", "scope"]
    assert form(record)["client_id"] == [stub_idp.client_id]


def test_x5t_and_the_chain_leaf_first_with_ps256(stub_idp, upstream, start_relay, tmp_path, sensitive):
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = certificate(ca_key, "orders CA", ca=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    leaf = certificate(key, "orders-relay", issuer_key=ca_key, issuer="orders CA")
    stub_idp.script(client_assertion=entra_policy(stub_idp, leaf, algs=["PS256"]))
    identity = certificate_identity(stub_idp, tmp_path, sensitive, key, [leaf, ca], clientAssertionAlg="PS256",
                                    clientCertHeaders=["x5t", "x5c"])
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity})
    bearer(relay.request("GET", "/x"))
    [record] = stub_idp.token_requests()
    assert record["status"] == 200, record.get("assertion")
    header = record["assertion"]["header"]
    assert header["alg"] == "PS256"
    assert header["x5t"] == b64url(hashlib.sha1(der(leaf)).digest())
    assert "x5t#S256" not in header
    assert header["x5c"] == [base64.b64encode(der(leaf)).decode(), base64.b64encode(der(ca)).decode()]


REFUSALS = {
    # The IdP registered another certificate for the same key (a renewal the relay has not got).
    "another certificate for the key": ("x5t#S256 is not the thumbprint of the registered certificate", {}, "rsa"),
    # client_id left out of the form, which Entra ID requires.
    "no client_id": ("client_id is missing from the form", {"sendClientIdWithAssertion": False}, "rsa"),
    # An EC key signs ES256, which Entra ID does not take for certificate credentials.
    "ES256": ("alg ES256 is not allowed for this client", {}, "ec"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refused_certificate_assertion_makes_the_identity_failing(stub_idp, upstream, start_relay, tmp_path, sensitive,
                                                                  case):
    reason, options, kind = REFUSALS[case]
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if kind == "rsa" else ec.generate_private_key(ec.SECP256R1())
    cert = certificate(key, "orders-relay")
    registered = certificate(key, "orders-relay renewed") if case == "another certificate for the key" else cert
    stub_idp.script(client_assertion=entra_policy(stub_idp, registered, algs=["RS256", "PS256"]))
    identity = certificate_identity(stub_idp, tmp_path, sensitive, key, [cert], **options)
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "orders")], identities={"orders": identity})
    view = wait_for_state(admin, "orders", "failing")
    assert view["lastError"]["code"] == "invalid_client", view
    assert reason in view["lastError"]["description"], view
    resp = relay.request("GET", "/x")
    sensitive.add_output("problem body", resp.body)
    assert_oauth_problem(resp, 502, identity="orders", oauth_error="invalid_client")
    records = stub_idp.token_requests()
    assert records and all(r["status"] == 401 and reason in r["assertion"]["rejected"] for r in records), records
    assert upstream.stats()["requests_served"] == 0


def test_a_key_and_certificate_rotated_in_a_secret_volume_are_named_by_the_next_assertion(stub_idp, upstream, start_relay,
                                                                                        tmp_path, sensitive):
    """`tls.key` and `tls.crt` of one Secret volume, swapped at once (kubelet's ..data swap): the
    next token request signs with the new key and names the new certificate, as the IdP now
    registers it; then a certificate renewed for the same key is taken alone."""
    keys = [rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2)]
    for n, key in enumerate(keys):
        sensitive.add(f"private key {n}", "".join(pem(key, True).splitlines()[1:-1]))
    certificates = [certificate(key, f"orders-relay {n}") for n, key in enumerate(keys)]
    volume = KubeletVolume(tmp_path / "orders-tls", {"tls.key": pem(keys[0], True), "tls.crt": pem_text(certificates[0])})
    stub_idp.script(client_assertion=entra_policy(stub_idp, certificates[0]))
    identity = stub_idp.identity(clientSecret=None, clientAuth="private_key_jwt", clientKeyFile=volume.path("tls.key"),
                                 clientCertFile=volume.path("tls.crt"), scope=SCOPE)
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "orders")], identities={"orders": identity},
                                    args=RELAY_ARGS)
    bearer(relay.request("GET", "/first"))
    renewed = certificate(keys[1], "orders-relay 1 renewed")
    for key_pem, cert in [(pem(keys[1], True), certificates[1]), (pem(keys[1], True), renewed)]:
        volume.update({"tls.key": key_pem, "tls.crt": pem_text(cert)})
        stub_idp.script(client_assertion=entra_policy(stub_idp, cert))
        record = force_token_request(admin, stub_idp)
        assert record["status"] == 200, record.get("assertion")
        assert record["assertion"]["header"]["x5t#S256"] == b64url(hashlib.sha256(der(cert)).digest())
        serves_token_of(relay, record)
    changes = credential_log(relay, CHANGED)
    assert [(c["key"], c["file"]) for c in changes] == [("clientKeyFile", volume.path("tls.key")),
                                                         ("clientCertFile", volume.path("tls.crt"))], changes
    assert credential_log(relay, UNUSABLE) == []
