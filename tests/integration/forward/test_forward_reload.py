"""A reload and the forward proxy's CA (issue 26): a reload that keeps the routes' hosts keeps the
CA and the leaves already made; one that names a new host issues a new CA (logged: clients must
trust it again), and the new host is intercepted at once with a leaf of the new CA, which the old
CA does not vouch for; one that removes a host stops the connections intercepted for it (421)."""

from __future__ import annotations

import ssl

import pytest

from admin_client import RELOADED, log_records, rewrite, sighup
from deadlines import wait_until
from forward_clients import site_answer
from forward_pki import API_HOST, sha256_fingerprint
from forward_relay import (api_route, client_context, forward_section, intercepted_connection, open_tunnel,
                           printed_fingerprint, run_ca_command, start_forward_relay)
from processes import LOOPBACK, free_port, relay_config, write_config

pytestmark = pytest.mark.oauth


def reload_and_wait(relay) -> None:
    before = len(log_records(relay, RELOADED))
    sighup(relay)
    wait_until(lambda: len(log_records(relay, RELOADED)) > before, 10, "the reload to apply")


def test_a_reload_with_the_same_hosts_keeps_the_ca(api_relay):
    relay = api_relay.relay
    fingerprint = sha256_fingerprint(api_relay.ca_pem)
    with intercepted_connection(api_relay.port, API_HOST, api_relay.ca_pem) as conn:
        first_leaf = conn.sock.getpeercert(binary_form=True)
    rewrite(relay, accessLog=True)
    reload_and_wait(relay)
    assert sha256_fingerprint(api_relay.ca_pem) == fingerprint
    assert not [r for r in log_records(relay) if "forward proxy CA issued again" in r.get("msg", "")]
    # The leaf minted before the reload is served after it: the same certificate, not a new one.
    with intercepted_connection(api_relay.port, API_HOST, api_relay.ca_pem) as conn:
        assert conn.sock.getpeercert(binary_form=True) == first_leaf
        assert conn.request("GET", "/after", host=API_HOST).status == 200


def test_a_reload_that_names_a_new_host_issues_a_new_ca_and_intercepts_the_host(api_relay, api_site, forward_pki, tmp_path):
    relay = api_relay.relay
    old_ca = tmp_path / "old-ca.pem"
    old_ca.write_bytes(api_relay.ca_pem.read_bytes())
    old_fingerprint = sha256_fingerprint(old_ca)
    # Before the reload, x.corp.test is no route's host: its CONNECT is refused (tunnelling is
    # allowed on 443 only to hosts that resolve; this one does not), not intercepted.
    conn, answer = open_tunnel(api_relay.port, "x.corp.test:443")
    conn.close()
    assert answer.status != 200
    corp = api_route("*.corp.test", api_site.url(), forward_pki.api_ca.cert, identity="orders", name="corp")
    corp["tls"]["serverName"] = API_HOST
    rewrite(relay, routes=[*relay.config["routes"], corp])
    reload_and_wait(relay)
    assert sha256_fingerprint(api_relay.ca_pem) != old_fingerprint
    [issued] = [r for r in log_records(relay) if "forward proxy CA issued again" in r.get("msg", "")]
    assert issued.get("previousFingerprint") == old_fingerprint
    with intercepted_connection(api_relay.port, "x.corp.test", api_relay.ca_pem) as conn:
        answer = site_answer(conn.request("GET", "/corp", host="x.corp.test").body)
    assert answer["authorization_scheme"] == "Bearer"
    # The old CA does not vouch for the new leaves: a client that still trusts only it refuses.
    conn, answer = open_tunnel(api_relay.port, f"{API_HOST}:443")
    with pytest.raises(ssl.SSLCertVerificationError):
        client_context(old_ca).wrap_socket(conn.sock, server_hostname=API_HOST)
    conn.close()


def test_a_reload_that_removes_the_host_stops_an_open_intercepted_connection(api_relay, api_site, forward_pki):
    relay = api_relay.relay
    with intercepted_connection(api_relay.port, API_HOST, api_relay.ca_pem) as conn:
        assert conn.request("GET", "/before", host=API_HOST).status == 200
        served = len(api_site.access_records())
        other = api_route("other.test", api_site.url(), forward_pki.api_ca.cert, identity="orders", name="other")
        rewrite(relay, routes=[other])
        reload_and_wait(relay)
        # The connection opened for api.test outlived its route: misdirected, and closed.
        resp = conn.request("GET", "/after", host=API_HOST)
        assert resp.status == 421, resp.status
        assert resp.json()["type"] == "urn:oauth-relay:problem:misdirected-request"
        assert conn.is_closed()
    assert len(api_site.access_records()) == served


def test_a_ca_replaced_by_oauth_relay_ca_with_another_config_is_put_in_force_without_a_sighup(
        start_relay, django_idp, api_site, forward_pki, ca_directory, tmp_path):
    """`oauth-relay ca` run with a configuration naming one more host replaces the CA in the
    running relay's caDirectory: the relay polls ca.pem, reads the CA again, and from then on
    presents leaves that verify under the ca.pem on disk, never again a leaf of the CA it started
    with (which is gone from the directory)."""
    route = api_route(API_HOST, api_site.url(), forward_pki.api_ca.cert, identity="orders", name="api")
    identities = {"orders": django_idp.identity("orders-cc")}
    api_relay = start_forward_relay(start_relay, [route], ca_directory, identities=identities,
                                    limits={"credentialFilePollSeconds": 1})
    started_with = sha256_fingerprint(api_relay.ca_pem)
    with intercepted_connection(api_relay.port, API_HOST, api_relay.ca_pem) as conn:
        assert conn.request("GET", "/before", host=API_HOST).status == 200

    corp = api_route("*.corp.test", api_site.url(), forward_pki.api_ca.cert, identity="orders", name="corp")
    corp["tls"]["serverName"] = API_HOST
    other = write_config(tmp_path / "other-config.json", relay_config(
        f"{LOOPBACK}:{free_port()}", [route, corp], forward=forward_section(free_port(), ca_directory), identities=identities))
    result = run_ca_command(other)
    assert result.returncode == 0, result.stderr[-2000:]
    assert printed_fingerprint(result.stdout) != started_with

    def leaf_verifies_under_the_ca_on_disk() -> bool:
        ca_now = tmp_path / "ca-now.pem"
        ca_now.write_bytes(api_relay.ca_pem.read_bytes())
        conn, answer = open_tunnel(api_relay.port, f"{API_HOST}:443")
        assert answer.status == 200
        try:
            client_context(ca_now).wrap_socket(conn.sock, server_hostname=API_HOST).close()
            return True
        except ssl.SSLCertVerificationError:
            return False
        finally:
            conn.close()

    wait_until(leaf_verifies_under_the_ca_on_disk, 15, "a leaf of the CA now in ca.pem")
    assert sha256_fingerprint(api_relay.ca_pem) != started_with
    with intercepted_connection(api_relay.port, API_HOST, api_relay.ca_pem) as conn:
        assert site_answer(conn.request("GET", "/after", host=API_HOST).body)["authorization_scheme"] == "Bearer"
