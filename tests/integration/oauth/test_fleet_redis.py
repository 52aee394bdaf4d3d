"""Replicas sharing tokens through Redis (issue 13), with the real binary, Debian's redis-server
and django-oauth-toolkit (token requests counted at the IdP): one token request for a fleet
started together, about one refresh per lifetime for the fleet, rotated refresh tokens never
lost, nothing readable in Redis, and Redis failing (killed, hanging) costing no request.

Each test starts its own redis-server (on a free loopback port, nothing persisted) and 3 or 4
relays with one worker each, configured alike: `store.redis` and the same key.
"""

from __future__ import annotations

import re
import secrets
import threading
import time

import pytest

from admin_client import log_records, rewrite, start_with_admin, wait_for_log
from deadlines import scaled, wait_until
from idp_relay import bearer, burst, oauth_route, run_token_command, token_command_config
from login_relay import approved_token
from processes import STORE_KEY, run_cli
from redis_server import RedisServer, SilentRedis

pytestmark = pytest.mark.oauth

# How long a Redis command may take before a replica carries on without Redis. The default (200 ms)
# is tight for a loaded test machine, where a slow answer would count as an outage; the test of a
# Redis that never answers sets its own.
STORE_TIMEOUT_MS = int(scaled(2000))


@pytest.fixture
def redis(tmp_path, sensitive):
    """A redis-server that requires a password (so every fleet test goes through AUTH); the
    password joins the values no relay log may show."""
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = RedisServer(workdir, password=sensitive.add("redis password", secrets.token_hex(16))).start()
    yield server
    server.kill()


def shared_store(url: str, **extra) -> dict:
    return {"redis": url, "key": STORE_KEY, "timeoutMilliseconds": STORE_TIMEOUT_MS, **extra}


def start_fleet(start_relay, idp, upstream, store: dict | None, replicas: int = 3, client: str = "orders-cc",
                admin: bool = False, **top) -> list:
    """`replicas` relays with the same identity and store (None: none); with `admin`, each has an admin
    listener (`relay.admin`, an AdminClient)."""
    routes = [oauth_route(upstream, "/echo/", "orders"), oauth_route(idp, "/api/", "orders")]
    options = {**top, "identities": {"orders": idp.identity(client)}}
    if store is not None:
        options["store"] = store
    fleet = []
    for _ in range(replicas):
        if admin:
            relay, admin_client = start_with_admin(start_relay, routes, **options)
            relay.admin = admin_client
        else:
            relay = start_relay(routes, **options)
        fleet.append(relay)
    return fleet


def shared_entries_written(redis, count: int = 1, unlike: dict | None = None) -> dict:
    """Waits (bounded) for Redis to hold `count` entries (other than `unlike`, an earlier
    `redis.dump()`): a replica writes an entry after handing its token to the requests waiting for
    it, so the write may come after their answers. Returns the dump."""
    return wait_until(lambda: len(d := redis.dump()) == count and d != unlike and d, 5, f"{count} shared entries written")


def timed(call) -> tuple:
    """`call()`'s result and the seconds it took."""
    began = time.monotonic()
    result = call()
    return result, time.monotonic() - began


def messages(relay, msg: str) -> int:
    return len(log_records(relay, msg))


UNAVAILABLE = "shared token store unavailable; each replica fetches its own tokens until it is back"
RESUMED = "shared token store reachable again; sharing tokens"


def all_at_once(fleet, per_replica: int) -> list:
    """`per_replica` concurrent requests on each replica, every replica at the same time."""
    answers: list = [None] * len(fleet)

    def one(index: int) -> None:
        answers[index] = burst(fleet[index], per_replica, "/echo/x", timeout=30)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(fleet))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=scaled(60))
    assert all(a is not None for a in answers), "a burst did not finish"
    return [resp for replica in answers for resp in replica]


class Traffic:
    """Requests round-robin over the fleet from a background thread until stopped, one every
    10 ms or so; every start, status and latency recorded. Bounded in count as well as in time:
    running out of requests before the test stops it is a failure (`failed()`)."""

    MAX_REQUESTS = 20_000  # at 10 ms apart, over three minutes: far more than any test runs

    def __init__(self, fleet, target: str = "/echo/x"):
        self.fleet = fleet
        self.target = target
        self.results: list[tuple[int, float, float, int]] = []  # (replica, started, seconds, status)
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.began = time.monotonic()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join(timeout=scaled(30))
        self.ended = time.monotonic()
        if self.thread.is_alive():
            self.errors.append("the traffic thread did not stop")

    def _run(self) -> None:
        for index in range(self.MAX_REQUESTS):
            if self.stopping.is_set():
                return
            replica = index % len(self.fleet)
            started = time.monotonic()
            try:
                status = self.fleet[replica].request("GET", self.target, timeout=10).status
            except Exception as error:  # noqa: BLE001 - a failed request is what the test counts
                self.errors.append(f"replica {replica}: {error!r}")
                status = 0
            self.results.append((replica, started, time.monotonic() - started, status))
            time.sleep(0.01)
        self.errors.append(f"the traffic ran out of its {self.MAX_REQUESTS} requests before the test ended")

    def failed(self) -> list:
        return [r for r in self.results if r[3] != 200] + self.errors

    def longest_pause(self) -> float:
        """The longest time any replica went without a request starting, from the traffic's start
        to its end."""
        longest = 0.0
        for replica in range(len(self.fleet)):
            starts = [self.began] + [r[1] for r in self.results if r[0] == replica] + [self.ended]
            longest = max([longest] + [b - a for a, b in zip(starts, starts[1:])])
        return longest


def test_a_fleet_started_together_makes_one_token_request(redis, django_idp, upstream, start_relay):
    # The IdP holds token requests: the first replica's fetch is still under way while the
    # others start and while the 300 requests arrive.
    django_idp.hold(1500)
    fleet = start_fleet(start_relay, django_idp, upstream, shared_store(redis.url), replicas=4)
    answers = all_at_once(fleet, 75)
    assert [r.status for r in answers] == [200] * 300
    assert len({bearer(r) for r in answers}) == 1, "the replicas injected different tokens"
    assert len(django_idp.token_requests()) == 1
    # The first replica fetched (its fetch began at its start); each other one read its result.
    wait_for_log(fleet[0], "token obtained", 1)
    for relay in fleet[1:]:
        wait_for_log(relay, "token read from shared store", 1)


def test_a_fleet_refreshes_about_once_per_lifetime_and_never_loses_a_rotated_refresh_token(
        redis, start_django_idp, upstream, start_relay):
    lifetime = 4
    idp = start_django_idp(access_token_seconds=lifetime, rotate_refresh_token=True)
    fleet = start_fleet(start_relay, idp, upstream, shared_store(redis.url), replicas=3, client="legacy-pw")
    duration = 14
    with Traffic(fleet) as traffic:
        time.sleep(duration)  # the traffic runs for several lifetimes (refreshed every half lifetime)
    records = idp.token_requests()
    assert not traffic.failed(), traffic.failed()[:5]
    # Each replica had requests throughout, so every refresh was due under traffic.
    assert traffic.longest_pause() < lifetime / 2, f"a replica went {traffic.longest_pause():.1f} s without a request"
    assert all(r["status"] == 200 for r in records), [(r["grant_type"], r["status"], r.get("error")) for r in records]
    assert [r["grant_type"] for r in records].count("password") == 1, "a replica fetched its own token"
    refreshes = [r for r in records if r["grant_type"] == "refresh_token"]
    # Each refresh presented the refresh token the previous request issued: none lost or reused.
    for previous, refresh in zip(records, refreshes):
        assert refresh["refresh_token_sha256"] == previous["issued_refresh_token_sha256"]
    # Refreshed at half the lifetime: one per 2 s for the fleet, never one per replica.
    assert 3 <= len(refreshes) <= duration / (lifetime / 2) + 2, len(refreshes)


def test_redis_holds_no_token_in_the_clear(redis, django_idp, upstream, start_relay):
    fleet = start_fleet(start_relay, django_idp, upstream, shared_store(redis.url), replicas=2, client="legacy-pw")
    tokens = {bearer(relay.request("GET", "/echo/x")) for relay in fleet}
    assert len(tokens) == 1
    contents = redis.dump()
    keys = sorted(contents)
    assert len(keys) == 1 and keys[0].startswith("oauth-relay:orders:") and len(keys[0]) == len("oauth-relay:orders:") + 64, keys
    raw = "\n".join(f"{key}\n{value}" for key, value in contents.items())
    assert "eyJ" not in raw
    for label, value in {**django_idp.sensitive_values(), "injected token": tokens.pop()}.items():
        assert value not in raw, f"{label} is readable in Redis"
    # The value is the token store's entry format: magic, version 1.
    assert "ORTS\x01" in contents[keys[0]]


def test_a_replica_restarted_takes_the_shared_token(redis, django_idp, upstream, start_relay):
    first, second = start_fleet(start_relay, django_idp, upstream, shared_store(redis.url), replicas=2)
    token = bearer(first.request("GET", "/echo/x"))
    assert bearer(second.request("GET", "/echo/x")) == token
    assert second.stop() == 0
    (third,) = start_fleet(start_relay, django_idp, upstream, shared_store(redis.url), replicas=1)
    assert bearer(third.request("GET", "/echo/x")) == token
    assert len(django_idp.token_requests()) == 1
    wait_for_log(third, "token read from shared store", 1)


def test_the_token_command_answers_from_the_shared_store(redis, django_idp, upstream, start_relay, tmp_path, sensitive):
    (relay,) = start_fleet(start_relay, django_idp, upstream, shared_store(redis.url), replicas=1)
    token = bearer(relay.request("GET", "/echo/x"))
    shared_entries_written(redis)
    path = token_command_config(tmp_path / "token-command.json", upstream, {"orders": django_idp.identity("orders-cc")},
                                store=shared_store(redis.url))
    result = run_token_command(path, "orders", sensitive)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == token
    assert len(django_idp.token_requests()) == 1


def test_redis_killed_under_load_fails_no_request_and_sharing_resumes_once_it_is_back(
        redis, start_django_idp, upstream, start_relay):
    lifetime = 4
    idp = start_django_idp(access_token_seconds=lifetime, rotate_refresh_token=True)
    fleet = start_fleet(start_relay, idp, upstream, shared_store(redis.url), replicas=3, client="legacy-pw", admin=True)
    with Traffic(fleet) as traffic:
        time.sleep(lifetime)  # shared refreshes under load
        redis.sigkill()
        # Each replica notices at once (its connections end) and logs it once.
        wait_until(lambda: all(messages(r, UNAVAILABLE) == 1 for r in fleet), 5, "every replica to log the outage")
        time.sleep(2 * lifetime)  # several refreshes without Redis
        for relay in fleet:
            assert relay.admin.request("GET", "/readyz").status == 200, "a replica stopped being ready"
        redis.start()  # the same port, empty
        # Sharing resumes within one lifetime: every replica reconnects (backoff of 2 s at most).
        wait_until(lambda: all(messages(r, RESUMED) == 1 for r in fleet), lifetime, "every replica to use Redis again")
        resumed = len(idp.token_requests())
        time.sleep(3 * lifetime)
        after = idp.token_requests()[resumed:]
    assert not traffic.failed(), traffic.failed()[:5]
    assert all(messages(r, UNAVAILABLE) == 1 for r in fleet), "an outage is logged once, not per operation"
    # Shared again: about one refresh per half lifetime for the fleet (the first may still be
    # a replica's own, its refresh token forked while Redis was away), not one per replica.
    assert len([r for r in after if r["grant_type"] == "refresh_token"]) <= 3 * lifetime / (lifetime / 2) + 2, after
    skipped = sum(r.admin.scrape().total("oauth_relay_store_operations_total", backend="redis", outcome="skipped")
                  for r in fleet)
    assert skipped >= len(fleet), "the fetches without Redis were not counted"


def test_a_redis_that_never_answers_stalls_no_request(start_django_idp, upstream, start_relay):
    """A listener that accepts and never answers: the relay's first fetch waits for it at most
    store.timeoutMilliseconds, later ones not at all, and requests keep the latency of a relay
    without Redis, while tokens are refreshed every 2 s. The timeout is a second here, so a request
    that waited for Redis stands out from the delays of a loaded machine."""
    # At most 2 s even when scaled (sanitized builds run at 5x): a fetch that waits for Redis longer
    # than the token request's own 5 s timeout fails its waiting requests (502) before it goes on
    # without Redis.
    timeout = min(int(scaled(1000)), 2000) / 1000
    idp = start_django_idp(access_token_seconds=4)
    silent = SilentRedis()
    try:
        (plain,) = start_fleet(start_relay, idp, upstream, None, replicas=1)
        plain_first = timed(lambda: plain.request("GET", "/echo/x").status)
        (hanging,) = start_fleet(start_relay, idp, upstream, shared_store(silent.url, timeoutMilliseconds=int(timeout * 1000)),
                                 replicas=1)
        hanging_first = timed(lambda: hanging.request("GET", "/echo/x").status)
        assert plain_first[0] == hanging_first[0] == 200
        # The first token waited for Redis once, at most the timeout, beside what the plain relay's took.
        assert hanging_first[1] < plain_first[1] + timeout + scaled(0.5), (hanging_first[1], plain_first[1])
        latencies = {"plain": [], "hanging": []}
        started = time.monotonic()
        # A few refreshes (every 2 s), each going without Redis; bounded in rounds too (each takes
        # over 5 ms, so 6 s is ~800 of them).
        for _ in range(3000):
            if time.monotonic() - started >= 6:
                break
            for name, relay in (("plain", plain), ("hanging", hanging)):
                status, seconds = timed(lambda: relay.request("GET", "/echo/x").status)
                assert status == 200
                latencies[name].append(seconds)
            time.sleep(0.005)
        assert time.monotonic() - started >= 6, "the rounds ran out before the refreshes"
        assert len(silent.accepted) >= 2, "the relay never connected to the silent Redis"
    finally:
        silent.close()
    median = {name: sorted(values)[len(values) // 2] for name, values in latencies.items()}
    # No request waited for Redis: none near the timeout, the median like the plain relay's.
    assert max(latencies["hanging"]) < 0.8 * timeout, sorted(latencies["hanging"])[-5:]
    assert median["hanging"] < 2 * median["plain"] + 0.005, median
    assert messages(hanging, UNAVAILABLE) == 1
    wait_for_log(hanging, "token obtained", 3)  # the first token and two refreshes while Redis hung


def test_with_a_directory_too_a_restart_while_redis_is_down_uses_the_file(redis, django_idp, upstream, start_relay, tmp_path):
    store = shared_store(redis.url, path=str(tmp_path / "token-store"))
    (first,) = start_fleet(start_relay, django_idp, upstream, store, replicas=1)
    token = bearer(first.request("GET", "/echo/x"))
    assert (tmp_path / "token-store" / "identity-orders.token").exists(), "the token was not kept on disk"
    assert first.stop() == 0
    redis.sigkill()
    (second,) = start_fleet(start_relay, django_idp, upstream, store, replicas=1)
    assert bearer(second.request("GET", "/echo/x")) == token
    assert len(django_idp.token_requests()) == 1
    wait_for_log(second, "token read from store", 1)


def test_forgetting_the_token_removes_the_shared_entry(redis, django_idp, upstream, start_relay):
    (relay,) = start_fleet(start_relay, django_idp, upstream, shared_store(redis.url), replicas=1, admin=True)
    before = bearer(relay.request("GET", "/echo/x"))
    first_entry = shared_entries_written(redis)
    assert relay.admin.request("DELETE", "/identities/orders/token").status == 204
    after = bearer(relay.request("GET", "/echo/x"))
    assert after != before
    shared_entries_written(redis, unlike=first_entry)
    (restarted,) = start_fleet(start_relay, django_idp, upstream, shared_store(redis.url), replicas=1)
    assert bearer(restarted.request("GET", "/echo/x")) == after
    assert len(django_idp.token_requests()) == 2


def test_operations_are_counted_by_backend_and_outcome(redis, django_idp, upstream, start_relay):
    (relay,) = start_fleet(start_relay, django_idp, upstream, shared_store(redis.url), replicas=1, admin=True)
    assert relay.request("GET", "/echo/x").status == 200
    # The first fetch: read (empty), acquire, write. The token is handed to the workers as soon as
    # it is obtained, so the write may still be on its way when the request is answered.
    ok = lambda m: m.value("oauth_relay_store_operations_total", backend="redis", outcome="ok")
    relay.admin.wait_for(lambda m: (ok(m) or 0) >= 3, "the shared entry's write")
    metrics = relay.admin.scrape()
    assert ok(metrics) == 3
    assert metrics.value("oauth_relay_store_operations_total", backend="redis", outcome="skipped") is None


def test_changing_the_shared_store_takes_a_restart(redis, django_idp, upstream, start_relay):
    (relay,) = start_fleet(start_relay, django_idp, upstream, shared_store(redis.url), replicas=1, admin=True)
    assert relay.request("GET", "/echo/x").status == 200
    rewrite(relay, store=shared_store(redis.url.replace(redis.password, "a-new-password").replace("/0", "/1"), keyPrefix="other:"))
    errors = relay.admin.reload_rejected()
    assert sorted(error.split(":")[0] for error in errors) == ["$.store.keyPrefix", "$.store.redis"], errors
    assert "a-new-password" not in " ".join(errors)
    assert relay.request("GET", "/echo/y").status == 200


def test_an_identity_a_reload_adds_takes_the_shared_token(redis, django_idp, upstream, start_relay):
    routes = [oauth_route(upstream, "/echo/", "orders"), oauth_route(upstream, "/billing/", "billing")]
    both = {"orders": django_idp.identity("orders-cc"), "billing": django_idp.identity("billing-cc")}
    first = start_relay(routes, identities=both, store=shared_store(redis.url))
    billing = bearer(first.request("GET", "/billing/x"))
    shared_entries_written(redis, count=2)  # orders (fetched at start) and billing
    second, admin = start_with_admin(start_relay, [oauth_route(upstream, "/echo/", "orders")],
                                     identities={"orders": both["orders"]}, store=shared_store(redis.url))
    assert len(django_idp.token_requests()) == 2
    rewrite(second, identities=both, routes=routes)
    assert admin.reload_applied()["identities"]["started"] == ["billing"]
    assert bearer(second.request("GET", "/billing/x")) == billing
    assert len(django_idp.token_requests()) == 2, "the reloaded replica asked the IdP"


def test_a_redis_closing_idle_connections_is_no_outage(start_django_idp, upstream, start_relay, tmp_path):
    """Redis's `timeout` (like managed services' idle limits) closes the relays' command
    connections between refreshes: they reconnect at once, log nothing, and keep sharing."""
    workdir = tmp_path / "redis-idle"
    workdir.mkdir()
    server = RedisServer(workdir, options=("--timeout", "1")).start()
    try:
        lifetime = 6
        idp = start_django_idp(access_token_seconds=lifetime)
        fleet = start_fleet(start_relay, idp, upstream, shared_store(server.url), replicas=2, client="legacy-pw")
        with Traffic(fleet) as traffic:
            time.sleep(2 * lifetime)  # idle stretches of 3 s between refreshes, Redis closing after 1 s
        connections = int(re.search(r"total_connections_received:(\d+)", server.cli("INFO", "stats")).group(1))
        assert connections > 2 * 2 + 4, f"Redis closed too few idle connections ({connections} made) for the test to mean much"
        assert not traffic.failed(), traffic.failed()[:5]
        assert all(messages(relay, UNAVAILABLE) == 0 for relay in fleet), [r.log()[-2000:] for r in fleet]
        assert len(idp.token_requests(grant_type="refresh_token")) <= 2 * lifetime / (lifetime / 2) + 1
        for relay in fleet:
            assert relay.stop() == 0
    finally:
        server.kill()


def test_a_person_logged_in_through_one_replica_is_logged_in_on_all(redis, django_idp, upstream, start_relay):
    """Issue 13: interactive identities are shared too. A device login approved through one
    replica reaches a replica already running (the entry's write is announced on the channel) and
    one started afterwards (it reads the entry at start), with no login and no IdP call of theirs."""
    device = django_idp.identity("tv-device")
    store = shared_store(redis.url)

    def replica():
        return start_relay([oauth_route(upstream, "/", "tv")], identities={"tv": device}, store=store)

    first, second = replica(), replica()
    answer = first.request("GET", "/x", headers=[("Accept", "application/json")])
    assert answer.status == 401, answer.body
    code = answer.json()["userCode"]
    assert django_idp.approve_device(code) == "authorized"
    token = approved_token(first, timeout=15)
    asked = len(django_idp.token_requests())
    # The running replica never asked for a login of its own, yet holds the person's token. It is
    # asked once it has read the login: a request in the moment between the first replica's token
    # and the entry's message would start a login of its own (seen under ThreadSanitizer's pace).
    wait_for_log(second, "login read from shared store", 1)
    assert approved_token(second) == token
    third = replica()
    assert bearer(third.request("GET", "/x")) == token
    assert len(django_idp.device_authorizations()) == 1, "one device login for the whole fleet"
    assert len(django_idp.token_requests()) == asked, "the other replicas asked the IdP nothing"


def device_fleet(redis, django_idp, upstream, start_relay, replicas: int = 2) -> list:
    """`replicas` relays sharing the `tv` device identity, each with an admin listener."""
    device = django_idp.identity("tv-device")
    fleet = []
    for _ in range(replicas):
        relay, relay.admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "tv")], identities={"tv": device},
                                              store=shared_store(redis.url))
        fleet.append(relay)
    return fleet


def log_in_everywhere(fleet, django_idp) -> str:
    """A device login approved through the first replica, held by all; the token."""
    answer = fleet[0].request("GET", "/x", headers=[("Accept", "application/json")])
    assert answer.status == 401, answer.body
    assert django_idp.approve_device(answer.json()["userCode"]) == "authorized"
    token = approved_token(fleet[0], timeout=15)
    for relay in fleet[1:]:
        assert approved_token(relay) == token
    return token


def test_a_logout_through_one_replica_logs_the_person_out_on_all(redis, django_idp, upstream, start_relay):
    """A logout removes the shared entry and says so on the channel: a replica already running
    drops the person's tokens at once (not when they expire, an hour later) and answers 401
    login-required; the IdP revoked the refresh token once; a replica started afterwards finds no
    login either."""
    first, second = device_fleet(redis, django_idp, upstream, start_relay)
    log_in_everywhere([first, second], django_idp)
    assert len(redis.dump()) == 1
    assert first.admin.request("DELETE", "/identities/tv/token").status == 204
    assert redis.dump() == {}

    def logged_out():
        answer = second.request("GET", "/x", headers=[("Accept", "application/json")])
        return answer.status == 401 and answer
    answer = wait_until(logged_out, 5, "the other replica to drop the person's login")
    assert answer.json()["type"] == "urn:oauth-relay:problem:login-required", answer.body
    wait_for_log(second, "logged out through another replica", 1)
    # The logging-out replica revokes after its answer: wait for that one revocation to arrive.
    wait_until(lambda: django_idp.revocations(), 5, "the logging-out replica's revocation")
    assert len(django_idp.revocations()) == 1, "the replica that heard of the logout revoked nothing itself"
    (third,) = device_fleet(redis, django_idp, upstream, start_relay, replicas=1)
    assert third.request("GET", "/x", headers=[("Accept", "application/json")]).status == 401


def test_a_logout_redis_cannot_share_says_so(redis, django_idp, upstream, start_relay, sensitive):
    """Redis down at the logout: the replica forgets the login itself, and its answer (the admin
    endpoint's, and `oauth-relay logout`'s through it) says that the other replicas keep it."""
    first, second = device_fleet(redis, django_idp, upstream, start_relay)
    log_in_everywhere([first, second], django_idp)
    redis.sigkill()
    answer = first.admin.request("DELETE", "/identities/tv/token")
    assert answer.status == 503, answer.body
    problem = answer.json()
    assert problem["type"] == "urn:oauth-relay:problem:shared-store-unavailable", problem
    assert "logged out on this replica" in problem["detail"] and "the other replicas keep the login" in problem["detail"], problem
    assert first.request("GET", "/x", headers=[("Accept", "application/json")]).status == 401
    done = run_cli("logout", "--config", str(second.config_path), "tv")
    sensitive.add_output("oauth-relay logout", done.stdout + done.stderr)
    assert done.returncode == 1, done.stderr
    assert "the relay answered 503" in done.stderr and "the other replicas keep the login" in done.stderr, done.stderr
