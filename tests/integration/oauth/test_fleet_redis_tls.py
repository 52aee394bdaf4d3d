"""Replicas sharing tokens through Redis over TLS (issue 27: `rediss://` and `store.tls`), with the
real binary, Debian's redis-server serving TLS only (`--port 0 --tls-port P`) with a certificate of
the TLS tests' PKI (../tls/tls_pki.py), and django-oauth-toolkit counting token requests.

Two relays share one token through it (one IdP call); a Redis whose certificate comes from another
CA, or names another host, is refused with the reason in the log (naming no secret) and the relays
serve on alone; a Redis that requires client certificates (`--tls-auth-clients yes`) takes the
relay's `store.tls.clientCert` and refuses a relay without one. With `rediss-sentinel://` the
relays ask a sentinel that serves TLS only for the master, and reach that master over TLS too.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from admin_client import log_records, wait_for_log
from idp_relay import bearer, oauth_route
from deadlines import scaled, wait_until
from processes import LOOPBACK, STORE_KEY
from redis_cluster import cluster_port
from redis_server import RedisServer, SentinelServer

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "tls") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "tls"))
from tls_pki import TestPKI  # noqa: E402

pytestmark = pytest.mark.oauth

STORE_TIMEOUT_MS = 2000
CONNECTED = "shared token store connected"
UNAVAILABLE = "shared token store unavailable; each replica fetches its own tokens until it is back"


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> TestPKI:
    return TestPKI(tmp_path_factory.mktemp("redis-tls-pki"))


class TLSRedis(RedisServer):
    """redis-server on a TLS port only, presenting `leaf` (a CertKey of the PKI), trusting the
    PKI's CA for client certificates, and requiring them with `client_certificates`."""

    name = "redis-server (TLS)"

    def __init__(self, workdir: Path, password: str, pki: TestPKI, kind: str, client_certificates: bool,
                 options: tuple[str, ...] = ()):
        super().__init__(workdir, password=password, options=options)
        self.pki = pki
        self.issuer = pki.issuer(kind)
        self.leaf = pki.leaf(kind)
        self.client_certificates = client_certificates

    def start(self) -> "TLSRedis":
        # Built here, so that a port chosen after construction (a cluster node's) is the one served.
        # The last --port wins: no plain port at all.
        tls = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(self.leaf.cert),
               "--tls-key-file", str(self.leaf.key), "--tls-ca-cert-file", str(self.pki.ca.cert),
               "--tls-auth-clients", "yes" if self.client_certificates else "no"]
        self.options = [*self.options, *tls]
        super().start()
        return self

    @property
    def url(self) -> str:
        return f"rediss://:{self.password}@{LOOPBACK}:{self.port}/0"

    def tls_cli(self) -> list[str]:
        """redis-cli and its TLS options: trusting the server certificate's issuer, with the PKI's
        client certificate (accepted with or without requiring it)."""
        return ["redis-cli", "--tls", "--cacert", str(self.issuer.cert), "--cert", str(self.pki.client.cert),
                "--key", str(self.pki.client.key)]

    def cli(self, *args: str) -> str:
        # redis-cli over TLS, trusting the server certificate's issuer, with the client certificate
        # (accepted with or without requiring it).
        command = [*self.tls_cli(), "-h", LOOPBACK, "-p", str(self.port), "--no-auth-warning", "-a", self.password]
        result = subprocess.run([*command, *args], capture_output=True, timeout=10)
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        return result.stdout.decode("latin-1")


@pytest.fixture
def start_tls_redis(tmp_path, sensitive, pki):
    started: list[TLSRedis] = []

    def start(leaf: str = "server", client_certificates: bool = False) -> TLSRedis:
        workdir = tmp_path / f"redis-tls-{len(started)}"
        workdir.mkdir()
        password = sensitive.add(f"redis password {len(started)}", secrets.token_hex(16))
        server = TLSRedis(workdir, password, pki, leaf, client_certificates)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.kill()


def tls_store(redis: TLSRedis, **tls) -> dict:
    return {"redis": redis.url, "key": STORE_KEY, "timeoutMilliseconds": STORE_TIMEOUT_MS, "tls": tls}


def start_fleet(start_relay, idp, upstream, store: dict, replicas: int = 2) -> list:
    routes = [oauth_route(upstream, "/echo/", "orders")]
    return [start_relay(routes, identities={"orders": idp.identity("orders-cc")}, store=store) for _ in range(replicas)]


def test_two_relays_share_one_token_through_redis_over_tls(start_tls_redis, pki, django_idp, upstream, start_relay):
    redis = start_tls_redis()
    store = tls_store(redis, caFile=str(pki.ca.cert), trust="caFileOnly")
    first, second = start_fleet(start_relay, django_idp, upstream, store)
    for relay in (first, second):
        connected = wait_for_log(relay, CONNECTED, 1)
        assert connected["redis"] == f"rediss://:…@{LOOPBACK}:{redis.port}/0", connected
    token = bearer(first.request("GET", "/echo/x"))
    assert bearer(second.request("GET", "/echo/x")) == token
    assert len(django_idp.token_requests()) == 1
    wait_for_log(second, "token read from shared store", 1)
    # The entry went over TLS into this Redis: one hash under the prefix.
    keys = [k for k in redis.cli("--scan").splitlines() if k]
    assert len(keys) == 1 and keys[0].startswith("oauth-relay:orders:"), keys
    assert not log_records(first, UNAVAILABLE) and not log_records(second, UNAVAILABLE)


@pytest.mark.parametrize("leaf, reason", [
    ("other_ca", "certificate not trusted (unknown CA)"),
    ("wrong_name", "certificate is not valid for \"127.0.0.1\" (name mismatch)"),
])
def test_a_redis_certificate_the_relay_does_not_accept_is_refused_and_each_relay_fetches_alone(
        start_tls_redis, pki, django_idp, upstream, start_relay, leaf, reason):
    redis = start_tls_redis(leaf)
    store = tls_store(redis, caFile=str(pki.ca.cert), trust="caFileOnly")
    fleet = start_fleet(start_relay, django_idp, upstream, store)
    for relay in fleet:
        record = wait_for_log(relay, UNAVAILABLE, 1)
        assert record["error"].startswith(f"unreachable: {LOOPBACK}:{redis.port}: TLS: {reason}"), record
        assert record["redis"] == f"rediss://:…@{LOOPBACK}:{redis.port}/0", record
    # Degraded mode: every relay serves, each with a token of its own.
    tokens = set()
    for relay in fleet:
        answer = relay.request("GET", "/echo/x")
        assert answer.status == 200
        tokens.add(bearer(answer))
    assert len(tokens) == 2 and len(django_idp.token_requests()) == 2
    assert all(not log_records(relay, CONNECTED) for relay in fleet)
    # Nothing was written through the refused connection.
    assert redis.cli("DBSIZE").strip() == "0"


def test_a_redis_that_requires_client_certificates_takes_the_relays_and_refuses_a_relay_without(
        start_tls_redis, pki, django_idp, upstream, start_relay):
    redis = start_tls_redis(client_certificates=True)
    trusted = {"caFile": str(pki.ca.cert), "trust": "caFileOnly"}
    (with_certificate,) = start_fleet(start_relay, django_idp, upstream,
                                      tls_store(redis, **trusted, clientCert=str(pki.client.cert), clientKey=str(pki.client.key)),
                                      replicas=1)
    (without,) = start_fleet(start_relay, django_idp, upstream, tls_store(redis, **trusted), replicas=1)
    wait_for_log(with_certificate, CONNECTED, 1)
    record = wait_for_log(without, UNAVAILABLE, 1)
    # Under TLS 1.3 the server refuses after the client's side of the handshake: a TLS alert
    # then ends the connection, during the opening.
    assert record["error"].startswith("connection closed: TLS: ") and record["error"].endswith("certificate required"), record
    assert not log_records(without, CONNECTED)
    token = bearer(with_certificate.request("GET", "/echo/x"))
    assert without.request("GET", "/echo/x").status == 200
    # The relay with its certificate shared its token; the other fetched its own.
    assert len(django_idp.token_requests()) == 2
    assert len([k for k in redis.cli("--scan").splitlines() if k]) == 1
    assert token


class TLSSentinel(SentinelServer):
    """redis-sentinel on a TLS port only, with the PKI's server certificate, monitoring a TLS
    master over TLS (`tls-replication yes`)."""

    name = "redis-sentinel (TLS)"

    def __init__(self, workdir: Path, master: TLSRedis, pki: TestPKI):
        super().__init__(workdir, master.port, quorum=1, password=master.password, down_after_ms=60_000)
        leaf = pki.leaf("server")
        tls = [f"tls-port {self.port}", "port 0", f"tls-cert-file {leaf.cert}", f"tls-key-file {leaf.key}",
               f"tls-ca-cert-file {pki.ca.cert}", "tls-auth-clients no", "tls-replication yes"]
        lines = [line for line in self.config.read_text().splitlines() if line != f"port {self.port}"]
        self.config.write_text("\n".join(tls + lines) + "\n")


def test_two_relays_share_one_token_through_a_tls_sentinel_and_its_tls_master(
        start_tls_redis, pki, tmp_path, django_idp, upstream, start_relay):
    master = start_tls_redis()
    workdir = tmp_path / "sentinel-tls"
    workdir.mkdir()
    sentinel = TLSSentinel(workdir, master, pki).start()
    try:
        url = f"rediss-sentinel://:{master.password}@{LOOPBACK}:{sentinel.port}/{sentinel.master_name}/0"
        store = {"redis": url, "key": STORE_KEY, "timeoutMilliseconds": STORE_TIMEOUT_MS,
                 "tls": {"caFile": str(pki.ca.cert), "trust": "caFileOnly"}}
        first, second = start_fleet(start_relay, django_idp, upstream, store)
        for relay in (first, second):
            connected = wait_for_log(relay, CONNECTED, 1)
            assert connected["redis"] == f"rediss-sentinel://:…@{LOOPBACK}:{sentinel.port}/{sentinel.master_name}/0", connected
            assert connected["master"] == f"{LOOPBACK}:{master.port}", connected
        token = bearer(first.request("GET", "/echo/x"))
        assert bearer(second.request("GET", "/echo/x")) == token
        assert len(django_idp.token_requests()) == 1
        keys = [k for k in master.cli("--scan").splitlines() if k]
        assert len(keys) == 1 and keys[0].startswith("oauth-relay:orders:"), keys
        assert not log_records(first, UNAVAILABLE) and not log_records(second, UNAVAILABLE)
    finally:
        sentinel.kill()


def test_two_relays_share_tokens_through_a_tls_cluster_on_every_node_of_its_slot_map(
        tmp_path, sensitive, pki, django_idp, upstream, start_relay):
    password = sensitive.add("redis cluster password", secrets.token_hex(16))
    nodes: list[TLSRedis] = []
    try:
        for index in range(3):
            workdir = tmp_path / f"cluster-tls-{index}"
            workdir.mkdir()
            node = TLSRedis(workdir, password, pki, "server", client_certificates=False,
                            options=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                     "--tls-cluster", "yes", "--tls-replication", "yes",
                                     # The bus requires a client certificate of the nodes it meets.
                                     "--tls-client-cert-file", str(pki.client.cert),
                                     "--tls-client-key-file", str(pki.client.key)))
            node.port = cluster_port()
            nodes.append(node.start())
        created = subprocess.run([*nodes[0].tls_cli(), "--no-auth-warning", "-a", password, "--cluster", "create",
                                  *[f"{LOOPBACK}:{n.port}" for n in nodes], "--cluster-replicas", "0", "--cluster-yes"],
                                 capture_output=True, timeout=scaled(30))
        assert created.returncode == 0, created.stdout.decode(errors="replace")[-2000:]
        wait_until(lambda: all("cluster_state:ok" in n.cli("CLUSTER", "INFO") for n in nodes), 20, "the cluster ready")
        # The first node alone is the seed: the others are reached as the slot map names them.
        store = {"redis": f"rediss-cluster://:{password}@{LOOPBACK}:{nodes[0].port}", "key": STORE_KEY,
                 "timeoutMilliseconds": STORE_TIMEOUT_MS, "tls": {"caFile": str(pki.ca.cert), "trust": "caFileOnly"}}
        # Ten identities: their keys land on more than the seed (all ten on one node: 3^-9).
        names = [f"team{index}" for index in range(10)]
        routes = [oauth_route(upstream, f"/{name}/", name) for name in names]
        identities = {name: django_idp.identity("orders-cc") for name in names}
        fleet = [start_relay(routes, identities=identities, store=store) for _ in range(2)]
        for relay in fleet:
            connected = wait_for_log(relay, CONNECTED, 1)
            assert connected["redis"] == f"rediss-cluster://:…@{LOOPBACK}:{nodes[0].port}", connected
        for name in names:
            token = bearer(fleet[0].request("GET", f"/{name}/x"))
            assert bearer(fleet[1].request("GET", f"/{name}/x")) == token, name
        assert len(django_idp.token_requests()) == len(names)
        holders = [n for n in nodes if [k for k in n.cli("--scan").splitlines() if k]]
        assert len(holders) >= 2 and any(n is not nodes[0] for n in holders), [n.port for n in holders]
        assert not any(log_records(relay, UNAVAILABLE) for relay in fleet)
    finally:
        for node in nodes:
            node.kill()
