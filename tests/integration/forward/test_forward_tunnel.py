"""A host no route names is tunnelled, not intercepted (issue 26): the client does TLS with the
real server, whose own certificate (another CA's) reaches it unchanged, and no token is added.
`tunnelOthers: false` refuses such a CONNECT, and so does a port not in `connectPorts`.

The client names other.test; curl's --connect-to (and s_client's -connect) make the CONNECT
target `localhost:PORT`, a name the relay resolves, while SNI and the checked name stay
other.test (the site's certificate has both names)."""

from __future__ import annotations

import pytest

from forward_clients import presented_certificate, s_client, site_answer, token_sha256
from forward_pki import OTHER_HOST, issuer_of, sha256_fingerprint, subject_of
from forward_relay import open_tunnel, proxy_curl
from http_client import assert_problem
from processes import LOOPBACK

pytestmark = pytest.mark.oauth


def connect_to(site) -> list[str]:
    return ["--connect-to", f"{OTHER_HOST}:{site.port}:localhost:{site.port}"]


def test_a_host_no_route_names_is_tunnelled_with_its_own_certificate_and_no_token(start_api_relay, other_site, forward_pki):
    fwd = start_api_relay(connect_ports=(443, other_site.port))
    url = f"https://{OTHER_HOST}:{other_site.port}/through-the-tunnel"
    resp = proxy_curl(fwd.port, url, "--cacert", str(forward_pki.other_ca.cert), *connect_to(other_site),
                      "-H", "Authorization: Bearer the-callers-own")
    assert resp.returncode == 0 and resp.status == 200, resp.stderr
    answer = site_answer(resp.body)
    assert answer["request"] == "GET /through-the-tunnel HTTP/1.1"
    assert answer["ssl_server_name"] == OTHER_HOST
    # The caller's own header went through untouched; the relay added nothing.
    assert answer["authorization_sha256"] == token_sha256("Bearer the-callers-own")
    plain = proxy_curl(fwd.port, url, "--cacert", str(forward_pki.other_ca.cert), *connect_to(other_site))
    assert site_answer(plain.body)["authorization_scheme"] == ""
    # The relay's CA cannot vouch for it: the client saw the site's own certificate.
    refused = proxy_curl(fwd.port, url, "--cacert", str(fwd.ca_pem), *connect_to(other_site))
    assert refused.returncode == 60, (refused.returncode, refused.stderr)


def test_the_tunnelled_certificate_is_the_sites_own_byte_for_byte(start_api_relay, other_site, forward_pki, tmp_path):
    fwd = start_api_relay(connect_ports=(443, other_site.port))
    proxy = f"{LOOPBACK}:{fwd.port}"
    pem = presented_certificate(f"localhost:{other_site.port}", OTHER_HOST, proxy=proxy)
    seen = tmp_path / "seen.pem"
    seen.write_bytes(pem)
    assert sha256_fingerprint(seen) == sha256_fingerprint(forward_pki.other.cert)
    assert issuer_of(pem) == subject_of(forward_pki.other_ca.cert)
    verified, output = s_client(f"localhost:{other_site.port}", OTHER_HOST, forward_pki.other_ca.cert, proxy=proxy)
    assert verified, output


def test_tunnel_others_false_refuses_a_connect_to_a_host_no_route_names(start_api_relay, other_site):
    fwd = start_api_relay(connect_ports=(443, other_site.port), forward_options={"tunnelOthers": False})
    conn, answer = open_tunnel(fwd.port, f"localhost:{other_site.port}")
    conn.close()
    assert assert_problem(answer, 403)["type"] == "urn:oauth-relay:problem:tunnel-refused"
    assert other_site.access_records() == []


def test_a_connect_to_a_port_outside_connect_ports_is_refused(start_api_relay, other_site):
    fwd = start_api_relay()  # connectPorts [443] only
    conn, answer = open_tunnel(fwd.port, f"localhost:{other_site.port}")
    conn.close()
    assert assert_problem(answer, 403)["type"] == "urn:oauth-relay:problem:connect-port-refused"
    assert other_site.access_records() == []
