"""Key files rotated under a running relay, with no SIGHUP (`limits.credentialFilePollSeconds`: 1 s
here): the relay notices the change and re-applies its configuration with the files read anew.

- `dpop.keyFile`: a new key is a changed identity, so the next request waits for a token bound to
  the new key (`cnf.jkt`), and every proof is signed with the key its token is bound to. Checked
  by the DPoP resource server (dpop_resource_server.py, jwcrypto) while requests flow: none fails,
  none carries a proof that does not match its token.
- `store.keyFile`: the new key writes; the entries under the old one are sealed again under the
  new key at once (under their locks), so a restart with the new key alone still reads the token,
  and no token request is made for the rotation. In Redis (`store.redis`), an entry written under
  the previous key is still read: an identity a reload restarts after the rotation takes it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from admin_client import log_records, rewrite, start_with_admin, wait_for_log
from deadlines import scaled, wait_until
from file_rotation import CredentialFiles
from idp_relay import oauth_route
from key_files import pem, thumbprint
from redis_server import RedisServer

pytestmark = pytest.mark.oauth

POLL = {"credentialFilePollSeconds": 1}
RESEALED = "token store key rotated; entries sealed again under the new key"
ROTATED_SHARED = "token store key rotated; entries under the previous key are still read until they are written again"


def key_pem(sensitive, key, label: str) -> bytes:
    text = pem(key, True)
    sensitive.add(label, "".join(text.splitlines()[1:-1]))
    return text.encode()


def file_triggers(relay) -> list[str]:
    return [r["trigger"] for r in log_records(relay, "configuration reloaded") if r.get("trigger", "").startswith("file changed: ")]


class Requests:
    """GET requests one after the other through `relay` on a thread until stopped; the status of each,
    and every failure (an exception, a status other than 200)."""

    def __init__(self, relay, prefix: str):
        self.relay, self.prefix = relay, prefix
        self.statuses: list[int] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Requests":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=scaled(20))
        assert not self._thread.is_alive(), "the request thread did not stop"

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            n += 1
            try:
                resp = self.relay.request("GET", f"{self.prefix}{n}", timeout=scaled(10))
                self.statuses.append(resp.status)
                if resp.status != 200:
                    self.failures.append(f"{resp.status}: {resp.body[:300]!r}")
            except Exception as e:  # noqa: BLE001 - every failure counts
                self.failures.append(f"{type(e).__name__}: {e}")

    def wait_for_more(self, count: int = 5) -> None:
        seen = len(self.statuses)
        wait_until(lambda: len(self.statuses) >= seen + count, 15, f"{count} more requests")


# ---------------------------------------------------------------------------------------------
# dpop.keyFile

@pytest.mark.parametrize("style", ["kubernetes", "in_place"])
def test_a_rotated_dpop_key_binds_the_next_token_and_signs_every_proof_after_it(style, stub_idp, dpop_rs, start_relay, tmp_path,
                                                                              sensitive):
    first, second = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    files = CredentialFiles(tmp_path / "dpop", style, {"dpop.pem": key_pem(sensitive, first, "first DPoP key")})
    stub_idp.script(dpop={"nonce": None})
    identity = stub_idp.identity(dpop={"keyFile": files.paths["dpop.pem"]})
    relay = start_relay([oauth_route(dpop_rs.url, "/", "svc")], identities={"svc": identity}, limits=POLL)
    assert relay.request("GET", "/before").status == 200
    with Requests(relay, "/flowing/") as flowing:
        flowing.wait_for_more()
        files.rotate({"dpop.pem": key_pem(sensitive, second, "second DPoP key")})
        wait_until(lambda: any(r.get("thumbprint") == thumbprint(second) for r in dpop_rs.requests(status=200)), 15,
                   "a request with a proof of the new key")
        flowing.wait_for_more()
    assert flowing.failures == [], flowing.failures[:5]
    records = dpop_rs.requests()
    # Only nonce challenges (answered by the relay at once) besides successes; no proof was refused.
    refused = [r for r in records if r["status"] != 200 and not r["reason"].startswith("use_dpop_nonce")]
    assert refused == [], refused[:5]
    served = [r["thumbprint"] for r in records if r["status"] == 200]
    switched = served.index(thumbprint(second))
    assert set(served[:switched]) == {thumbprint(first)}
    assert set(served[switched:]) == {thumbprint(second)}, "a proof of the old key after the new one was in force"
    # One token request per key, each proving that key (the stub binds its token to it: cnf.jkt).
    assert [r["dpop"]["header"]["thumbprint"] for r in stub_idp.token_requests()] == [thumbprint(first), thumbprint(second)]
    assert any("$.identities.svc.dpop.keyFile" in t for t in file_triggers(relay)), file_triggers(relay)


# ---------------------------------------------------------------------------------------------
# store.keyFile

def store_key() -> bytes:
    return base64.b64encode(secrets.token_bytes(32))


def key_id(key_text: bytes) -> bytes:
    """The key id a token store entry carries (bytes 5..13): HMAC-SHA256(key, label), 8 bytes."""
    return hmac.new(base64.b64decode(key_text), b"oauth-relay token store key id", hashlib.sha256).digest()[:8]


def test_a_rotated_store_key_seals_the_entries_again_and_a_restart_with_it_alone_reads_them(stub_idp, upstream, start_relay,
                                                                                          tmp_path, sensitive):
    old, new = store_key(), store_key()
    sensitive.add("old store key", old.decode())
    sensitive.add("new store key", new.decode())
    files = CredentialFiles(tmp_path / "store-key", "kubernetes", {"store.key": old})
    store = {"path": str(tmp_path / "store"), "keyFile": files.paths["store.key"]}
    entry = tmp_path / "store" / "identity-svc.token"
    options = {"identities": {"svc": stub_idp.identity()}, "store": store, "limits": POLL}
    relay = start_relay([oauth_route(upstream, "/", "svc")], **options)
    assert relay.request("GET", "/a").status == 200
    wait_until(lambda: entry.exists() and entry.read_bytes()[5:13] == key_id(old), 5, "the entry written under the old key")

    files.rotate({"store.key": new})
    record = wait_for_log(relay, RESEALED, 1, timeout=10)
    assert record["resealed"] == ["svc"] and record["busy"] == [] and record["unreadable"] == [], record
    assert entry.read_bytes()[5:13] == key_id(new)
    assert relay.request("GET", "/b").status == 200
    assert file_triggers(relay) == [f"file changed: $.store.keyFile {files.paths['store.key']}"]
    assert len(stub_idp.token_requests()) == 1, "the store key is no identity setting: the token stays"
    assert relay.stop() == 0

    restarted = start_relay([oauth_route(upstream, "/", "svc")], **options)
    assert restarted.request("GET", "/c").status == 200
    assert len(stub_idp.token_requests()) == 1, "the restart with the new key alone read the resealed token"


@pytest.fixture
def redis(tmp_path, sensitive):
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = RedisServer(workdir, password=sensitive.add("redis password", secrets.token_hex(16))).start()
    yield server
    server.kill()


def test_a_shared_entry_written_under_the_previous_store_key_is_still_read(redis, stub_idp, upstream, start_relay, tmp_path,
                                                                          sensitive):
    old, new = store_key(), store_key()
    sensitive.add("old store key", old.decode())
    sensitive.add("new store key", new.decode())
    files = CredentialFiles(tmp_path / "store-key", "kubernetes", {"store.key": old})
    store = {"redis": redis.url, "keyFile": files.paths["store.key"], "timeoutMilliseconds": int(scaled(2000))}
    identity = stub_idp.identity(headers={"X-Relay-Config": "one"})
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "svc")], identities={"svc": identity},
                                    store=store, limits=POLL)
    first = relay.request("GET", "/a")
    assert first.status == 200
    wait_until(lambda: redis.dump(), 5, "the shared entry written")
    files.rotate({"store.key": new})
    wait_for_log(relay, ROTATED_SHARED, 1, timeout=10)
    # A reload that changes the identity (a header no stored setting depends on) restarts it: its
    # fetch reads the shared entry, written under the previous key, and takes its token.
    rewrite(relay, identities={"svc": {**identity, "headers": {"X-Relay-Config": "two"}}})
    assert admin.reload_applied()["identities"]["started"] == ["svc"]
    second = relay.request("GET", "/b")
    assert second.status == 200
    assert second.echo_headers("Authorization") == first.echo_headers("Authorization")
    assert len(stub_idp.token_requests()) == 1, "the entry under the previous key was not read"
    assert log_records(relay, "shared token store entry unreadable; it is replaced by the next token obtained") == []
