"""Per-caller tokens shared by the fleet (issue 28, "Exchange on behalf of the caller"): relays
with `store.redis` and an identity with `subjectTokenFrom: "caller"` (RFC 8693) share each
caller's exchanged token through Redis, like any other token: one exchange per caller for the
fleet, under a key Redis cannot tie to the caller (neither the caller's token nor its SHA-256 is
ever sent to Redis), and a logout through one replica makes every replica exchange again.

Two relays (the real binary) share one Debian redis-server, started per test with a password. The
token endpoint is idp_stub.py, which records every request: each exchange is checked field by
field (grant type, subject token and its type, audience, client authentication, nothing else) and
counted per `subject_token`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import subprocess
import threading
import time
from urllib.parse import unquote_plus

import pytest

from admin_client import start_with_admin
from deadlines import scaled, wait_until
from idp_processes import form, header_values
from idp_relay import bearer, burst, oauth_route
from processes import LOOPBACK, STORE_KEY
from redis_server import RedisServer

pytestmark = pytest.mark.oauth

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
AUDIENCE = "orders-api"
STORE_TIMEOUT_MS = int(scaled(2000))


@pytest.fixture
def redis(tmp_path, sensitive):
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = RedisServer(workdir, password=sensitive.add("redis password", secrets.token_hex(16))).start()
    yield server
    server.kill()


def exchange_script(stub_idp, delay_ms: int = 0) -> None:
    """Token exchanges answered with a fresh token living an hour (after `delay_ms`)."""
    spec = {"kind": "token", "expires_in": 3600, "delay_ms": delay_ms}
    stub_idp.script(by_grant={TOKEN_EXCHANGE: spec})


def start_fleet(start_relay, stub_idp, upstream, redis, replicas: int = 2) -> list:
    """`replicas` relays alike, each with an admin listener (`relay.admin`): the per-caller identity
    `obo` on /echo/ and /status/, the shared store in `redis`."""
    identity = stub_idp.identity(grant=TOKEN_EXCHANGE, subjectTokenFrom="caller", audience=AUDIENCE)
    store = {"redis": redis.url, "key": STORE_KEY, "timeoutMilliseconds": STORE_TIMEOUT_MS}
    fleet = []
    for _ in range(replicas):
        relay, relay.admin = start_with_admin(start_relay, [oauth_route(upstream, "/echo/", "obo"),
                                                            oauth_route(upstream, "/status/", "obo")],
                                              identities={"obo": identity}, store=store)
        fleet.append(relay)
    return fleet


def new_caller(sensitive, label: str) -> str:
    """A caller's bearer token (opaque), which no relay log may show."""
    return sensitive.add(f"caller token {label}", "ct-" + secrets.token_urlsafe(32))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def as_caller(relay, caller: str, target: str = "/echo/x"):
    return relay.request("GET", target, headers=[("Authorization", f"Bearer {caller}")])


def exchanges(stub_idp, caller: str | None = None) -> list[dict]:
    """The token exchanges the stub received (of `caller`'s token), each verified field by field."""
    records = [r for r in stub_idp.token_requests() if r["grant_type"] == TOKEN_EXCHANGE]
    for record in records:
        assert_exchange_request(record, stub_idp)
    return [r for r in records if caller is None or form(r)["subject_token"] == [caller]]


def assert_exchange_request(record: dict, stub_idp) -> None:
    """Exactly RFC 8693 §2.1's form for this identity, with the client's Basic credentials."""
    assert record["method"] == "POST", record["method"]
    fields = form(record)
    subject = fields.get("subject_token", [])
    assert len(subject) == 1 and subject[0], "subject_token is not one caller's token"
    assert fields == {"grant_type": [TOKEN_EXCHANGE], "subject_token": subject, "subject_token_type": [ACCESS_TOKEN_TYPE],
                      "audience": [AUDIENCE]}, sorted(fields)
    (auth,) = header_values(record, "authorization")
    assert auth[:6] == "Basic ", "the client does not authenticate with Basic"
    client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
    assert (unquote_plus(client_id), unquote_plus(secret)) == (stub_idp.client_id, stub_idp.client_secret)
    assert record["status"] == 200, record["status"]


def issued(record: dict) -> str:
    return record["issued"]["access_token"]


def caller_entries(redis) -> list[str]:
    return [key for key in redis.cli("--scan").splitlines() if "/caller:" in key and not key.endswith(":lease")]


class Monitor:
    """`redis-cli MONITOR` while the block runs: every command Redis received, as it prints them."""

    def __init__(self, redis, path):
        self.redis = redis
        self.path = path

    def __enter__(self):
        command = ["redis-cli", "-h", LOOPBACK, "-p", str(self.redis.port), "--no-auth-warning", "-a", self.redis.password, "MONITOR"]
        self.output = open(self.path, "wb")
        self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self.output, stderr=subprocess.STDOUT)
        wait_until(lambda: self.path.read_bytes().startswith(b"OK"), 5, "redis-cli MONITOR to start")
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=scaled(10))
        self.output.close()
        self.text = self.path.read_bytes().decode("latin-1")


def test_a_callers_token_exchanged_through_one_replica_serves_the_other(redis, stub_idp, upstream, start_relay, sensitive):
    exchange_script(stub_idp)
    first, second = start_fleet(start_relay, stub_idp, upstream, redis)
    caller = new_caller(sensitive, "x")
    token = bearer(as_caller(first, caller))
    (record,) = exchanges(stub_idp, caller)
    assert token == issued(record), "the upstream did not receive the token exchanged for the caller"
    # The second replica's cache has no token for this caller: it reads the fleet's (or waits for
    # the first replica's write of it), and asks the IdP nothing.
    assert bearer(as_caller(second, caller)) == token
    assert bearer(as_caller(first, caller)) == token
    assert len(exchanges(stub_idp, caller)) == 1
    wait_until(lambda: len(caller_entries(redis)) == 1, 5, "the caller's entry written")

    # Another caller is exchanged once too, whichever replica sees it first.
    other = new_caller(sensitive, "y")
    other_token = bearer(as_caller(second, other))
    assert bearer(as_caller(first, other)) == other_token != token
    assert len(exchanges(stub_idp, other)) == 1
    assert len(exchanges(stub_idp)) == 2


def test_300_concurrent_requests_of_a_new_caller_over_both_replicas_make_one_exchange(redis, stub_idp, upstream, start_relay,
                                                                                       sensitive):
    # The exchange takes a second: every request arrives while it is under way.
    exchange_script(stub_idp, delay_ms=1000)
    fleet = start_fleet(start_relay, stub_idp, upstream, redis)
    caller = new_caller(sensitive, "concurrent")
    answers: list = [None, None]

    def one(index: int) -> None:
        answers[index] = burst(fleet[index], 150, "/echo/x", headers=[("Authorization", f"Bearer {caller}")], timeout=30)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=scaled(60))
    assert all(a is not None for a in answers), "a burst did not finish"
    responses = answers[0] + answers[1]
    assert [r.status for r in responses] == [200] * 300
    (record,) = exchanges(stub_idp, caller)
    assert {bearer(r) for r in responses} == {issued(record)}


def test_redis_never_sees_a_callers_token_nor_its_digest(redis, stub_idp, upstream, start_relay, sensitive, tmp_path):
    exchange_script(stub_idp)
    first, second = start_fleet(start_relay, stub_idp, upstream, redis)
    now = int(time.time())
    # A JWT-shaped caller with an `exp` two minutes away: its entry lives no longer than that.
    claims = base64.urlsafe_b64encode(json.dumps({"sub": "alice", "exp": now + 120}).encode()).rstrip(b"=").decode()
    short_lived = sensitive.add("caller token jwt", f"eyJhbGciOiJub25lIn0.{claims}.")
    callers = [new_caller(sensitive, f"c{i}") for i in range(3)]
    with Monitor(redis, tmp_path / "monitor.txt") as monitor:
        tokens = {caller: bearer(as_caller(first, caller)) for caller in callers}
        for caller in callers:
            assert bearer(as_caller(second, caller)) == tokens[caller]
        tokens[short_lived] = bearer(as_caller(second, short_lived))
        wait_until(lambda: len(caller_entries(redis)) == 4, 5, "every caller's entry written")
    assert len(exchanges(stub_idp)) == 4
    seen = monitor.text + json.dumps(redis.dump())
    assert "/caller:" in seen, "the capture holds no caller entry: it shows nothing"
    for caller in [*callers, short_lived]:
        for label, value in {"caller token": caller, "its SHA-256": sha256_hex(caller),
                             "its SHA-256 (upper case)": sha256_hex(caller).upper()}.items():
            assert value not in seen, f"{label} reached Redis"
    for token in tokens.values():
        assert token not in seen, "an exchanged token reached Redis in the clear"
    # The keys: the identity's callers' generation, and one entry per caller named by 64 hex digits.
    keys = sorted(redis.cli("--scan").splitlines())
    assert len(keys) == 5, keys
    assert keys[0].startswith("oauth-relay:obo/caller:") and all(len(k) == len("oauth-relay:obo/caller:") + 64 for k in keys[:4]), keys
    assert keys[4].startswith("oauth-relay:obo:") and keys[4].endswith(":callers"), keys
    entry_ttls = sorted(int(redis.cli("PTTL", key).strip()) for key in keys[:4])
    assert 0 < entry_ttls[0] <= 120_000, "the JWT caller's entry outlives the caller's token"
    assert all(3_500_000 < ttl <= 3_600_000 for ttl in entry_ttls[1:]), entry_ttls


def test_a_logout_through_one_replica_makes_the_other_exchange_again(redis, stub_idp, upstream, start_relay, sensitive):
    exchange_script(stub_idp)
    first, second = start_fleet(start_relay, stub_idp, upstream, redis)
    caller = new_caller(sensitive, "x")
    before = bearer(as_caller(first, caller))
    assert bearer(as_caller(second, caller)) == before
    wait_until(lambda: len(caller_entries(redis)) == 1, 5, "the caller's entry written")
    assert len(exchanges(stub_idp, caller)) == 1

    assert first.admin.request("DELETE", "/identities/obo/token").status == 204
    # The other replica hears of it on the channel at once: its next request for the caller
    # exchanges again (its own cache and the fleet's entry are both forgotten).
    after = wait_until(lambda: (t := bearer(as_caller(second, caller))) != before and t, 5,
                       "the other replica to drop the caller's token")
    assert len(exchanges(stub_idp, caller)) == 2
    assert issued(exchanges(stub_idp, caller)[1]) == after
    # The replica that logged out takes the fleet's new token.
    assert bearer(as_caller(first, caller)) == after
    assert len(exchanges(stub_idp, caller)) == 2


def test_an_upstream_refusal_of_the_fleets_token_replays_with_a_new_exchange(redis, stub_idp, upstream, start_relay, sensitive):
    exchange_script(stub_idp)
    first, second = start_fleet(start_relay, stub_idp, upstream, redis)
    caller = new_caller(sensitive, "refused")
    token = bearer(as_caller(first, caller))
    wait_until(lambda: len(caller_entries(redis)) == 1, 5, "the caller's entry written")
    # The second replica reads the first one's token from Redis; the upstream refuses it, so the
    # replay must carry a token exchanged anew, not the refused one read from Redis again.
    resp = as_caller(second, caller, target="/status/401")
    assert resp.status == 401 and resp.json()["target"] == "/status/401"
    first_record, second_record = exchanges(stub_idp, caller)
    assert issued(first_record) == token != issued(second_record)
    metrics = second.admin.scrape()
    assert metrics.by("oauth_relay_caller_exchanges_total", "outcome", identity="obo") == {"shared": 1, "issued": 1}
    assert first.admin.scrape().by("oauth_relay_caller_exchanges_total", "outcome", identity="obo") == {"issued": 1}
