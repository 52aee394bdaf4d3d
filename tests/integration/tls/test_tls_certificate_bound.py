"""Certificate-bound tokens (RFC 8705): an identity whose `tls` has a client certificate presents
it to its token endpoint (which binds the tokens it issues to it: `cnf.x5t#S256`), and a route with
`certificateBoundUpstream: true` presents that same certificate to its upstream, so the binding
holds there. The token endpoint is ../oauth's scripted stub over TLS asking for a client
certificate (it records the one presented); the upstream is nginx (`ssl_verify_client optional`),
which reports the certificate's fingerprint. `oauth-relay check` explains a mismatch.
"""

import base64
import hashlib
import ssl

import pytest

from processes import run_check
from tls_pki import CLIENT_DN_RFC2253
from tls_relay import nginx_saw, tls_route

pytestmark = pytest.mark.tls


def der(cert_path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert_path.read_text())


def x5t_s256(cert_path) -> str:
    """`cnf.x5t#S256` of a certificate: base64url SHA-256 of its DER."""
    return base64.urlsafe_b64encode(hashlib.sha256(der(cert_path)).digest()).rstrip(b"=").decode()


def sha1_hex(cert_path) -> str:
    return hashlib.sha1(der(cert_path)).hexdigest()


def identity_route(upstream, prefix: str, name: str, bound: bool, **tls) -> dict:
    """An https route injecting identity svc's token; `bound`: certificateBoundUpstream."""
    route = {**tls_route(upstream, prefix, name=name, **tls), "identity": "svc"}
    return {**route, "certificateBoundUpstream": True} if bound else route


def bound_identity(idp, pki) -> dict:
    return idp.identity(tls={"caFile": str(pki.ca.cert), "clientCert": str(pki.client.cert), "clientKey": str(pki.client.key)})


def test_the_identitys_certificate_goes_to_the_token_endpoint_and_the_bound_upstream(start_tls_stub_idp, start_nginx_tls,
                                                                                    tls_pki, start_relay):
    idp = start_tls_stub_idp(ask_client_cert=True)
    nginx = start_nginx_tls()
    relay = start_relay([
        identity_route(nginx, "/bound/", "bound", True, caFile=tls_pki.ca.cert),
        identity_route(nginx, "/plain/", "plain", False, caFile=tls_pki.ca.cert),
    ], identities={"svc": bound_identity(idp, tls_pki)})
    saw = nginx_saw(relay.request("GET", "/bound/x", timeout=15))
    assert saw["ssl_client_verify"] == "SUCCESS"
    assert saw["ssl_client_s_dn"] == CLIENT_DN_RFC2253
    assert saw["ssl_client_fingerprint"] == sha1_hex(tls_pki.client.cert), "the identity's certificate, exactly"
    assert saw["authorization"].startswith("Bearer ")
    [record] = idp.token_requests()
    assert record["client_cert_sha256"] == x5t_s256(tls_pki.client.cert), "the token endpoint got the same certificate"
    # A route without certificateBoundUpstream presents none (its own tls has no client certificate).
    assert nginx_saw(relay.request("GET", "/plain/x"))["ssl_client_verify"] == "NONE"


def test_a_route_may_name_the_same_certificate_itself(start_tls_stub_idp, nginx_tls, tls_pki, start_relay):
    idp = start_tls_stub_idp(ask_client_cert=True)
    relay = start_relay([identity_route(nginx_tls, "/", "bound", True, caFile=tls_pki.ca.cert, clientCert=tls_pki.client.cert,
                                        clientKey=tls_pki.client.key)],
                        identities={"svc": bound_identity(idp, tls_pki)})
    assert nginx_saw(relay.request("GET", "/x", timeout=15))["ssl_client_fingerprint"] == sha1_hex(tls_pki.client.cert)


def check(tmp_path, identity_tls: dict | None, route: dict) -> tuple[int, str]:
    identity = {"tokenUrl": "https://idp.example.test/token", "clientId": "svc", "clientSecret": "s3cret-value"}
    if identity_tls is not None:
        identity["tls"] = identity_tls
    return run_check(tmp_path, {"identities": {"svc": identity},
                                "routes": [{"upstream": "https://api.example.test", "identity": "svc",
                                            "certificateBoundUpstream": True, **route}]})


def test_check_explains_a_certificate_mismatch(tmp_path, tls_pki):
    client = {"clientCert": str(tls_pki.client.cert), "clientKey": str(tls_pki.client.key)}
    assert check(tmp_path, client, {})[0] == 0
    path = "$.routes[0].certificateBoundUpstream: "
    code, out = check(tmp_path, None, {})
    assert code == 1 and path + "identity svc presents no client certificate to its token endpoint" in out, out
    code, out = check(tmp_path, client, {"upstream": "http://api.example.test"})
    assert code == 1 and path + "certificateBoundUpstream presents a client certificate, which needs TLS" in out, out
    code, out = check(tmp_path, client, {"tls": {"clientCert": str(tls_pki.server.cert), "clientKey": str(tls_pki.server.key)}})
    assert code == 1 and path + "the route's own tls.clientCert" in out and "not identity svc's" in out, out
    assert "PRIVATE KEY" not in out
