"""https upstreams: verification on by default, `caFile`, host names and `serverName`, the 502 and
its `detail` for each refused certificate, a handshake that never completes, and
`insecureSkipVerify` (which passes, loudly)."""

import time

import pytest

from deadlines import scaled
from tls_pki import WRONG_NAME
from tls_relay import EXPIRED, TIMEOUT, UNKNOWN_CA, WRONG_NAME as NAME_KEYWORDS
from tls_relay import assert_tls_problem, nginx_saw, tls_route

pytestmark = pytest.mark.tls


def test_tls_https_route_with_ca_file_reaches_the_upstream(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert)])
    saw = nginx_saw(relay.request("GET", "/orders/1?status=open"))
    assert saw["request"] == "GET /orders/1?status=open HTTP/1.1"
    assert saw["ssl_protocol"] in ("TLSv1.2", "TLSv1.3")
    assert saw["ssl_client_verify"] == "NONE"  # no clientCert configured: none presented


def test_tls_https_route_forwards_a_request_body(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert)])
    resp = relay.request("POST", "/submit", headers=[("Content-Type", "text/plain")], body=b"x" * 10_000)
    saw = nginx_saw(resp)
    assert saw["request"] == "POST /submit HTTP/1.1"


def test_tls_https_upstream_base_path_is_prepended(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, "/svc", base="/base", caFile=tls_pki.ca.cert) | {"stripPrefix": True}])
    assert nginx_saw(relay.request("GET", "/svc/items"))["uri"] == "/base/items"


def test_tls_https_route_by_host_name_sends_sni_and_checks_the_name(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls.url("localhost"), caFile=tls_pki.ca.cert)])
    saw = nginx_saw(relay.request("GET", "/by-name"))
    assert saw["ssl_server_name"] == "localhost"


def test_tls_relay_offers_alpn_http11(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert)])
    assert nginx_saw(relay.request("GET", "/"))["ssl_alpn_protocol"] == "http/1.1"


def test_tls_tls12_only_upstream_works(start_nginx_tls, tls_pki, start_relay):
    nginx = start_nginx_tls(protocols="TLSv1.2")
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert)])
    assert nginx_saw(relay.request("GET", "/"))["ssl_protocol"] == "TLSv1.2"


def test_tls_verification_is_on_by_default(nginx_tls, start_relay):
    # No tls block: the system trust store, which does not hold the test CA.
    relay = start_relay([tls_route(nginx_tls)])
    assert_tls_problem(relay.request("GET", "/"), UNKNOWN_CA)
    assert nginx_tls.access_records() == [], "a request reached the upstream over an unverified connection"


def test_tls_unknown_ca_gets_502_saying_so(start_nginx_tls, tls_pki, start_relay):
    nginx = start_nginx_tls("other_ca")
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert)])
    assert_tls_problem(relay.request("GET", "/"), UNKNOWN_CA)
    assert nginx.access_records() == []


def test_tls_wrong_name_gets_502_saying_so(start_nginx_tls, tls_pki, start_relay):
    nginx = start_nginx_tls("wrong_name")
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert)])
    assert_tls_problem(relay.request("GET", "/"), NAME_KEYWORDS)
    assert nginx.access_records() == []


def test_tls_wrong_host_name_gets_502_saying_so(start_nginx_tls, tls_pki, start_relay):
    # By DNS name this time: `localhost` is not among wrong.example's names.
    nginx = start_nginx_tls("wrong_name")
    relay = start_relay([tls_route(nginx.url("localhost"), caFile=tls_pki.ca.cert)])
    assert_tls_problem(relay.request("GET", "/"), NAME_KEYWORDS)


def test_tls_server_name_makes_a_connection_to_an_ip_pass(start_nginx_tls, tls_pki, start_relay):
    nginx = start_nginx_tls("wrong_name")
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert, serverName=WRONG_NAME)])
    saw = nginx_saw(relay.request("GET", "/named"))
    assert saw["ssl_server_name"] == WRONG_NAME  # serverName is the SNI too


def test_tls_server_name_is_the_name_checked(nginx_tls, tls_pki, start_relay):
    # The good certificate (localhost, 127.0.0.1) does not cover the serverName asked for.
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert, serverName=WRONG_NAME)])
    assert_tls_problem(relay.request("GET", "/"), NAME_KEYWORDS)


def test_tls_expired_certificate_gets_502_saying_so(start_nginx_tls, tls_pki, start_relay):
    nginx = start_nginx_tls("expired")
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert)])
    assert_tls_problem(relay.request("GET", "/"), EXPIRED)
    assert nginx.access_records() == []


def test_tls_relay_keeps_serving_after_refused_handshakes(start_nginx_tls, tls_pki, start_relay):
    bad, good = start_nginx_tls("other_ca"), start_nginx_tls()
    relay = start_relay([tls_route(bad, "/bad/", name="bad", caFile=tls_pki.ca.cert),
                         tls_route(good, "/good/", name="good", caFile=tls_pki.ca.cert)])
    with relay.connect() as conn:
        for _ in range(3):
            assert_tls_problem(conn.request("GET", "/bad/x"), UNKNOWN_CA, route_name="bad")
            assert nginx_saw(conn.request("GET", "/good/x"))["uri"] == "/good/x"


def test_tls_handshake_that_never_completes_times_out(silent_port, tls_pki, start_relay):
    # TCP connects (the kernel's backlog), the ClientHello is never answered. A handshake that does
    # not finish is a TLS failure (502), not a slow network (504). Which limit bounds it is the
    # relay's choice (connect or response timeout): both are short here.
    relay = start_relay([tls_route(f"https://127.0.0.1:{silent_port}", caFile=tls_pki.ca.cert)],
                        limits={"upstreamConnectTimeoutSeconds": 1, "upstreamResponseTimeoutSeconds": 1})
    t0 = time.monotonic()
    resp = relay.request("GET", "/", timeout=10)
    elapsed = time.monotonic() - t0
    assert_tls_problem(resp, TIMEOUT)
    assert elapsed < scaled(5), f"answered after {elapsed:.1f}s with 1 s timeouts"


@pytest.mark.parametrize("cert", ["other_ca", "expired", "wrong_name"])
def test_tls_insecure_skip_verify_accepts_any_certificate(start_nginx_tls, start_relay, cert):
    nginx = start_nginx_tls(cert)
    relay = start_relay([tls_route(nginx, insecureSkipVerify=True)])
    assert nginx_saw(relay.request("GET", "/insecure"))["uri"] == "/insecure"


def test_tls_insecure_skip_verify_is_logged_at_start_up(start_nginx_tls, start_relay):
    nginx = start_nginx_tls("other_ca")
    relay = start_relay([tls_route(nginx, name="unsafe-route", insecureSkipVerify=True)])
    warnings = [line for line in relay.log().splitlines()
                if "warn" in line.lower() and ("insecure" in line.lower() or "verif" in line.lower())]
    assert warnings, f"no start-up warning that verification is off:\n{relay.log()}"


def test_tls_ca_file_only_trusts_the_ca_file_instead_of_the_system_store(nginx_tls, tls_pki, start_relay, monkeypatch):
    """`"trust": "caFileOnly"` pins a private PKI: a certificate the system store would accept
    is refused unless `caFile` holds its CA. OpenSSL reads its default store from
    `SSL_CERT_FILE`, so here the test CA stands in for the system store."""
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_pki.ca.cert))
    besides_system = start_relay([tls_route(nginx_tls, caFile=tls_pki.other_ca.cert)])
    assert nginx_saw(besides_system.request("GET", "/system-store"))["request"] == "GET /system-store HTTP/1.1"
    ca_file_only = start_relay([tls_route(nginx_tls, caFile=tls_pki.other_ca.cert, trust="caFileOnly")])
    assert_tls_problem(ca_file_only.request("GET", "/refused"), UNKNOWN_CA)
    pinned = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert, trust="caFileOnly")])
    assert nginx_saw(pinned.request("GET", "/pinned"))["request"] == "GET /pinned HTTP/1.1"
    assert [r["request"] for r in nginx_tls.access_records(count=2)] == ["GET /system-store HTTP/1.1", "GET /pinned HTTP/1.1"]
