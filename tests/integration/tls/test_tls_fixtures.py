"""The TLS fixtures alone, without the relay: the test PKI is what the tests say it is, and the
nginx upstream and the TLS IdP stub behave as the relay tests expect, checked with curl and
Python's ssl module doing what the relay's `tls` options stand for.

    python3 -m pytest tests/integration/tls/test_tls_fixtures.py
"""

import hashlib
import json
import socket
import subprocess

import pytest

from deadlines import wait_until
from echo_upstream import pattern_chunks, pattern_sha256
from http_client import assert_closed, build_request
from tls_clients import TLSConnection, client_context, curl_tls, handshake_refused
from tls_pki import CLIENT_DN_RFC2253, WRONG_NAME, is_expired, spki_pin, verify

pytestmark = pytest.mark.tls

MIB = 1 << 20
CURL_PEER_VERIFY_FAILED = 60   # CURLE_PEER_FAILED_VERIFICATION
CURL_PIN_MISMATCH = 90         # CURLE_SSL_PINNEDPUBKEYNOTMATCH


# ---------------------------------------------------------------------------------------------
# The PKI.

def test_tls_pki_only_the_expired_certificate_has_expired(tls_pki):
    assert is_expired(tls_pki.expired.cert)
    for leaf in (tls_pki.ca, tls_pki.other_ca, tls_pki.server, tls_pki.wrong_name, tls_pki.other_server, tls_pki.client):
        assert not is_expired(leaf.cert), leaf.cert


def test_tls_pki_server_certificate_verifies_for_localhost_and_loopback_ips(tls_pki):
    for target in ({"name": "localhost"}, {"ip": "127.0.0.1"}, {"ip": "::1"}):
        ok, out = verify(tls_pki.server.cert, tls_pki.ca.cert, **target)
        assert ok, out


@pytest.mark.parametrize("leaf, fault", [
    ("wrong_name", "hostname mismatch"),
    ("expired", "certificate has expired"),
    ("other_server", "unable to get local issuer certificate"),
])
def test_tls_pki_each_bad_certificate_has_exactly_its_one_fault(tls_pki, leaf, fault):
    ok, out = verify(getattr(tls_pki, leaf).cert, tls_pki.ca.cert, name="localhost")
    assert not ok and fault in out, out
    assert out.count("error ") == 2, f"more than one fault:\n{out}"  # "error N at ..." + the summary


def test_tls_pki_wrong_name_certificate_is_valid_for_its_own_name(tls_pki):
    ok, out = verify(tls_pki.wrong_name.cert, tls_pki.ca.cert, name=WRONG_NAME)
    assert ok, out


def test_tls_pki_other_server_certificate_is_valid_under_the_other_ca(tls_pki):
    ok, out = verify(tls_pki.other_server.cert, tls_pki.other_ca.cert, name="localhost")
    assert ok, out


def test_tls_pki_client_certificate_is_for_client_auth_only(tls_pki):
    ok, out = verify(tls_pki.client.cert, tls_pki.ca.cert, purpose="sslclient")
    assert ok, out
    ok, out = verify(tls_pki.client.cert, tls_pki.ca.cert, purpose="sslserver")
    assert not ok, out
    assert tls_pki.client.subject() == f"subject={CLIENT_DN_RFC2253}"


def test_tls_pki_pins_are_distinct_base64_sha256(tls_pki):
    pins = [tls_pki.pin(n) for n in ("server", "wrong_name", "expired", "other_server", "client", "unrelated", "ca")]
    assert len(set(pins)) == len(pins)
    for pin in pins:
        assert pin.startswith("sha256/") and len(pin) == len("sha256/") + 44 and pin.endswith("=")


def test_tls_pki_pin_of_the_key_equals_the_pin_of_the_certificate(tls_pki):
    assert spki_pin(tls_pki.server.key) == spki_pin(tls_pki.server.cert)


# ---------------------------------------------------------------------------------------------
# nginx, checked with curl.

def test_tls_nginx_good_certificate_with_the_test_ca(nginx_tls, tls_pki):
    resp = curl_tls(nginx_tls.url() + "/orders/1?x=1", "-H", "Authorization: Bearer fixture-token",
                    cacert=tls_pki.ca.cert)
    assert resp.returncode == 0, resp.stderr
    saw = resp.json()
    assert saw["request"] == "GET /orders/1?x=1 HTTP/1.1"
    assert saw["authorization"] == "Bearer fixture-token"
    assert saw["ssl_protocol"] in ("TLSv1.2", "TLSv1.3")
    assert saw["ssl_alpn_protocol"] == "http/1.1"
    assert saw["ssl_client_verify"] == "NONE" and saw["ssl_client_s_dn"] == ""
    assert saw["ssl_server_name"] == ""  # curl sends no SNI for an IP address (RFC 6066)
    assert saw["connection_requests"] == 1
    assert resp.header("X-Tls-Request") == "GET /orders/1?x=1 HTTP/1.1"
    assert resp.header("X-Tls-Client-Verify") == "NONE"
    [record] = nginx_tls.access_records(count=1)
    assert record["request"] == saw["request"] and "authorization" not in record


def test_tls_nginx_by_host_name_gets_sni(nginx_tls, tls_pki):
    resp = curl_tls(nginx_tls.url("localhost") + "/", cacert=tls_pki.ca.cert,
                    resolve=f"localhost:{nginx_tls.port}:127.0.0.1")
    assert resp.returncode == 0, resp.stderr
    assert resp.json()["ssl_server_name"] == "localhost"


def test_tls_nginx_is_not_trusted_by_the_system_store(nginx_tls):
    resp = curl_tls(nginx_tls.url() + "/")
    assert resp.returncode == CURL_PEER_VERIFY_FAILED, resp.stderr


def test_tls_nginx_other_ca_is_refused_with_the_test_ca(start_nginx_tls, tls_pki):
    nginx = start_nginx_tls("other_ca")
    refused = curl_tls(nginx.url() + "/", cacert=tls_pki.ca.cert)
    assert refused.returncode == CURL_PEER_VERIFY_FAILED and "issuer" in refused.stderr, refused.stderr
    trusted = curl_tls(nginx.url() + "/", cacert=tls_pki.other_ca.cert)
    assert trusted.returncode == 0 and trusted.status == 200, trusted.stderr
    insecure = curl_tls(nginx.url() + "/", "--insecure")
    assert insecure.returncode == 0 and insecure.status == 200, insecure.stderr


def test_tls_nginx_wrong_name_is_refused_unless_that_name_is_asked_for(start_nginx_tls, tls_pki):
    nginx = start_nginx_tls("wrong_name")
    refused = curl_tls(nginx.url() + "/", cacert=tls_pki.ca.cert)
    assert refused.returncode == CURL_PEER_VERIFY_FAILED and "name" in refused.stderr, refused.stderr
    # What serverName does: connect to 127.0.0.1, send and check the certificate's name.
    resp = curl_tls(f"https://{WRONG_NAME}:{nginx.port}/", cacert=tls_pki.ca.cert,
                    resolve=f"{WRONG_NAME}:{nginx.port}:127.0.0.1")
    assert resp.returncode == 0, resp.stderr
    assert resp.json()["ssl_server_name"] == WRONG_NAME


def test_tls_nginx_expired_certificate_is_refused(start_nginx_tls, tls_pki):
    nginx = start_nginx_tls("expired")
    refused = curl_tls(nginx.url() + "/", cacert=tls_pki.ca.cert)
    assert refused.returncode == CURL_PEER_VERIFY_FAILED and "expired" in refused.stderr, refused.stderr
    assert curl_tls(nginx.url() + "/", "--insecure").status == 200


def test_tls_nginx_pinned_key_matches_and_another_does_not(nginx_tls, tls_pki):
    ok = curl_tls(nginx_tls.url() + "/", cacert=tls_pki.ca.cert, pin=tls_pki.pin("server"))
    assert ok.returncode == 0 and ok.status == 200, ok.stderr
    for other in ("unrelated", "other_server", "ca"):
        bad = curl_tls(nginx_tls.url() + "/", cacert=tls_pki.ca.cert, pin=tls_pki.pin(other))
        assert bad.returncode == CURL_PIN_MISMATCH, (other, bad.stderr)


def test_tls_nginx_client_certificate_is_verified_and_reported(nginx_tls, tls_pki):
    resp = curl_tls(nginx_tls.url() + "/", cacert=tls_pki.ca.cert, cert=tls_pki.client.cert, key=tls_pki.client.key)
    assert resp.returncode == 0, resp.stderr
    saw = resp.json()
    assert saw["ssl_client_verify"] == "SUCCESS"
    assert saw["ssl_client_s_dn"] == CLIENT_DN_RFC2253
    assert resp.header("X-Tls-Client-S-Dn") == CLIENT_DN_RFC2253


def test_tls_nginx_client_certificate_of_another_ca_fails_verification(nginx_tls, tls_pki):
    # The other CA's server certificate is no client certificate of the test CA.
    resp = curl_tls(nginx_tls.url() + "/", cacert=tls_pki.ca.cert, cert=tls_pki.other_server.cert,
                    key=tls_pki.other_server.key)
    assert resp.returncode == 0, resp.stderr
    assert resp.status == 400  # nginx's own "SSL certificate error" page
    [record] = nginx_tls.access_records(count=1)
    assert record["ssl_client_verify"].startswith("FAILED:"), record


def test_tls_nginx_tls12_only(start_nginx_tls, tls_pki):
    nginx = start_nginx_tls(protocols="TLSv1.2")
    resp = curl_tls(nginx.url() + "/", "--tls-max", "1.3", cacert=tls_pki.ca.cert)
    assert resp.returncode == 0, resp.stderr
    assert resp.json()["ssl_protocol"] == "TLSv1.2"


# ---------------------------------------------------------------------------------------------
# nginx, checked with Python's ssl: keep-alive, session resumption, /close, big bodies.

def test_tls_nginx_keeps_the_connection_alive(nginx_tls, tls_pki):
    with TLSConnection("127.0.0.1", nginx_tls.port, client_context(tls_pki.ca.cert)) as conn:
        seen = [conn.request("GET", f"/{i}").json() for i in range(5)]
    assert [s["connection_requests"] for s in seen] == [1, 2, 3, 4, 5]
    assert len({s["connection"] for s in seen}) == 1


def test_tls_nginx_close_path_closes_the_connection(nginx_tls, tls_pki):
    with TLSConnection("127.0.0.1", nginx_tls.port, client_context(tls_pki.ca.cert)) as conn:
        resp = conn.request("GET", "/close")
        assert resp.status == 200 and resp.header("Connection") == "close"
        assert_closed(conn)


@pytest.mark.parametrize("protocols", ["TLSv1.2", "TLSv1.3"])
def test_tls_nginx_resumes_a_session_on_a_new_connection(start_nginx_tls, tls_pki, protocols):
    nginx = start_nginx_tls(protocols=protocols)
    ctx = client_context(tls_pki.ca.cert)
    with TLSConnection("127.0.0.1", nginx.port, ctx) as first:
        saw = first.request("GET", "/close").json()  # TLS 1.3: the ticket arrives with the answer
        session = first.session
    assert saw["ssl_session_reused"] == "." and saw["ssl_protocol"] == protocols
    with TLSConnection("127.0.0.1", nginx.port, ctx, session=session) as second:
        again = second.request("GET", "/").json()
        assert second.session_reused
    assert again["ssl_session_reused"] == "r"
    assert again["connection"] != saw["connection"] and again["connection_requests"] == 1


def test_tls_nginx_streams_64_mib_from_the_echo_upstream(start_nginx_tls, upstream, tls_pki):
    nginx = start_nginx_tls(echo=upstream)
    size = 64 * MIB
    digest = hashlib.sha256()
    with TLSConnection("127.0.0.1", nginx.port, client_context(tls_pki.ca.cert), timeout=30) as conn:
        conn.send(build_request("GET", f"/echo/download?bytes={size}"))
        resp = conn.read_final_response(timeout=30, sink=digest.update)
    assert resp.status == 200 and resp.body_length == size
    assert digest.hexdigest() == pattern_sha256(size)
    assert resp.header("X-Tls-Request") == f"GET /echo/download?bytes={size} HTTP/1.1"


def test_tls_nginx_passes_a_64_mib_upload_to_the_echo_upstream(start_nginx_tls, upstream, tls_pki):
    nginx = start_nginx_tls(echo=upstream)
    size = 64 * MIB
    with TLSConnection("127.0.0.1", nginx.port, client_context(tls_pki.ca.cert), timeout=30) as conn:
        conn.send(build_request("PUT", "/echo/upload", headers=[("Content-Length", str(size))]))
        for piece in pattern_chunks(size):
            conn.sock.sendall(piece)
        echo = conn.read_final_response(timeout=30).json()
    assert echo["target"] == "/upload"
    assert (echo["body_length"], echo["body_sha256"]) == (size, pattern_sha256(size))


def test_tls_nginx_passes_a_chunked_upload_to_the_echo_upstream(start_nginx_tls, upstream, tls_pki):
    nginx = start_nginx_tls(echo=upstream)
    body = b"x" * 300_000
    with TLSConnection("127.0.0.1", nginx.port, client_context(tls_pki.ca.cert)) as conn:
        conn.send(build_request("POST", "/echo/upload", headers=[("Transfer-Encoding", "chunked")])
                  + b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        echo = conn.read_final_response().json()
    assert (echo["body_length"], echo["body_sha256"]) == (len(body), hashlib.sha256(body).hexdigest())


# ---------------------------------------------------------------------------------------------
# The TLS IdP stub and the silent port.

def test_tls_stub_idp_issues_a_token_over_https(tls_stub_idp, tls_pki):
    form = f"grant_type=client_credentials&client_id={tls_stub_idp.client_id}"
    resp = curl_tls(tls_stub_idp.token_url, "-d", form, cacert=tls_pki.ca.cert)
    assert resp.returncode == 0 and resp.status == 200, resp.stderr
    assert resp.json()["token_type"] == "Bearer" and resp.json()["access_token"]
    [record] = tls_stub_idp.token_requests()
    assert record["grant_type"] == "client_credentials"
    assert tls_stub_idp.token_url.startswith("https://127.0.0.1:")


def test_tls_stub_idp_with_the_other_ca_is_refused_and_records_nothing(start_tls_stub_idp, tls_pki):
    idp = start_tls_stub_idp("other_ca")
    error = handshake_refused("127.0.0.1", idp.port, client_context(tls_pki.ca.cert))
    assert error is not None and "CERTIFICATE_VERIFY_FAILED" in error, error
    assert idp.token_requests() == []  # the control client trusts the other CA


def test_tls_silent_port_never_completes_a_handshake(silent_port, tls_pki):
    with socket.create_connection(("127.0.0.1", silent_port), timeout=0.5) as raw:
        with pytest.raises((socket.timeout, TimeoutError)):
            client_context(tls_pki.ca.cert).wrap_socket(raw, server_hostname="localhost")


def test_tls_python_and_curl_agree_on_refusals(start_nginx_tls, tls_pki):
    """The Python client refuses what curl refuses (the fixture checks above use both)."""
    ctx = client_context(tls_pki.ca.cert)
    for kind, reason in [("other_ca", "unable to get local issuer"), ("expired", "expired"),
                         ("wrong_name", "mismatch")]:
        nginx = start_nginx_tls(kind)
        error = handshake_refused("127.0.0.1", nginx.port, ctx, server_hostname="localhost")
        assert error is not None and reason in error, (kind, error)
        wait_until(lambda: "SSL_do_handshake() failed" in nginx.error_log(), 5, "nginx to log the refused handshake")


def test_tls_nginx_report_is_valid_json_for_odd_but_legal_targets(nginx_tls, tls_pki):
    resp = curl_tls(nginx_tls.url() + "/a%20b/%C3%A9?q=a+b&r=%22", cacert=tls_pki.ca.cert)
    assert resp.returncode == 0, resp.stderr
    assert json.loads(resp.body)["uri"] == "/a%20b/%C3%A9?q=a+b&r=%22"


def test_tls_nginx_is_stopped_with_its_worker(start_nginx_tls):
    nginx = start_nginx_tls()
    group = nginx.proc.pid
    nginx.kill()
    leftover = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True)
    assert leftover.stdout.strip() == "", f"processes left in nginx's group: {leftover.stdout}"

