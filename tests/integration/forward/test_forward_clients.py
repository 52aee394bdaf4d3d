"""Tools that honour HTTPS_PROXY get the token with no change but the proxy and the CA (issue 26):
Python `requests` (HTTPS_PROXY, REQUESTS_CA_BUNDLE) and Chromium (`--proxy-server`, the relay's
CA trusted in a throw-away NSS database, as `oauth-relay ca`'s certutil line does)."""

from __future__ import annotations

import pytest

from forward_clients import python_requests, site_answer
from forward_pki import API_HOST
from nss_browser import load

pytestmark = pytest.mark.oauth


def issued_token_sha256(idp) -> str:
    [record] = idp.token_requests()
    assert record["status"] == 200, record
    return record["access_token_sha256"]


def test_python_requests_with_https_proxy_and_requests_ca_bundle_gets_the_token(api_relay, django_idp):
    result = python_requests(f"https://{API_HOST}/v1/items?id=7",
                             {"HTTPS_PROXY": api_relay.proxy_url, "REQUESTS_CA_BUNDLE": str(api_relay.ca_pem)})
    assert result.get("status") == 200, result
    answer = result["answer"]
    assert answer["request"] == "GET /v1/items?id=7 HTTP/1.1"
    assert answer["authorization_scheme"] == "Bearer"
    assert answer["authorization_sha256"] == issued_token_sha256(django_idp)


def test_python_requests_without_the_relays_ca_refuses_the_intercepted_connection(api_relay, api_site):
    # Only the system store: the relay's CA is in no trust store unless the user puts it there.
    result = python_requests(f"https://{API_HOST}/x", {"HTTPS_PROXY": api_relay.proxy_url})
    assert result.get("error") == "ssl", result
    assert api_site.access_records() == []


def browser_relay(start_api_relay):
    """The relay for a browser: Chromium sends its own background connections (its search
    engine, Google's accounts and updates) to the proxy too; with `tunnelOthers: false` they are
    refused at once, before the relay would resolve any name outside the test."""
    return start_api_relay(forward_options={"tunnelOthers": False})


def test_chromium_through_the_proxy_with_the_relays_ca_in_its_nss_database_gets_the_token(
        start_api_relay, django_idp, nss_home, nss_chromium):
    fwd = browser_relay(start_api_relay)
    nss_home.trust(fwd.ca_pem, "oauth-relay forward proxy CA")
    driver = nss_chromium(proxy=fwd.proxy_url)
    error, text = load(driver, f"https://{API_HOST}/from-the-browser")
    assert error is None, error
    answer = site_answer(text.encode())
    assert answer["request"] == "GET /from-the-browser HTTP/1.1"
    assert answer["authorization_sha256"] == issued_token_sha256(django_idp)


def test_chromium_without_the_relays_ca_shows_a_certificate_error_and_the_api_sees_nothing(
        start_api_relay, api_site, nss_chromium):
    fwd = browser_relay(start_api_relay)
    error, _ = load(nss_chromium(proxy=fwd.proxy_url), f"https://{API_HOST}/x")
    assert error == "ERR_CERT_AUTHORITY_INVALID", error
    assert api_site.access_records() == []
