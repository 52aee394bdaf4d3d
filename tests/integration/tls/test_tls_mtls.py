"""Mutual TLS to an upstream (`tls.clientCert` + `tls.clientKey`): nginx (`ssl_verify_client
optional`, trusting the test CA) reports whether a client certificate was presented and verified."""

import pytest

from tls_pki import CLIENT_DN_RFC2253
from tls_relay import nginx_saw, tls_route

pytestmark = pytest.mark.tls


def test_tls_client_certificate_is_presented_and_verified(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert, clientCert=tls_pki.client.cert,
                                   clientKey=tls_pki.client.key)])
    saw = nginx_saw(relay.request("GET", "/mtls"))
    assert saw["ssl_client_verify"] == "SUCCESS"
    assert saw["ssl_client_s_dn"] == CLIENT_DN_RFC2253


def test_tls_without_client_certificate_none_is_presented(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert)])
    saw = nginx_saw(relay.request("GET", "/no-mtls"))
    assert saw["ssl_client_verify"] == "NONE"
    assert saw["ssl_client_s_dn"] == ""


def test_tls_client_certificate_is_per_route(nginx_tls, tls_pki, start_relay):
    relay = start_relay([
        tls_route(nginx_tls, "/with/", name="with", caFile=tls_pki.ca.cert, clientCert=tls_pki.client.cert,
                  clientKey=tls_pki.client.key),
        tls_route(nginx_tls, "/without/", name="without", caFile=tls_pki.ca.cert),
    ])
    with relay.connect() as conn:
        for _ in range(2):
            assert nginx_saw(conn.request("GET", "/with/x"))["ssl_client_verify"] == "SUCCESS"
            assert nginx_saw(conn.request("GET", "/without/x"))["ssl_client_verify"] == "NONE"


def test_tls_client_certificate_survives_session_resumption(nginx_tls, tls_pki, start_relay):
    # /close makes nginx close the connection: the next request is a new (resumed) handshake,
    # and nginx still knows the client certificate from the session.
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert, clientCert=tls_pki.client.cert,
                                   clientKey=tls_pki.client.key)])
    first = nginx_saw(relay.request("GET", "/close"))
    second = nginx_saw(relay.request("GET", "/after"))
    assert second["connection"] != first["connection"]
    assert (second["ssl_client_verify"], second["ssl_client_s_dn"]) == ("SUCCESS", CLIENT_DN_RFC2253)
