"""`oauth-relay run` with a forward listener and no CA yet (issue 26): the relay creates the CA
itself (no `oauth-relay ca` first), says so in its log, keeps it with the modes the issue names
(ca.pem 0644, ca.key 0600, the directory 0700), and curl trusting that ca.pem gets through the
proxy to the API with the token."""

from __future__ import annotations

import pytest

from admin_client import log_records
from deadlines import wait_until
from forward_clients import site_answer
from forward_pki import API_HOST, sha256_fingerprint
from forward_relay import api_route, forward_section, mode_of, proxy_curl
from processes import LOOPBACK, STARTUP_SECONDS, can_connect, free_port

pytestmark = pytest.mark.oauth

CREATED = "forward proxy CA created; clients must trust it: oauth-relay ca"


def test_run_creates_the_ca_logs_it_and_curl_trusting_it_gets_through(start_relay, django_idp, api_site, forward_pki,
                                                                       ca_directory):
    assert not ca_directory.exists()
    port = free_port()
    route = api_route(API_HOST, api_site.url(), forward_pki.api_ca.cert, identity="orders", name="api")
    relay = start_relay([route], forward=forward_section(port, ca_directory),
                        identities={"orders": django_idp.identity("orders-cc")})
    wait_until(lambda: can_connect(LOOPBACK, port), STARTUP_SECONDS, f"the forward listener on port {port}")
    ca_pem = ca_directory / "ca.pem"
    [created] = log_records(relay, CREATED)
    assert created["certificate"] == str(ca_pem)
    assert created["fingerprint"] == sha256_fingerprint(ca_pem)
    assert created["hosts"] == API_HOST
    assert (mode_of(ca_directory), mode_of(ca_pem), mode_of(ca_directory / "ca.key")) == (0o700, 0o644, 0o600)
    resp = proxy_curl(port, f"https://{API_HOST}/created", "--cacert", str(ca_pem))
    assert resp.returncode == 0 and resp.status == 200, resp.stderr
    assert site_answer(resp.body)["authorization_scheme"] == "Bearer"
