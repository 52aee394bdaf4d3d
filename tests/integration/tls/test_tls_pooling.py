"""Keep-alive and pooling over TLS: sequential requests share one upstream TLS connection (nginx
counts `$connection_requests` on it), pooled connections serve other client connections, and a
new upstream connection resumes the TLS session of an earlier one (`$ssl_session_reused` = r)."""

import pytest

from tls_relay import nginx_saw, tls_route

pytestmark = pytest.mark.tls


def test_tls_sequential_requests_reuse_one_upstream_connection(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert)])
    with relay.connect() as conn:
        seen = [nginx_saw(conn.request("GET", f"/{i}")) for i in range(6)]
    assert len({s["connection"] for s in seen}) == 1, [s["connection"] for s in seen]
    assert [s["connection_requests"] for s in seen] == [1, 2, 3, 4, 5, 6]


def test_tls_upstream_connections_are_pooled_across_client_connections(nginx_tls, tls_pki, start_relay):
    relay = start_relay([tls_route(nginx_tls, caFile=tls_pki.ca.cert)])
    n = 6
    for i in range(n):
        with relay.connect() as conn:
            nginx_saw(conn.request("GET", f"/{i}"))
    records = nginx_tls.access_records(count=n)
    assert len(records) == n
    assert len({r["connection"] for r in records}) < n, records
    assert max(r["connection_requests"] for r in records) > 1


@pytest.mark.parametrize("protocols", ["TLSv1.2", "TLSv1.3"])
def test_tls_a_new_upstream_connection_resumes_the_session(start_nginx_tls, tls_pki, start_relay, protocols):
    nginx = start_nginx_tls(protocols=protocols)
    relay = start_relay([tls_route(nginx, caFile=tls_pki.ca.cert)])
    first = nginx_saw(relay.request("GET", "/close"))  # nginx closes this connection after answering
    second = nginx_saw(relay.request("GET", "/after"))
    assert first["ssl_protocol"] == second["ssl_protocol"] == protocols
    assert second["connection"] != first["connection"], "the closed upstream connection was used again"
    assert (first["ssl_session_reused"], second["ssl_session_reused"]) == (".", "r")

