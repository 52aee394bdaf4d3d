"""Replicas sharing tokens through a Redis Cluster (issue 27), with the real binary, three
redis-server masters joined by `redis-cli --cluster create` and django-oauth-toolkit: one token
request per identity for the fleet whichever node holds its keys, the entries' channel heard on
every node (Redis Cluster carries a PUBLISH to every node's subscribers), a logout reaching a
replica subscribed on another node, and a slot moved under load (ASK while it migrates, MOVED once
it has) failing no request.
"""

from __future__ import annotations

import secrets
import subprocess
import threading
import time
from contextlib import ExitStack

import pytest

from admin_client import start_with_admin, wait_for_log
from deadlines import scaled, wait_until
from idp_relay import bearer, burst, oauth_route, run_token_command, token_command_config
from login_relay import approved_token
from processes import LOOPBACK, STORE_KEY
from redis_cluster import RedisCluster, stat
from test_fleet_redis import STORE_TIMEOUT_MS, Traffic, messages

pytestmark = pytest.mark.oauth

PREFIX = "oauth-relay:"
CHANNEL = PREFIX + "written"


@pytest.fixture
def cluster(tmp_path, sensitive):
    """Three masters requiring one password (so every node a relay finds goes through AUTH)."""
    started = RedisCluster(tmp_path / "cluster", password=sensitive.add("redis password", secrets.token_hex(16)))
    try:
        yield started.start()
    finally:
        started.kill()


def cluster_store(cluster, first: int = 0) -> dict:
    return {"redis": cluster.url(first), "key": STORE_KEY, "timeoutMilliseconds": STORE_TIMEOUT_MS}


def entry_of(cluster, identity: str) -> tuple[str, object]:
    """The entry key of `identity` and the node holding it (waits, bounded, for it to be written)."""
    def found():
        for port, keys in cluster.keys().items():
            for key in keys:
                if key.startswith(f"{PREFIX}{{{identity}:") and key.endswith("}"):
                    return key, next(n for n in cluster.nodes if n.port == port)
        return None
    return wait_until(found, 5, f"the entry of {identity} written")


class Subscriber:
    """`redis-cli SUBSCRIBE` on one node: every message it hears, in a list."""

    def __init__(self, node, password: str, channel: str):
        self.proc = subprocess.Popen(["redis-cli", "-h", LOOPBACK, "-p", str(node.port), "--no-auth-warning", "-a", password,
                                      "SUBSCRIBE", channel], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        wait_until(lambda: len(self.lines) >= 3, 5, "the subscription confirmed")  # subscribe, channel, 1

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.decode("latin-1").rstrip("\n"))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=scaled(5))
        self.thread.join(timeout=scaled(5))


IDENTITIES = ["orders", "billing", "stock", "ledger", "audit", "payroll"]


def start_cluster_fleet(start_relay, idp, upstream, cluster, firsts=(0, 1), clients: dict | None = None) -> list:
    """One relay per entry of `firsts` (the seed it names first), all with the identities `clients`
    names (name -> IdP client; by default IDENTITIES, all of client orders-cc) on routes /NAME/."""
    clients = clients or {name: "orders-cc" for name in IDENTITIES}
    routes = [oauth_route(upstream, f"/{name}/", name) for name in clients]
    identities = {name: idp.identity(client) for name, client in clients.items()}
    return [start_relay(routes, identities=identities, store=cluster_store(cluster, first)) for first in firsts]


def test_a_fleet_on_a_cluster_makes_one_token_request_per_identity_whichever_node_holds_it(
        cluster, django_idp, upstream, start_relay):
    subscriber = Subscriber(cluster.nodes[2], cluster.password, CHANNEL)
    try:
        # The IdP holds token requests: the first replica's fetches are under way when the second
        # starts, so the second waits on leases and hears of the writes on the channel.
        django_idp.hold(1500)
        fleet = start_cluster_fleet(start_relay, django_idp, upstream, cluster, firsts=(0, 1))
        answers: dict[tuple[int, str], list] = {}

        def one(index: int, name: str) -> None:
            answers[(index, name)] = burst(fleet[index], 10, f"/{name}/x", timeout=30)

        threads = [threading.Thread(target=one, args=(i, n)) for i in range(len(fleet)) for n in IDENTITIES]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=scaled(60))
        assert len(answers) == len(threads), "a burst did not finish"
        assert all(r.status == 200 for replica in answers.values() for r in replica)
        for name in IDENTITIES:
            assert len({bearer(r) for i in range(len(fleet)) for r in answers[(i, name)]}) == 1, f"{name}: two tokens"
        assert len(django_idp.token_requests()) == len(IDENTITIES), "a replica fetched a token of its own"
        wait_for_log(fleet[1], "token read from shared store", len(IDENTITIES))
        entries = {name: entry_of(cluster, name) for name in IDENTITIES}
        holders = {node.port for _, node in entries.values()}
        assert len(holders) >= 2, "every identity's keys landed on one node: the test proves no routing"
        for name, (key, node) in entries.items():
            assert cluster.slot_of(key) == cluster.slot_of(f"{key}:lease"), "entry and lease in two slots"
            assert cluster.owner(cluster.slot_of(key)) is node
        # One subscription on one node heard the writes of keys on every node.
        heard = set(subscriber.lines)
        assert all(key in heard for key, _ in entries.values()), [k for k, _ in entries.values() if k not in heard]
    finally:
        subscriber.close()


def test_a_logout_reaches_a_replica_subscribed_on_another_node(cluster, django_idp, upstream, start_relay):
    device = django_idp.identity("tv-device")

    def replica(first: int):
        relay, relay.admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "tv")], identities={"tv": device},
                                              store=cluster_store(cluster, first))
        return relay

    first = replica(0)
    answer = first.request("GET", "/x", headers=[("Accept", "application/json")])
    assert answer.status == 401, answer.body
    assert django_idp.approve_device(answer.json()["userCode"]) == "authorized"
    token = approved_token(first, timeout=15)
    _, holder = entry_of(cluster, "tv")
    # The second replica subscribes on a node that does not hold the entry (its first seed).
    elsewhere = next(i for i, n in enumerate(cluster.nodes) if n is not holder)
    second = replica(elsewhere)
    assert approved_token(second) == token
    wait_for_log(second, "login read from shared store", 1)
    assert first.admin.request("DELETE", "/identities/tv/token").status == 204

    def logged_out():
        answer = second.request("GET", "/x", headers=[("Accept", "application/json")])
        return answer.status == 401 and answer
    wait_until(logged_out, 5, "the replica subscribed elsewhere to drop the login")
    wait_for_log(second, "logged out through another replica", 1)
    assert all(keys == [] for keys in cluster.keys().values())


def test_a_slot_moved_under_load_fails_no_request_and_sharing_goes_on(
        cluster, start_django_idp, upstream, start_relay, tmp_path, sensitive):
    lifetime = 4
    idp = start_django_idp(access_token_seconds=lifetime)
    clients = {"orders": "orders-cc", "billing": "billing-cc"}
    names = list(clients)
    fleet = start_cluster_fleet(start_relay, idp, upstream, cluster, firsts=(0, 1), clients=clients)
    traffics = [Traffic(fleet, f"/{name}/x") for name in names]
    with ExitStack() as running:
        for traffic in traffics:
            running.enter_context(traffic)
        time.sleep(lifetime)  # shared refreshes under load
        key, source = entry_of(cluster, "orders")
        slot = cluster.slot_of(key)
        target = next(n for n in cluster.nodes if n is not source)
        cluster.begin_migration(slot, source, target)
        # While the slot migrates its keys are on the target: the source answers ASK for them. A
        # reader started now (`oauth-relay token`) finds the entry there; the relays' reads too.
        path = token_command_config(tmp_path / "token-command.json", upstream, {"orders": idp.identity("orders-cc")},
                                    store=cluster_store(cluster))
        result = run_token_command(path, "orders", sensitive)
        assert result.returncode == 0, result.stderr[-2000:]
        time.sleep(1)  # the migration stays open a second under traffic
        cluster.finish_migration(slot, target)
        # The relays' slot maps still name the source: it answers MOVED, and they go to the target.
        finished = len(idp.token_requests())
        time.sleep(2 * lifetime)
        after = idp.token_requests()[finished:]
    failed = [f for traffic in traffics for f in traffic.failed()]
    assert not failed, failed[:5]
    assert stat(source, "errorstats", "errorstat_ASK", "count") >= 1, "no ASK was answered"
    assert stat(target, "commandstats", "cmdstat_asking", "calls") >= 1, "no ASKING followed an ASK"
    assert stat(source, "errorstats", "errorstat_MOVED", "count") >= 1, "no MOVED was answered"
    # Shared still: about one token request per half lifetime for the fleet, not one per replica,
    # for the identity moved as for the other.
    for name, client in clients.items():
        requests = [r for r in after if r["client_id"] == idp.identity(client)["clientId"]]
        assert 2 <= len(requests) <= 2 * lifetime / (lifetime / 2) + 1, (name, len(requests))
    assert entry_of(cluster, "orders")[1] is target
    # No outage and no refused command: a TRYAGAIN while the slot moved was asked again, not given up.
    for relay in fleet:
        assert messages(relay, "shared token store unavailable; each replica fetches its own tokens until it is back") == 0
        assert messages(relay, "shared token store refused a command; each replica fetches its own tokens until it works") == 0
