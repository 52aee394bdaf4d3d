"""TLS session resumption to an https upstream when the relay has to open new connections: nginx
closes every connection after one request (`keepalive_requests 1`), so each request the relay
forwards needs a new upstream connection, and nginx's `$ssl_session_reused` says whether its
handshake was full (".") or resumed ("r"). Only the very first connection may be a full handshake;
every later one resumes the session the relay cached (`ClientSessionCache`), whichever worker opens
it and however many open at once. Without that cache every handshake is a full one (certificate
chain, signature, key exchange): the cost `bench/cpu-per-request-tls.sh`'s upstream-close run
measures."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from tls_relay import nginx_saw, tls_route

pytestmark = pytest.mark.tls


@pytest.mark.parametrize("protocols", ["TLSv1.2", "TLSv1.3"])
def test_tls_every_new_upstream_connection_after_the_first_resumes(start_nginx_tls, tls_pki, start_relay, protocols):
    nginx = start_nginx_tls(protocols=protocols, keepalive_requests=1)
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert)])
    with relay.connect() as conn:
        seen = [nginx_saw(conn.request("GET", f"/{i}")) for i in range(12)]
    assert {s["ssl_protocol"] for s in seen} == {protocols}
    assert len({s["connection"] for s in seen}) == 12, "nginx closed each connection: each request needs a new one"
    assert [s["ssl_session_reused"] for s in seen] == ["."] + ["r"] * 11


@pytest.mark.parametrize("workers", [1, 2])
def test_tls_connections_opened_at_once_all_resume(start_nginx_tls, tls_pki, start_relay, workers):
    """TLS 1.3, where OpenSSL counts a ticket as used once a connection resumed it: connections
    opened before that one's own ticket arrived must resume all the same."""
    nginx = start_nginx_tls(protocols="TLSv1.3", keepalive_requests=1)
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert)], workers=workers)
    first = nginx_saw(relay.request("GET", "/first"))
    assert first["ssl_session_reused"] == "."

    def one(i: int) -> dict:
        with relay.connect() as conn:
            return nginx_saw(conn.request("GET", f"/at-once/{i}"))

    with ThreadPoolExecutor(max_workers=16) as pool:
        seen = list(pool.map(one, range(32)))
    assert len({s["connection"] for s in seen}) == 32
    full = [s["uri"] for s in seen if s["ssl_session_reused"] != "r"]
    assert full == [], f"full handshakes after the first connection: {full}"
