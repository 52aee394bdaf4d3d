"""The forward-proxy tests' fixtures, each shown to work on its own (no relay): the API's nginx
with its api.test certificate, the unrelated other.test site, the throw-away NSS database that
makes Chromium trust one CA, and the name-constraint check run against a CA made here the way the
relay makes its own (so a refusal the relay's CA gets later is known to be the constraint's)."""

from __future__ import annotations

import pytest

from constraint_checks import assert_constraint_holds, client_verdicts
from forward_clients import direct_curl, presented_certificate, site_answer
from forward_pki import API_HOST, OTHER_HOST, constrained_ca, issuer_of, make_ca, subject_of
from nss_browser import load
from processes import LOOPBACK


def test_the_api_site_presents_its_api_test_certificate_and_echoes_what_it_received(api_site, forward_pki):
    resp = direct_curl(f"https://{API_HOST}:{api_site.port}/v1/things?x=1", forward_pki.api_ca.cert,
                       {f"{API_HOST}:{api_site.port}": LOOPBACK}, "-H", "Authorization: Bearer fixture-probe")
    assert resp.returncode == 0 and resp.status == 200, resp.stderr
    answer = site_answer(resp.body)
    assert answer["request"] == "GET /v1/things?x=1 HTTP/1.1"
    assert answer["host"] == f"{API_HOST}:{api_site.port}"
    assert answer["ssl_server_name"] == API_HOST
    assert answer["authorization_scheme"] == "Bearer" and answer["authorization_sha256"]
    # Nobody else's CA vouches for it.
    refused = direct_curl(f"https://{API_HOST}:{api_site.port}/", forward_pki.other_ca.cert,
                          {f"{API_HOST}:{api_site.port}": LOOPBACK})
    assert refused.returncode == 60, (refused.returncode, refused.stderr)


def test_the_other_site_presents_the_other_cas_certificate_on_both_loopbacks(other_site, forward_pki):
    resp = direct_curl(f"https://{OTHER_HOST}:{other_site.port}/", forward_pki.other_ca.cert,
                       {f"{OTHER_HOST}:{other_site.port}": LOOPBACK})
    assert resp.returncode == 0 and resp.status == 200, resp.stderr
    assert site_answer(resp.body)["authorization_scheme"] == ""
    pem = presented_certificate(f"{LOOPBACK}:{other_site.port}", OTHER_HOST)
    assert issuer_of(pem) == subject_of(forward_pki.other_ca.cert)
    # `localhost` is in its names too: the tunnel's CONNECT target (the relay resolves it).
    assert direct_curl(f"https://localhost:{other_site.port}/", forward_pki.other_ca.cert).status == 200


def test_chromium_trusts_exactly_the_cas_of_its_throw_away_nss_database(api_site, forward_pki, nss_home, nss_chromium):
    url = f"https://{API_HOST}:{api_site.port}/page"
    driver = nss_chromium(resolve={API_HOST: LOOPBACK})
    error, _ = load(driver, url)
    assert error == "ERR_CERT_AUTHORITY_INVALID", error
    nss_home.trust(forward_pki.api_ca.cert, "API test CA")
    assert nss_home.nicknames() == ["API test CA"]
    # NSS is read when the browser starts: a new one with the CA trusted.
    error, text = load(nss_chromium(resolve={API_HOST: LOOPBACK}), url)
    assert error is None, error
    assert '"ssl_server_name":"api.test"' in text and '"request":"GET /page HTTP/1.1"' in text


def test_every_client_refuses_leaves_outside_a_relay_like_cas_name_constraint(tmp_path, start_site, nss_home, nss_chromium):
    ca = constrained_ca(tmp_path / "relay-like-ca")
    assert_constraint_holds(client_verdicts(ca, tmp_path / "leaves", start_site, nss_home, nss_chromium))


def test_without_the_constraint_the_same_leaves_are_accepted(tmp_path, start_site, nss_home, nss_chromium):
    """The control: the check above fails for a CA that has no name constraint."""
    ca = make_ca(tmp_path / "unconstrained-ca", "ca", "/O=oauth-relay tests/CN=unconstrained")
    verdicts = client_verdicts(ca, tmp_path / "leaves", start_site, nss_home, nss_chromium)
    assert all(why is None for clients in verdicts.values() for why in clients.values()), verdicts
    with pytest.raises(AssertionError):
        assert_constraint_holds(verdicts)
