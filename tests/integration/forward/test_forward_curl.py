"""curl through the forward proxy (issue 26): `curl -x http://127.0.0.1:PORT --cacert ca.pem
https://api.test/...` reaches the API (nginx, its own CA, reached by the relay over verified TLS)
with the token django-oauth-toolkit issued; `Proxy-Authorization` from `proxyAuthFile` guards the
listener; the leaf the relay presents is the short-lived, single-name one the issue describes."""

from __future__ import annotations

import datetime
import json

import pytest

from forward_clients import site_answer
from forward_pki import API_HOST, issuer_of, subject_of
from forward_relay import intercepted_connection, open_tunnel, peer_certificate_pem, proxy_curl

pytestmark = pytest.mark.oauth


def issued_token_sha256(idp) -> str:
    [record] = idp.token_requests()
    assert record["grant_type"] == "client_credentials" and record["status"] == 200, record
    return record["access_token_sha256"]


def test_curl_through_the_proxy_reaches_the_api_with_the_token_the_idp_issued(api_relay, api_site, django_idp):
    resp = proxy_curl(api_relay.port, f"https://{API_HOST}/v1/orders?page=2", "--cacert", str(api_relay.ca_pem))
    assert resp.returncode == 0 and resp.status == 200, resp.stderr
    answer = site_answer(resp.body)
    assert answer["request"] == "GET /v1/orders?page=2 HTTP/1.1"
    assert answer["authorization_scheme"] == "Bearer"
    assert answer["authorization_sha256"] == issued_token_sha256(django_idp)
    # The relay's own TLS connection to the API: SNI api.test (the route's serverName).
    assert answer["ssl_server_name"] == API_HOST
    # And DOT accepts that token: it is a real one.
    [record] = django_idp.token_requests()
    assert record["access_token_sha256"] == answer["authorization_sha256"]


def test_a_callers_own_authorization_is_replaced_by_the_token(api_relay, django_idp):
    resp = proxy_curl(api_relay.port, f"https://{API_HOST}/x", "--cacert", str(api_relay.ca_pem),
                      "-H", "Authorization: Bearer made-up-by-the-caller")
    assert resp.status == 200, resp.stderr
    assert site_answer(resp.body)["authorization_sha256"] == issued_token_sha256(django_idp)


def test_keep_alive_requests_in_one_intercepted_connection_all_carry_the_token(api_relay, django_idp):
    with intercepted_connection(api_relay.port, API_HOST, api_relay.ca_pem) as conn:
        answers = [site_answer(conn.request("GET", f"/k/{i}", host=API_HOST).body) for i in range(3)]
    token = issued_token_sha256(django_idp)
    assert [a["authorization_sha256"] for a in answers] == [token] * 3
    assert [a["request"] for a in answers] == [f"GET /k/{i} HTTP/1.1" for i in range(3)]


def test_the_leaf_is_for_api_test_alone_from_the_relays_ca_short_lived_ecdsa_p256(api_relay):
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from forward_relay import client_context

    # A client offering h2 first: the relay, which speaks HTTP/1.1 alone, picks http/1.1.
    conn, answer = open_tunnel(api_relay.port, f"{API_HOST}:443")
    assert answer.status == 200, answer.body[:300]
    context = client_context(api_relay.ca_pem)
    context.set_alpn_protocols(["h2", "http/1.1"])
    conn.sock = context.wrap_socket(conn.sock, server_hostname=API_HOST)
    with conn:
        assert conn.sock.selected_alpn_protocol() == "http/1.1"
        pem = peer_certificate_pem(conn)
    assert issuer_of(pem) == subject_of(api_relay.ca_pem)
    leaf = x509.load_pem_x509_certificate(pem)
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == [API_HOST] and not san.get_values_for_type(x509.IPAddress)
    assert leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == \
        x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH])
    assert isinstance(leaf.public_key(), ec.EllipticCurvePublicKey) and leaf.public_key().curve.name == "secp256r1"
    # Valid now, and for a day at most in all (notBefore is set back for clocks a little behind,
    # and notAfter counts from it).
    now = datetime.datetime.now(datetime.timezone.utc)
    assert leaf.not_valid_before_utc <= now < leaf.not_valid_after_utc
    span = leaf.not_valid_after_utc - leaf.not_valid_before_utc
    assert span <= datetime.timedelta(seconds=86_400), span


def test_absolute_form_http_to_the_api_host_is_redirected_to_https_then_gets_the_token(api_relay, api_site, django_idp):
    # `HTTP_PROXY` clients send `GET http://api.test/... HTTP/1.1`. Browsers send no Fetch
    # Metadata to http:// URLs, so the route (it adds a token) answers 308 to the https:// URL:
    # nothing reaches the API.
    resp = proxy_curl(api_relay.port, f"http://{API_HOST}/plain?page=2")
    assert resp.status == 308, (resp.status, resp.stderr, resp.body[:300])
    assert resp.header("location") == f"https://{API_HOST}/plain?page=2"
    assert resp.header("content-type") == "application/problem+json"
    assert json.loads(resp.body)["type"] == "urn:oauth-relay:problem:https-required"
    assert api_site.access_records() == []
    # Following it, the client comes back through CONNECT, where the token is added.
    resp = proxy_curl(api_relay.port, f"http://{API_HOST}/plain?page=2", "-L", "--cacert", str(api_relay.ca_pem))
    assert resp.returncode == 0 and resp.status == 200, (resp.status, resp.stderr, resp.body[:300])
    answer = site_answer(resp.body)
    assert answer["request"] == "GET /plain?page=2 HTTP/1.1"
    assert answer["authorization_sha256"] == issued_token_sha256(django_idp)


@pytest.fixture
def proxy_auth_file(tmp_path):
    path = tmp_path / "proxy-auth"
    path.touch(mode=0o600)
    path.write_text("builder:s3cret-for-the-proxy\nother:another-pass\n")
    return path


def test_with_proxy_auth_file_a_client_without_credentials_gets_407_and_nothing_reaches_the_api(
        start_api_relay, proxy_auth_file, api_site, sensitive):
    sensitive.add("proxy password", "s3cret-for-the-proxy")
    sensitive.add("other proxy password", "another-pass")
    fwd = start_api_relay(forward_options={"proxyAuthFile": str(proxy_auth_file)})
    for credentials in ([], ["--proxy-user", "builder:wrong-password"], ["--proxy-user", "nobody:s3cret-for-the-proxy"]):
        resp = proxy_curl(fwd.port, f"https://{API_HOST}/x", "--cacert", str(fwd.ca_pem), *credentials)
        assert resp.returncode != 0 and "407" in resp.stderr, (credentials[:1], resp.returncode, resp.stderr)
    conn, answer = open_tunnel(fwd.port, f"{API_HOST}:443")
    conn.close()
    assert answer.status == 407 and (answer.header("proxy-authenticate") or "").lower().startswith("basic"), answer
    resp = proxy_curl(fwd.port, f"http://{API_HOST}/plain")
    assert resp.status == 407, resp.status
    assert api_site.access_records() == []


def test_with_proxy_auth_file_a_listed_user_gets_through_with_the_token(start_api_relay, proxy_auth_file, django_idp, sensitive):
    sensitive.add("proxy password", "s3cret-for-the-proxy")
    fwd = start_api_relay(forward_options={"proxyAuthFile": str(proxy_auth_file)})
    resp = proxy_curl(fwd.port, f"https://{API_HOST}/x", "--cacert", str(fwd.ca_pem),
                      "--proxy-user", "builder:s3cret-for-the-proxy")
    assert resp.returncode == 0 and resp.status == 200, resp.stderr
    answer = site_answer(resp.body)
    assert answer["authorization_sha256"] == issued_token_sha256(django_idp)
