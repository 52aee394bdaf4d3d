"""Credential files that rotate while traffic flows (issue 23): the token thread reads a changed
`clientSecretFile` before its next request to the IdP, without a reload. Against the scripted stub
made to accept only the current client secret (`stub.script(client_secret=...)`, 401
invalid_client otherwise), with requests going through the relay on other threads the whole time
(every answer must be a 200), a token request forced after each rotation (admin `POST
/identities/orders/refresh`), and every relay at trace level (the leak scan then finds no secret in
its log). The three ways files rotate (rotating_files.py): Kubernetes' atomic symlink swap, an
in-place rewrite, a delete-then-create with a window without the file; and a soak of 10 rotations."""

from __future__ import annotations

import base64
import hashlib
from urllib.parse import unquote_plus

import pytest

from admin_client import start_with_admin
from idp_processes import form, header_values
from idp_relay import bearer, oauth_route
from rotating_files import KubeletVolume, create, delete, rewrite_in_place
from rotation_support import (CHANGED, RELAY_ARGS, UNUSABLE, USABLE_AGAIN, Traffic, credential_log,
                              force_token_request, new_secret, serves_token_of)

pytestmark = pytest.mark.oauth


def start(start_relay, stub, upstream, secret_file: str):
    """A relay with an admin listener and identity `orders` reading its client secret from
    `secret_file` (client_secret_basic); its first token obtained."""
    identity = stub.identity(clientSecret=None, clientSecretFile=secret_file)
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "orders")], identities={"orders": identity},
                                    args=RELAY_ARGS)
    bearer(relay.request("GET", "/first"))
    return relay, admin


def fingerprint(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def assert_sent(record: dict, secret: str) -> dict:
    """The stub accepted the request, and it carried `secret` (client_secret_basic: the id and
    secret form-encoded, then joined; compared by fingerprint, so a failure shows no secret)."""
    assert record["client_secret_check"] == "ok" and record["status"] == 200, (record["status"], record.get("kind"))
    assert "client_secret" not in form(record), "client_secret_basic sends no client_secret field"
    [authorization] = header_values(record, "Authorization")
    scheme, _, credentials = authorization.partition(" ")
    presented = unquote_plus(base64.b64decode(credentials).decode().partition(":")[2])
    assert scheme == "Basic" and fingerprint(presented) == fingerprint(secret)
    return record


def rotated(relay, traffic, record: dict, secret: str) -> None:
    """The token request after a rotation carried `secret`, its token is the one requests carry
    now, and requests go on flowing."""
    serves_token_of(relay, assert_sent(record, secret))
    traffic.flows()


def test_a_kubernetes_secret_volume_swap_is_used_by_the_next_token_request(stub_idp, upstream, start_relay, tmp_path,
                                                                           sensitive):
    secrets = [sensitive.add(f"client secret {n}", new_secret(f"swap-{n}")) for n in range(3)]
    volume = KubeletVolume(tmp_path / "orders-secret", {"client-secret": secrets[0] + "\n"})
    stub_idp.script(client_secret=secrets[0])
    relay, admin = start(start_relay, stub_idp, upstream, volume.path("client-secret"))
    with Traffic(relay) as traffic:
        for secret in secrets[1:]:
            volume.update({"client-secret": secret + "\n"})
            stub_idp.script(client_secret=secret)
            rotated(relay, traffic, force_token_request(admin, stub_idp), secret)
    traffic.assert_all_answered_200(at_least=40)
    records = stub_idp.token_requests()
    assert [r["client_secret_check"] for r in records] == ["ok"] * 3
    changes = credential_log(relay, CHANGED)
    assert len(changes) == 2, changes
    assert {(c["identity"], c["key"], c["file"]) for c in changes} == {("orders", "clientSecretFile", volume.path("client-secret"))}
    assert credential_log(relay, UNUSABLE) == []


def test_an_in_place_rewrite_is_used_by_the_next_token_request(stub_idp, upstream, start_relay, tmp_path, sensitive):
    secrets = [sensitive.add(f"client secret {n}", new_secret(f"rewrite-{n}")) for n in range(3)]
    path = tmp_path / "client-secret"
    path.write_text(secrets[0])
    stub_idp.script(client_secret=secrets[0])
    relay, admin = start(start_relay, stub_idp, upstream, str(path))
    with Traffic(relay) as traffic:
        for secret in secrets[1:]:
            rewrite_in_place(str(path), secret + "\n")
            stub_idp.script(client_secret=secret)
            rotated(relay, traffic, force_token_request(admin, stub_idp), secret)
    traffic.assert_all_answered_200(at_least=40)
    assert [r["client_secret_check"] for r in stub_idp.token_requests()] == ["ok"] * 3
    assert len(credential_log(relay, CHANGED)) == 2


def test_a_delete_then_create_serves_with_the_last_good_secret_and_warns_once(stub_idp, upstream, start_relay, tmp_path,
                                                                              sensitive):
    old, new = (sensitive.add(f"client secret {n}", new_secret(f"recreate-{n}")) for n in range(2))
    path = str(tmp_path / "client-secret")
    create(path, old)
    stub_idp.script(client_secret=old)
    relay, admin = start(start_relay, stub_idp, upstream, path)
    with Traffic(relay) as traffic:
        delete(path)
        # The window without a file: the IdP still knows the old secret, which the relay keeps sending.
        rotated(relay, traffic, force_token_request(admin, stub_idp), old)
        rotated(relay, traffic, force_token_request(admin, stub_idp), old)
        [warning] = credential_log(relay, UNUSABLE)
        assert (warning["level"], warning["identity"], warning["key"], warning["file"], warning["reason"]) == (
            "warning", "orders", "clientSecretFile", path, "no such file")
        create(path, new)
        stub_idp.script(client_secret=new)
        rotated(relay, traffic, force_token_request(admin, stub_idp), new)
    traffic.assert_all_answered_200(at_least=60)
    assert len(credential_log(relay, UNUSABLE)) == 1, "one warning for the whole outage"
    [back] = credential_log(relay, USABLE_AGAIN)
    assert (back["level"], back["file"]) == ("info", path)
    assert len(credential_log(relay, CHANGED)) == 1
    assert [r["client_secret_check"] for r in stub_idp.token_requests()] == ["ok"] * 4


def test_ten_rotations_under_load_fail_no_request_and_cost_one_token_request_each(stub_idp, upstream, start_relay,
                                                                                  tmp_path, sensitive):
    secrets = [sensitive.add(f"client secret {n}", new_secret(f"soak-{n}")) for n in range(11)]
    volume = KubeletVolume(tmp_path / "orders-secret", {"client-secret": secrets[0]})
    stub_idp.script(client_secret=secrets[0])
    relay, admin = start(start_relay, stub_idp, upstream, volume.path("client-secret"))
    with Traffic(relay, threads=4) as traffic:
        for secret in secrets[1:]:
            volume.update({"client-secret": secret})
            stub_idp.script(client_secret=secret)
            rotated(relay, traffic, force_token_request(admin, stub_idp), secret)
    traffic.assert_all_answered_200(at_least=200)
    records = stub_idp.token_requests()
    assert len(records) == 11, f"{len(records)} token requests for 10 rotations and the first token"
    assert all(r["client_secret_check"] == "ok" and r["status"] == 200 for r in records)
    assert len(credential_log(relay, CHANGED)) == 10
    assert credential_log(relay, UNUSABLE) == []


def test_a_reload_after_a_rotation_keeps_the_identity_and_its_token(stub_idp, upstream, start_relay, tmp_path, sensitive):
    """The reload reads the rotated file too, but a credential the token thread reads again by
    itself is no setting: the identity is kept, with its token, and no token request is made. The
    next one carries the new secret."""
    first, second = (sensitive.add(f"client secret {n}", new_secret(f"reload-{n}")) for n in range(2))
    path = tmp_path / "client-secret"
    path.write_text(first + "\n")
    stub_idp.script(client_secret=first)
    relay, admin = start(start_relay, stub_idp, upstream, str(path))
    token = bearer(relay.request("GET", "/before"))
    rewrite_in_place(str(path), second + "\n")
    stub_idp.script(client_secret=second)
    resp = admin.request("POST", "/reload")
    assert resp.status == 200, resp.body[:300]
    assert resp.json()["identities"] == {"kept": ["orders"], "started": [], "removed": []}
    assert bearer(relay.request("GET", "/after")) == token
    assert len(stub_idp.token_requests()) == 1
    rotated_record = force_token_request(admin, stub_idp)
    serves_token_of(relay, assert_sent(rotated_record, second))
