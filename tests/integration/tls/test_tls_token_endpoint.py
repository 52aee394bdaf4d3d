"""Identities whose token endpoint is https (`tokenUrl` https:// with an identity `tls` block):
the token is fetched over a verified connection and injected; a token endpoint whose certificate
is not trusted is never sent a request, and the relay's own answer names the identity.

The token endpoint is ../oauth's scripted stub behind TLS (tls_idp.py)."""

import pytest

from idp_processes import sha256
from idp_relay import assert_oauth_problem, bearer, oauth_route
from tls_relay import UNKNOWN_CA

pytestmark = pytest.mark.tls


def issued(stub) -> list[str]:
    return [sha256(r["issued"]["access_token"]) for r in stub.token_requests() if r["issued"]]


def test_tls_https_token_endpoint_with_ca_file_gets_a_token_injected(tls_stub_idp, tls_pki, upstream, start_relay):
    identity = tls_stub_idp.identity(tls={"caFile": str(tls_pki.ca.cert)})
    assert identity["tokenUrl"].startswith("https://127.0.0.1:")
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity})
    injected = sha256(bearer(relay.request("GET", "/orders/1", timeout=15)))
    assert issued(tls_stub_idp) == [injected]
    [record] = tls_stub_idp.token_requests()
    assert record["grant_type"] == "client_credentials"


def test_tls_https_token_endpoint_with_server_name(tls_stub_idp, tls_pki, upstream, start_relay):
    # The stub's certificate names localhost (and 127.0.0.1): serverName "localhost" on an IP URL.
    identity = tls_stub_idp.identity(tls={"caFile": str(tls_pki.ca.cert), "serverName": "localhost"})
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity})
    injected = sha256(bearer(relay.request("GET", "/orders/1", timeout=15)))
    assert issued(tls_stub_idp) == [injected]


def test_tls_https_token_endpoint_with_unknown_ca_gets_503_naming_the_identity(start_tls_stub_idp, tls_pki,
                                                                               upstream, start_relay):
    # A token endpoint that cannot be reached securely is unreachable (issue 4: 503 + Retry-After).
    idp = start_tls_stub_idp("other_ca")
    identity = idp.identity(tls={"caFile": str(tls_pki.ca.cert)})
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity})
    resp = relay.request("GET", "/orders/1", timeout=15)
    doc = assert_oauth_problem(resp, 503, identity="orders")
    assert idp.token_requests() == [], "a token request (with the client secret) went to an unverified server"
    assert upstream.stats()["requests_served"] == 0
    # Why, somewhere the operator looks: the problem or the relay's log.
    where = (doc["detail"] + "\n" + relay.log()).lower()
    assert any(k in where for k in UNKNOWN_CA), f"neither the problem nor the log says why:\n{doc}\n{relay.log()}"


def test_tls_https_token_endpoint_without_tls_block_uses_the_system_store(tls_stub_idp, upstream, start_relay):
    # The system trust store does not hold the test CA: verification is on by default here too.
    identity = tls_stub_idp.identity()
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity})
    assert_oauth_problem(relay.request("GET", "/orders/1", timeout=15), 503, identity="orders")
    assert tls_stub_idp.token_requests() == []
