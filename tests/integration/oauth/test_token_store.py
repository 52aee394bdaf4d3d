"""The token store (issue 12) with the real binary and django-oauth-toolkit: a restart with a valid
stored token asks the IdP nothing, an expired one costs one refresh, two relays on one store with
a rotating-refresh IdP make one call per lifetime and never lose a refresh token, a corrupt entry
is moved aside, a wrong key is a clear start-up error, and `oauth-relay token` answers from the
store. Token requests are counted at the IdP."""

import base64
import os
import random
import time

import pytest

from admin_client import rewrite, start_with_admin, wait_for_log
from idp_processes import sha256
from idp_relay import bearer, oauth_route, run_token_command, token_command_config
from processes import STORE_KEY, free_port, relay_config, run_cli, write_config

pytestmark = pytest.mark.oauth

OTHER_KEY = base64.b64encode(bytes(range(1, 33))).decode()


def store_at(tmp_path, key=STORE_KEY) -> dict:
    return {"path": str(tmp_path / "token-store"), "key": key}


def store_relay_options(idp, upstream, store, client="orders-cc") -> tuple[list, dict]:
    """The routes (/echo/ to the echo upstream, /api/ to DOT) and the other options of the store
    tests' relays: identity `orders` as DOT's `client`, and `store`."""
    routes = [oauth_route(upstream, "/echo/", "orders"), oauth_route(idp, "/api/", "orders")]
    return routes, {"identities": {"orders": idp.identity(client)}, "store": store}


def start_store_relay(start_relay, idp, upstream, store, client="orders-cc", **top):
    routes, options = store_relay_options(idp, upstream, store, client)
    return start_relay(routes, **options, **top)


def whoami_sha(relay) -> str:
    resp = relay.request("GET", "/api/whoami")
    assert resp.status == 200, f"django refused the injected token: {resp.status} {resp.body[:300]!r}"
    return resp.json()["token_sha256"]


def entry_files(tmp_path) -> list[str]:
    return sorted(os.listdir(tmp_path / "token-store"))


def test_a_restart_with_a_valid_stored_token_asks_the_idp_nothing(django_idp, upstream, start_relay, tmp_path):
    first = start_store_relay(start_relay, django_idp, upstream, store_at(tmp_path))
    token = whoami_sha(first)
    assert len(django_idp.token_requests()) == 1
    assert first.stop() == 0
    routes, options = store_relay_options(django_idp, upstream, store_at(tmp_path))
    second, admin = start_with_admin(start_relay, routes, **options)
    assert whoami_sha(second) == token
    assert len(django_idp.token_requests()) == 0 + 1, "the restarted relay asked the IdP"
    # Logged after the token is handed to the requests waiting for it: maybe after the answer.
    wait_for_log(second, "token read from store", 1)
    metrics = admin.scrape()
    assert metrics.value("oauth_relay_token_store_operations_total", identity="orders", operation="read", outcome="found") == 1, \
        metrics.summary()
    assert not metrics.samples("oauth_relay_token_store_operations_total", operation="write"), \
        "nothing new was obtained, so nothing was written"


def test_the_store_holds_no_token_in_the_clear_and_has_private_modes(django_idp, upstream, start_relay, tmp_path):
    relay = start_store_relay(start_relay, django_idp, upstream, store_at(tmp_path), client="legacy-pw")
    raw_token = bearer(relay.request("GET", "/echo/x"))
    directory = tmp_path / "token-store"
    assert oct(directory.stat().st_mode & 0o777) == "0o700"
    entry = directory / "identity-orders.token"
    assert oct(entry.stat().st_mode & 0o777) == "0o600"
    data = entry.read_bytes()
    assert raw_token.encode() not in data and b"eyJ" not in data
    for value in django_idp.sensitive_values().values():
        assert value.encode() not in data


def test_an_expired_stored_token_costs_exactly_one_refresh(start_django_idp, upstream, start_relay, tmp_path):
    idp = start_django_idp(access_token_seconds=6)
    first = start_store_relay(start_relay, idp, upstream, store_at(tmp_path), client="legacy-pw")
    whoami_sha(first)
    assert first.stop() == 0
    before = idp.token_requests()
    issued_refresh = before[-1]["issued_refresh_token_sha256"]
    time.sleep(6.5)  # the stored access token expires (the IdP's lifetime, not a race)
    second = start_store_relay(start_relay, idp, upstream, store_at(tmp_path), client="legacy-pw")
    whoami_sha(second)
    new = idp.token_requests()[len(before):]
    assert [r["grant_type"] for r in new] == ["refresh_token"], new
    assert new[0]["refresh_token_sha256"] == issued_refresh
    assert new[0]["status"] == 200


def test_two_relays_and_the_token_command_on_one_store_refresh_once_per_lifetime_and_keep_the_refresh_token(
        start_django_idp, upstream, start_relay, tmp_path, sensitive):
    lifetime = 4
    idp = start_django_idp(access_token_seconds=lifetime, rotate_refresh_token=True)
    relays = [start_store_relay(start_relay, idp, upstream, store_at(tmp_path), client="legacy-pw") for _ in range(2)]
    path = token_command_config(tmp_path / "token-command.json", upstream, {"orders": idp.identity("legacy-pw")},
                                store=store_at(tmp_path))
    duration = 60  # issue 12: a minute of rotating refreshes, about 30 of them
    started = time.monotonic()
    statuses, commands = [], []
    # Bounded in count too: a round (two requests and a command) starts a process, which takes
    # more than 3 ms, so the minute is over before 20,000 rounds (a round took about 15 ms here).
    for _ in range(20_000):
        if time.monotonic() - started >= duration:
            break
        for relay in relays:
            statuses.append(relay.request("GET", "/echo/x").status)
        # A third process on the same store: `oauth-relay token` in a loop.
        commands.append(run_token_command(path, "orders", sensitive).returncode)
    elapsed = time.monotonic() - started
    records = idp.token_requests()
    assert elapsed >= duration, f"the rounds ran out after {elapsed:.0f} s"
    assert all(record["status"] == 200 for record in records), [(r["grant_type"], r["status"]) for r in records]
    assert [r["grant_type"] for r in records].count("password") == 1, "the second relay fetched its own token"
    refreshes = [r for r in records if r["grant_type"] == "refresh_token"]
    # Each refresh used the refresh token the previous grant issued: none was lost or reused.
    chain = [r["issued_refresh_token_sha256"] for r in records]
    for previous, refresh in zip(chain, refreshes):
        assert refresh["refresh_token_sha256"] == previous
    # About one per lifetime (refreshed at half of it here), not one per relay: counted over the time
    # the rounds really took (the last command may end a while after the minute).
    due = elapsed / (lifetime / 2)
    assert due - 3 <= len(refreshes) <= due + 1, (len(refreshes), elapsed)
    assert set(statuses) == {200}
    assert set(commands) == {0}
    for relay in relays:
        whoami_sha(relay)


def test_a_corrupt_entry_is_moved_aside_and_the_relay_carries_on(django_idp, upstream, start_relay, tmp_path):
    first = start_store_relay(start_relay, django_idp, upstream, store_at(tmp_path))
    whoami_sha(first)
    assert first.stop() == 0
    entry = tmp_path / "token-store" / "identity-orders.token"
    data = bytearray(entry.read_bytes())
    data[-5] ^= 0xFF
    entry.write_bytes(bytes(data))
    second = start_store_relay(start_relay, django_idp, upstream, store_at(tmp_path))
    whoami_sha(second)
    assert len(django_idp.token_requests()) == 2
    moved = [name for name in entry_files(tmp_path) if name.startswith("identity-orders.token.corrupt-")]
    assert len(moved) == 1, entry_files(tmp_path)
    assert second.log().count("token store entry moved aside") == 1
    assert "identity-orders.token" in entry_files(tmp_path), "the new token was not written"


def test_a_wrong_key_is_a_clear_start_up_error(django_idp, upstream, start_relay, tmp_path):
    first = start_store_relay(start_relay, django_idp, upstream, store_at(tmp_path))
    whoami_sha(first)
    assert first.stop() == 0
    config = relay_config(f"127.0.0.1:{free_port()}", [oauth_route(upstream, "/", "orders")],
                          identities={"orders": django_idp.identity("orders-cc")}, store=store_at(tmp_path, OTHER_KEY))
    result = run_cli("run", "--config", str(write_config(tmp_path / "wrong-key.json", config)), timeout=10)
    assert result.returncode == 1
    assert "written with another key" in result.stderr and str(tmp_path / "token-store") in result.stderr, result.stderr
    assert OTHER_KEY not in result.stderr and STORE_KEY not in result.stderr
    assert entry_files(tmp_path) == ["identity-orders.lock", "identity-orders.token"], "nothing may be moved aside"


def test_token_command_answers_from_the_store_without_asking_the_idp(django_idp, upstream, start_relay, tmp_path, sensitive):
    relay = start_store_relay(start_relay, django_idp, upstream, store_at(tmp_path))
    token = whoami_sha(relay)
    path = token_command_config(tmp_path / "token-command.json", upstream, {"orders": django_idp.identity("orders-cc")},
                                store=store_at(tmp_path))
    for _ in range(5):
        result = run_token_command(path, "orders", sensitive)
        assert result.returncode == 0, result.stderr[-2000:]
        assert sha256(result.stdout.strip()) == token
    assert len(django_idp.token_requests()) == 1


def test_delete_token_removes_the_entry(django_idp, upstream, start_relay, tmp_path):
    routes, options = store_relay_options(django_idp, upstream, store_at(tmp_path))
    relay, admin = start_with_admin(start_relay, routes, **options)
    before = whoami_sha(relay)
    assert admin.request("DELETE", "/identities/orders/token").status == 204
    after = whoami_sha(relay)
    assert after != before
    # The entry now holds the new token: a restart uses it, not the forgotten one.
    assert relay.stop() == 0
    second = start_store_relay(start_relay, django_idp, upstream, store_at(tmp_path))
    assert whoami_sha(second) == after
    assert len(django_idp.token_requests()) == 2


def open_entry(path, name: str, key: str = STORE_KEY) -> bytes:
    """Decrypts an entry the way the relay does (StoreEntry.swift's layout), with its own
    header's fingerprint: raises unless it is whole and authentic."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    data = path.read_bytes()
    assert data[:5] == b"ORTS\x01", data[:5]
    fingerprint = data[13:45]
    associated = b"oauth-relay token store\x00\x01" + len(name).to_bytes(2, "big") + name.encode() + fingerprint
    return AESGCM(base64.b64decode(key)).decrypt(data[45:57], data[57:], associated)


def test_a_relay_killed_at_random_moments_leaves_every_entry_whole(stub_idp, upstream, start_relay, tmp_path):
    """kill -9 while eight identities rewrite their entries about once a second each: after every
    kill each entry still opens (the old or the new one), and nothing needed moving aside."""
    stub_idp.script(default={"kind": "token", "expires_in": 1, "refresh_token": "new"})
    names = [f"id{i}" for i in range(8)]
    identities = {name: stub_idp.identity() for name in names}
    routes = [oauth_route(upstream, f"/{name}/", name) for name in names]
    rng = random.Random(12)
    directory = tmp_path / "token-store"
    for attempt in range(20):
        relay = start_relay(routes, identities=identities, store=store_at(tmp_path))
        # A random moment to kill at, not a wait for something: any moment must be safe.
        time.sleep(rng.uniform(0.05, 1.2))
        relay.kill()
        entries = [name for name in os.listdir(directory) if name.endswith(".token")]
        assert not [n for n in os.listdir(directory) if ".corrupt-" in n], f"attempt {attempt}: {os.listdir(directory)}"
        for entry in entries:
            open_entry(directory / entry, entry.removeprefix("identity-").removesuffix(".token"))
    assert len(entries) == len(names)
    final = start_relay(routes, identities=identities, store=store_at(tmp_path))
    for name in names:
        assert final.request("GET", f"/{name}/x").status == 200


def test_changing_the_store_takes_a_restart(django_idp, upstream, start_relay, tmp_path):
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "orders")],
                                    identities={"orders": django_idp.identity("orders-cc")}, store=store_at(tmp_path))
    bearer(relay.request("GET", "/x"))
    rewrite(relay, store={"path": str(tmp_path / "elsewhere"), "key": OTHER_KEY})
    errors = admin.reload_rejected()
    # The key alone may change (test_key_file_rotation.py); moving the store may not.
    assert sorted(error.split(":")[0] for error in errors) == ["$.store.path"], errors
    assert OTHER_KEY not in " ".join(errors) and STORE_KEY not in " ".join(errors)
    assert not (tmp_path / "elsewhere").exists()
    assert relay.request("GET", "/y").status == 200
