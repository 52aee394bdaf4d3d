"""Replicas sharing tokens through a Sentinel-managed Redis (issue 27), with the real binary:
Debian's redis-server as a master and one replica (`--replicaof`), three redis-sentinel (quorum 2,
a master silent for 500 ms is down), relays with `store.redis` = `redis-sentinel://…`, and
django-oauth-toolkit rotating refresh tokens (token requests counted and chained at the IdP).

The master is killed under a request loop just after it took a refresh its replica never got: no
request fails, the relays follow the sentinels to the promoted replica, the lost entry is written
again, the fleet shares again (one IdP call per refresh) and no refresh token is lost (every
refresh presents the one the previous request issued). And a sentinel that names a
replica never has a relay write to it.
"""

from __future__ import annotations

import secrets
import time
from types import SimpleNamespace

import pytest

from admin_client import log_records, wait_for_log
from deadlines import scaled, wait_until
from processes import LOOPBACK, free_port
from redis_server import RedisServer, SentinelServer
from test_fleet_redis import RESUMED, UNAVAILABLE, Traffic, messages, shared_store, start_fleet

pytestmark = pytest.mark.oauth

MASTER_NAME = "relay-store"
SWITCHED = "shared token store: the sentinels promoted a new master; reconnecting to it"
REASSERTED = "shared token store: writing tokens this replica obtained while the store could not take them"


def data_node(tmp_path, name: str, password: str, *options: str) -> RedisServer:
    """A redis-server that requires `password` and uses it towards its master (once a replica)."""
    workdir = tmp_path / name
    workdir.mkdir()
    return RedisServer(workdir, password=password, options=("--masterauth", password, *options)).start()


def replica_of(tmp_path, master: RedisServer, *options: str) -> RedisServer:
    """A replica of `master`, once it has synced."""
    replica = data_node(tmp_path, "replica", master.password, "--replicaof", LOOPBACK, str(master.port), *options)
    wait_until(lambda: "master_link_status:up" in replica.cli("INFO", "replication"), 10, "the replica to sync")
    return replica


def sentinel(tmp_path, index: int, port: int, password: str, **options) -> SentinelServer:
    workdir = tmp_path / f"sentinel-{index}"
    workdir.mkdir()
    return SentinelServer(workdir, port, MASTER_NAME, password=password, **options).start()


@pytest.fixture
def sentinel_group(tmp_path, sensitive):
    """A master, its replica and three sentinels that know both and each other (what a failover
    needs: the sentinels find each other through the master's hello channel, every 2 s)."""
    password = sensitive.add("redis password", secrets.token_hex(16))
    master = data_node(tmp_path, "master", password)
    replica = replica_of(tmp_path, master)
    sentinels = [sentinel(tmp_path, index, master.port, password, quorum=2) for index in range(3)]
    wait_until(lambda: all(s.knows(replicas=1, sentinels=2) for s in sentinels), 15,
               "the sentinels to find the replica and each other")
    yield SimpleNamespace(master=master, replica=replica, sentinels=sentinels, password=password)
    for process in [*sentinels, replica, master]:
        process.kill()


def sentinel_url(password: str, sentinels: list, down: bool = False) -> str:
    """The URL naming `sentinels`; with `down`, first a sentinel that is not running (nothing
    listens on its port: each relay must skip it)."""
    hosts = ",".join(([f"{LOOPBACK}:{free_port()}"] if down else []) + [f"{LOOPBACK}:{s.port}" for s in sentinels])
    return f"redis-sentinel://:{password}@{hosts}/{MASTER_NAME}/0"


def role(server: RedisServer) -> str:
    return server.cli("ROLE").splitlines()[0]


def entry_version(server: RedisServer) -> str | None:
    """The version (`v`) of the one shared entry `server` holds, None without one."""
    keys = [key for key in server.cli("--scan").split() if not key.endswith(":lease")]
    return server.cli("HGET", keys[0], "v").strip() if keys else None


def test_the_master_killed_under_load_fails_no_request_and_the_fleet_shares_again_on_the_promoted_replica(
        sentinel_group, start_django_idp, upstream, start_relay):
    group = sentinel_group
    lifetime = 6  # refreshed every 3 s: the failover (about 2 s) fits between two refreshes
    idp = start_django_idp(access_token_seconds=lifetime, rotate_refresh_token=True)
    fleet = start_fleet(start_relay, idp, upstream, shared_store(sentinel_url(group.password, group.sentinels, down=True)),
                        replicas=2, client="legacy-pw", admin=True)
    with Traffic(fleet) as traffic:
        wait_until(lambda: idp.token_requests(grant_type="refresh_token"), 2 * lifetime, "a shared refresh")
        # The replica stops following the master (it can no longer log in to it), so the next
        # refresh is written to the master alone and WAIT finds no replica: the write a master
        # takes with it when it dies before replicating. The replica stays eligible for promotion
        # (its link has been down for less than ten times down-after-milliseconds).
        group.replica.cli("CONFIG", "SET", "masterauth", "not-the-password")
        group.replica.cli("CLIENT", "KILL", "TYPE", "master")
        wait_until(lambda: "master_link_status:down" in group.replica.cli("INFO", "replication"), 5, "the replica to lose its master")
        replicated = entry_version(group.replica)
        wait_until(lambda: entry_version(group.master) not in (None, replicated), 2 * lifetime, "a refresh written to the master alone")
        requests_at_kill = len(idp.token_requests())
        killed = time.monotonic()
        group.master.sigkill()
        wait_until(lambda: all(group.replica.port == s.master_port() for s in group.sentinels), 10,
                   "the sentinels to promote the replica")
        promoted = time.monotonic() - killed
        new_master = f"{LOOPBACK}:{group.replica.port}"
        wait_until(lambda: all(any(r.get("master") == new_master for r in log_records(relay, RESUMED)) for relay in fleet),
                   10, "every relay to share on the promoted replica")
        resumed = time.monotonic() - killed
        # The write the old master took with it is written again on the new one, at once: before
        # the next refresh (which would write a new entry anyway).
        wait_until(lambda: entry_version(group.replica) != replicated, 5, "the lost write written again")
        assert len(idp.token_requests()) == requests_at_kill, "written again by the next refresh, not at once"
        before = len(idp.token_requests())
        time.sleep(2 * lifetime)  # shared refreshes on the new master, under load
        after = idp.token_requests()[before:]
    print(f"\nfailover figures: sentinels promoted the replica {promoted:.2f} s after the kill; "
          f"every relay sharing again {resumed:.2f} s after it; {len(traffic.results)} requests, "
          f"{len(traffic.failed())} failed; longest pause {traffic.longest_pause():.2f} s")
    assert not traffic.failed(), traffic.failed()[:5]
    assert role(group.replica) == "master"
    for relay in fleet:
        assert messages(relay, SWITCHED) == 1, "the switch is followed from the sentinels' announcement"
        assert messages(relay, UNAVAILABLE) <= 1, "an outage is logged once"
    assert sum(messages(relay, REASSERTED) for relay in fleet) >= 1
    records = idp.token_requests()
    # No refresh token lost or reused: the IdP refused none, no relay went back to the password,
    # and each refresh presented the refresh token the request before it was issued.
    assert all(r["status"] == 200 for r in records), [(r["grant_type"], r["status"], r.get("error")) for r in records]
    assert [r["grant_type"] for r in records].count("password") == 1
    for previous, refresh in zip(records, records[1:]):
        assert refresh["refresh_token_sha256"] == previous["issued_refresh_token_sha256"]
    # Shared again: one refresh per half lifetime for the fleet, not one per relay.
    refreshes_after = [r for r in after if r["grant_type"] == "refresh_token"]
    assert 2 <= len(refreshes_after) <= 2 * lifetime / (lifetime / 2) + 1, len(refreshes_after)


def test_a_sentinel_naming_a_replica_is_never_written_to(tmp_path, sensitive, django_idp, upstream, start_relay):
    password = sensitive.add("redis password", secrets.token_hex(16))
    master = data_node(tmp_path, "master", password)
    # A replica that would take writes: only the relay's ROLE check keeps the entry off it.
    replica = replica_of(tmp_path, master, "--replica-read-only", "no")
    # A sentinel that monitors the replica as if it were the master (a stale answer): it names
    # the replica's address for as long as the test runs.
    stale = sentinel(tmp_path, 0, replica.port, password, quorum=1, down_after_ms=60_000)
    try:
        (relay,) = start_fleet(start_relay, django_idp, upstream, shared_store(sentinel_url(password, [stale])), replicas=1)
        assert relay.request("GET", "/echo/x").status == 200, "the relay serves without the store"
        record = wait_for_log(relay, UNAVAILABLE, 1)
        assert record["error"] == "refused: the sentinels named a server whose ROLE is slave, not master", record
        assert record["master"] == f"{LOOPBACK}:{replica.port}"
        assert relay.request("GET", "/echo/x").status == 200
        assert messages(relay, "shared token store connected") == 0
        assert replica.dump() == {} and master.dump() == {}, "nothing written"
    finally:
        stale.kill()
        replica.kill()
        master.kill()


def test_a_master_demoted_without_a_switch_is_left_at_its_first_readonly_answer(tmp_path, sensitive, start_django_idp,
                                                                               upstream, start_relay):
    password = sensitive.add("redis password", secrets.token_hex(16))
    master = data_node(tmp_path, "master", password)
    other = data_node(tmp_path, "other", password)
    # One sentinel that will never fail the master over (and so never announces a switch).
    watcher = sentinel(tmp_path, 0, master.port, password, quorum=1, down_after_ms=60_000)
    try:
        idp = start_django_idp(access_token_seconds=4)  # due again in 2 s
        (relay,) = start_fleet(start_relay, idp, upstream, shared_store(sentinel_url(password, [watcher])), replicas=1)
        assert relay.request("GET", "/echo/x").status == 200
        wait_until(lambda: entry_version(master), 5, "the entry written")
        # Demoted behind the sentinel's back: the relay hears of it only from the server's answer
        # to its next write (the lease of the next refresh).
        master.cli("REPLICAOF", LOOPBACK, str(other.port))
        # The outage begins there (a link up for less than a second), or at the sentinel's answer,
        # which still names the demoted server: its ROLE refuses it.
        record = wait_for_log(relay, UNAVAILABLE, 1, timeout=10)
        assert record["error"] in ("refused: the master became a replica (WAIT answered UNBLOCKED); asking the sentinels for the new master",
                                   "refused: the master became a replica (EVAL answered READONLY); asking the sentinels for the new master",
                                   "refused: the sentinels named a server whose ROLE is slave, not master"), record
        assert messages(relay, "shared token store refused a command; each replica fetches its own tokens until it works") == 0
        assert relay.request("GET", "/echo/x").status == 200
    finally:
        watcher.kill()
        other.kill()
        master.kill()
