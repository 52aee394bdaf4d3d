"""A Redis Cluster for the fleet tests: three redis-server masters on loopback ports (each with its
own directory and nodes file, nothing persisted), joined by `redis-cli --cluster create` with no
replicas, all requiring one password. And the moves of a slot from one master to another, in the
steps `redis-cli --cluster reshard` takes, so a test can hold the migration open in between
(ASK) and finish it (MOVED).
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from deadlines import scaled, wait_until
from processes import LOOPBACK, can_connect, free_port
from redis_server import RedisServer

BUS_PORT_OFFSET = 10000  # a node's cluster bus listens on its port + 10000


def cluster_port() -> int:
    """A free loopback port whose cluster bus port (port + 10000) is free too."""
    for _ in range(200):
        port = free_port()
        if port + BUS_PORT_OFFSET > 65535:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bus:
            try:
                bus.bind((LOOPBACK, port + BUS_PORT_OFFSET))
            except OSError:
                continue
        if not can_connect(LOOPBACK, port):
            return port
    raise AssertionError("no free port pair for a cluster node")


class RedisCluster:
    def __init__(self, workdir: Path, password: str, masters: int = 3):
        self.password = password
        self.nodes: list[RedisServer] = []
        for index in range(masters):
            nodedir = workdir / f"node-{index}"
            nodedir.mkdir(parents=True)
            node = RedisServer(nodedir, password=password,
                               options=("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                        "--cluster-node-timeout", "5000", "--masterauth", password))
            node.port = cluster_port()
            self.nodes.append(node)

    def url(self, first: int = 0) -> str:
        """`redis-cluster://:PASSWORD@…` naming every node, node `first` first (the seed a relay
        asks first, and so the node its subscription is on)."""
        order = self.nodes[first:] + self.nodes[:first]
        return f"redis-cluster://:{self.password}@" + ",".join(f"{LOOPBACK}:{n.port}" for n in order)

    def start(self) -> "RedisCluster":
        for node in self.nodes:
            node.start()
        command = ["redis-cli", "--no-auth-warning", "-a", self.password, "--cluster", "create",
                   *[f"{LOOPBACK}:{n.port}" for n in self.nodes], "--cluster-replicas", "0", "--cluster-yes"]
        created = subprocess.run(command, capture_output=True, timeout=scaled(30))
        assert created.returncode == 0, created.stdout.decode(errors="replace")[-2000:] + created.stderr.decode(errors="replace")
        self.wait_agreed()
        return self

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()

    def wait_agreed(self) -> None:
        """Waits (bounded) until every node says cluster_state:ok and all name the same slot owners."""
        def agreed():
            if not all("cluster_state:ok" in n.cli("CLUSTER", "INFO") for n in self.nodes):
                return False
            maps = {self._slots_of(n) for n in self.nodes}
            return len(maps) == 1
        wait_until(agreed, 20, "the cluster to agree on its slots")

    @staticmethod
    def _slots_of(node: RedisServer) -> str:
        lines = [line.split() for line in node.cli("CLUSTER", "NODES").splitlines() if line.strip()]
        return "\n".join(sorted(f"{parts[1].split('@')[0]} {' '.join(p for p in parts[8:] if not p.startswith('['))}"
                                for parts in lines if "master" in parts[2]))

    def node_id(self, node: RedisServer) -> str:
        return node.cli("CLUSTER", "MYID").strip()

    def slot_of(self, key: str) -> int:
        return int(self.nodes[0].cli("CLUSTER", "KEYSLOT", key))

    def owner(self, slot: int) -> RedisServer:
        """The master serving `slot`, as node 0 sees it."""
        for line in self.nodes[0].cli("CLUSTER", "NODES").splitlines():
            parts = line.split()
            if len(parts) < 9 or "master" not in parts[2]:
                continue
            for spec in parts[8:]:
                if spec.startswith("["):
                    continue
                first, _, last = spec.partition("-")
                if int(first) <= slot <= int(last or first):
                    port = int(parts[1].split("@")[0].rsplit(":", 1)[1])
                    return next(n for n in self.nodes if n.port == port)
        raise AssertionError(f"no master serves slot {slot}")

    def keys(self) -> dict[int, list[str]]:
        """Every key, by the port of the node holding it."""
        return {n.port: sorted(k for k in n.cli("--scan").splitlines() if k) for n in self.nodes}

    def begin_migration(self, slot: int, source: RedisServer, target: RedisServer) -> None:
        """`slot` marked importing on `target` and migrating on `source`, and its keys moved to
        `target` (MIGRATE): from now `source` answers ASK for them, until `finish_migration`."""
        assert target.cli("CLUSTER", "SETSLOT", str(slot), "IMPORTING", self.node_id(source)).strip() == "OK"
        assert source.cli("CLUSTER", "SETSLOT", str(slot), "MIGRATING", self.node_id(target)).strip() == "OK"
        keys = [k for k in source.cli("CLUSTER", "GETKEYSINSLOT", str(slot), "100").splitlines() if k]
        if keys:
            moved = source.cli("MIGRATE", LOOPBACK, str(target.port), "", "0", str(int(scaled(5000))),
                               "AUTH", self.password, "KEYS", *keys).strip()
            assert moved == "OK", moved

    def finish_migration(self, slot: int, target: RedisServer) -> None:
        """`slot` belongs to `target`, told to every master (target first, as redis-cli does): the
        others answer MOVED for it from now."""
        owner = self.node_id(target)
        for node in [target] + [n for n in self.nodes if n is not target]:
            assert node.cli("CLUSTER", "SETSLOT", str(slot), "NODE", owner).strip() == "OK"
        self.wait_agreed()


def stat(node: RedisServer, section: str, name: str, field: str) -> int:
    """A counter of `INFO section` (`commandstats`, `errorstats`): `name`'s `field`, 0 when absent."""
    for line in node.cli("INFO", section).splitlines():
        if line.startswith(name + ":"):
            for pair in line.split(":", 1)[1].split(","):
                key, _, value = pair.partition("=")
                if key == field:
                    return int(value)
    return 0
