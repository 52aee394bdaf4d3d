"""Handing tokens to requests: how long a request may wait ("park") for its identity's token
fetch (`limits.tokenWaitSeconds`), what the requests still parked get when the relay stops, and
how often upstream refusals may send the relay to the IdP (`routes[].minTokenAgeForRetrySeconds`).

- A request parked longer than tokenWaitSeconds gets 503 token-endpoint-unavailable with
  Retry-After, and its connection serves the next request.
- SIGTERM while requests are parked on a fetch: exit 0, and no parked request goes upstream with a
  token afterwards (each gets a 503 or a close).
- An upstream refusal (a `retryOnStatus` status) of a normally fetched token drops it and replays
  the request once with a new one. A refusal of a token that was itself fetched after a refusal,
  and is younger than minTokenAgeForRetrySeconds (default 10), goes to the client unchanged with
  the token kept. So refusals cause about one token request per identity per that age.
  `oauth_relay_upstream_token_refusals_total{identity,action}` counts `refetch` and `passed`.

The echo upstream's /flaky-401?every=N answers 401 to the 1st, (N+1)-th, ... request whatever
token it carries; the IdP stub's records are the reference for how many token requests there were.
"""

from __future__ import annotations

import math
import signal
import time
from collections import Counter

import pytest

from admin_client import Metrics, finish_wrk, kill_wrk, start_with_admin, start_wrk
from deadlines import scaled, wait_until
from http_client import ConnectionClosed, RawConnection, build_request
from idp_processes import sha256
from idp_relay import assert_oauth_problem, bearer, oauth_route
from processes import route

pytestmark = pytest.mark.oauth

IDENTITY = "orders"
LIFETIME = 3600
UNAVAILABLE = "urn:oauth-relay:problem:token-endpoint-unavailable"
REFUSALS = "oauth_relay_upstream_token_refusals_total"
# The IdP answers the relay's first token request (sent at start-up) this late.
IDP_DELAY_S = 3.0


def start(start_relay, stub, upstream, limits: dict | None = None, **route_options):
    return start_relay([oauth_route(upstream, "/", IDENTITY, **route_options)], limits=limits,
                       identities={IDENTITY: stub.identity()})


def slow_first_token(stub, delay_s: float = IDP_DELAY_S) -> None:
    """The first token request is answered `delay_s` late; later ones at once."""
    stub.script({"kind": "token", "expires_in": LIFETIME, "delay_ms": int(delay_s * 1000)},
                default={"kind": "token", "expires_in": LIFETIME})


def timed(conn: RawConnection, method: str, target: str, body: bytes = b"", timeout: float = 10):
    """Sends one request on `conn`; returns (response, seconds until it was read)."""
    t0 = time.monotonic()
    resp = conn.request(method, target, body=body, timeout=timeout)
    return resp, time.monotonic() - t0


def assert_parked_503(resp, elapsed: float, sensitive, wait_s: float = 1.0) -> dict:
    sensitive.add_output("problem body", resp.body)  # the autouse scan: no issued token in it
    doc = assert_oauth_problem(resp, 503, identity=IDENTITY)
    assert doc["type"] == UNAVAILABLE, doc
    retry_after = resp.header("retry-after")
    assert retry_after is not None and retry_after.strip().isdigit() and int(retry_after) >= 1, \
        f"Retry-After {retry_after!r}: expected whole seconds >= 1"
    # Not at once (it waited), and well before the IdP's answer.
    assert wait_s / 2 <= elapsed <= min(scaled(wait_s + 1.2), IDP_DELAY_S - 0.3), \
        f"the 503 came after {elapsed:.2f}s; tokenWaitSeconds is {wait_s}, the IdP answers after {IDP_DELAY_S}s"
    assert b"Bearer" not in resp.body and b"access_token" not in resp.body, resp.body[:500]
    return doc


def first_token_issued(stub) -> dict:
    """Waits until the IdP stub has answered the relay's first token request; returns its record."""
    return wait_until(lambda: (r := stub.token_requests()) and r[0]["answered"] and r[0], IDP_DELAY_S + 5,
                      "the IdP's answer to the first token request")


# ---------------------------------------------------------------------------------------------
# limits.tokenWaitSeconds

def test_a_request_parked_past_token_wait_seconds_gets_503_with_retry_after(stub_idp, upstream, start_relay, sensitive):
    slow_first_token(stub_idp)
    relay = start(start_relay, stub_idp, upstream, limits={"tokenWaitSeconds": 1})
    with relay.connect() as conn:
        resp, elapsed = timed(conn, "GET", "/orders/1")
    assert_parked_503(resp, elapsed, sensitive)
    assert upstream.stats()["requests_started"] == 0, "the parked request went upstream"


def test_a_parked_request_with_a_body_gets_the_same_503(stub_idp, upstream, start_relay, sensitive):
    slow_first_token(stub_idp)
    relay = start(start_relay, stub_idp, upstream, limits={"tokenWaitSeconds": 1})
    with relay.connect() as conn:
        resp, elapsed = timed(conn, "POST", "/orders", body=bytes(range(256)) * 64)
    assert_parked_503(resp, elapsed, sensitive)
    assert upstream.stats()["requests_started"] == 0, "the parked request went upstream"


def test_the_connection_of_a_get_that_gave_up_waiting_serves_the_next_request(
        stub_idp, upstream, start_relay, sensitive):
    slow_first_token(stub_idp)
    relay = start(start_relay, stub_idp, upstream, limits={"tokenWaitSeconds": 1})
    with relay.connect() as conn:
        resp, elapsed = timed(conn, "GET", "/orders/1")
        assert_parked_503(resp, elapsed, sensitive)
        assert "close" not in (resp.header("connection") or "").lower(), \
            f"the 503 says Connection: {resp.header('connection')}"
        record = first_token_issued(stub_idp)
        after = conn.request("GET", "/orders/2", timeout=5)
        assert sha256(bearer(after)) == sha256(record["issued"]["access_token"])
        assert after.json()["method"] == "GET" and after.json()["target"] == "/orders/2"
    assert upstream.stats()["requests_started"] == 1


def test_the_connection_of_a_post_that_gave_up_waiting_closes_after_the_503(
        stub_idp, upstream, start_relay, sensitive):
    """The body was never read (the request waited at its head), so, as for every local answer
    to a request whose body has not arrived, the connection ends after the answer: the unread
    body can never be taken for a next request."""
    slow_first_token(stub_idp)
    relay = start(start_relay, stub_idp, upstream, limits={"tokenWaitSeconds": 1})
    with relay.connect() as conn:
        resp, elapsed = timed(conn, "POST", "/orders/1", body=bytes(range(256)) * 64)
        assert_parked_503(resp, elapsed, sensitive)
        assert (resp.header("connection") or "").lower() == "close"
        assert conn.is_closed(timeout=5), "the connection stayed open after the 503"
    assert upstream.stats()["requests_started"] == 0


def test_a_token_that_arrives_within_token_wait_seconds_is_injected(stub_idp, upstream, start_relay):
    slow_first_token(stub_idp, delay_s=1.0)
    relay = start(start_relay, stub_idp, upstream, limits={"tokenWaitSeconds": 3})
    with relay.connect() as conn:
        resp, elapsed = timed(conn, "GET", "/orders/1")
    [record] = stub_idp.token_requests()
    assert sha256(bearer(resp)) == sha256(record["issued"]["access_token"])
    assert elapsed < scaled(2.9), f"answered after {elapsed:.2f}s"


# ---------------------------------------------------------------------------------------------
# SIGTERM while requests are parked

SHUTDOWN_ROUNDS = 20
PARKED = 50
GRACE_S = 0.5


def park(relay, n: int) -> list[RawConnection]:
    """n requests on n connections, parked on the identity's fetch. They count as parked once a
    request sent after all of them, on a route without identity, has been answered through the
    upstream (one worker: its loop read the n heads before it could forward that request)."""
    conns = [RawConnection(relay.host, relay.port, timeout=10) for _ in range(n)]
    for i, conn in enumerate(conns):
        conn.send(build_request("GET", f"/orders/{i}"))
    assert relay.request("GET", "/plain/sentinel").status == 200
    return conns


def after_exit(conn: RawConnection) -> str:
    """What a parked request got by the time the relay had exited: '503' or 'closed'."""
    try:
        resp = conn.read_final_response(timeout=2)
    except ConnectionClosed:
        assert not conn.buf, f"a partial answer before the close: {bytes(conn.buf[:200])!r}"
        return "closed"
    except TimeoutError:
        return "open after the exit"
    if resp.status == 503:
        assert_oauth_problem(resp, 503, identity=IDENTITY)
        return "503"
    return f"{resp.status}: {resp.body[:200]!r}"


def test_sigterm_with_50_requests_parked_on_a_token_fetch_exits_0_every_time(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "expires_in": LIFETIME, "delay_ms": int(IDP_DELAY_S * 1000)})
    outcomes: Counter = Counter()
    for round_ in range(1, SHUTDOWN_ROUNDS + 1):
        relay = start_relay([route(upstream, "/plain", name="plain"), oauth_route(upstream, "/", IDENTITY)],
                            limits={"shutdownGraceSeconds": GRACE_S}, identities={IDENTITY: stub_idp.identity()})
        conns = park(relay, PARKED)
        try:
            t0 = time.monotonic()
            relay.send_signal(signal.SIGTERM)
            code = relay.wait_exit(GRACE_S + 5)
            took = time.monotonic() - t0
            assert code == 0, f"round {round_}: the relay exited with {code} on SIGTERM with {PARKED} requests parked"
            assert took < scaled(GRACE_S + 2), f"round {round_}: exit {took:.1f}s after SIGTERM"
            got = Counter(after_exit(conn) for conn in conns)
        finally:
            for conn in conns:
                conn.close()
        assert set(got) <= {"503", "closed"}, f"round {round_}: the parked requests got {dict(got)}"
        outcomes += got
    assert upstream.stats()["requests_started"] == SHUTDOWN_ROUNDS, "a parked request went upstream"
    assert sum(outcomes.values()) == SHUTDOWN_ROUNDS * PARKED


# ---------------------------------------------------------------------------------------------
# routes[].minTokenAgeForRetrySeconds

def echoed_token_sha(resp) -> str:
    """The fingerprint of the bearer token the echo upstream received (any status)."""
    [value] = resp.echo_headers("Authorization")
    return sha256(value.partition(" ")[2])


def issued(stub) -> list[str]:
    return [sha256(r["issued"]["access_token"]) for r in stub.token_requests() if r["issued"]]


def test_a_401_on_a_token_fetched_after_a_refusal_goes_to_the_client_with_the_token_kept(
        stub_idp, upstream, start_relay):
    relay = start(start_relay, stub_idp, upstream)  # minTokenAgeForRetrySeconds: the default, 10
    first = relay.request("GET", "/status/401")
    assert first.status == 401
    assert upstream.stats()["requests_started"] == 2, "the first refusal of the start-up token was not replayed"
    tokens = issued(stub_idp)
    assert len(tokens) == 2 and echoed_token_sha(first) == tokens[1]

    second = relay.request("GET", "/status/401")
    assert second.status == 401
    assert upstream.stats()["requests_started"] == 3, "the refusal of the young refetched token was replayed"
    assert echoed_token_sha(second) == tokens[1]
    assert len(stub_idp.token_requests()) == 2, "the refusal of the young refetched token caused a token request"
    assert sha256(bearer(relay.request("GET", "/orders/1"))) == tokens[1], "the refused young token was not kept"


def test_a_401_on_a_refetched_token_older_than_the_minimum_age_drops_it_again(stub_idp, upstream, start_relay):
    relay = start(start_relay, stub_idp, upstream, minTokenAgeForRetrySeconds=1)
    assert relay.request("GET", "/status/401").status == 401
    records = stub_idp.token_requests()
    assert len(records) == 2
    old_enough = records[1]["answered"] + 1.2
    wait_until(lambda: time.time() > old_enough, 3, "the refetched token to be older than 1 s", interval=0.01)
    resp = relay.request("GET", "/status/401")
    assert resp.status == 401
    assert upstream.stats()["requests_started"] == 4, "the refusal of a token older than the minimum age was not replayed"
    tokens = issued(stub_idp)
    assert len(tokens) == 3
    assert echoed_token_sha(resp) == tokens[2]


def scrapes_to(sensitive):
    """An on_scrape that hands every /metrics body to `sensitive` (no token or secret may show)."""
    scrapes = []

    def record(body: bytes) -> None:
        scrapes.append(body)
        sensitive.add_output(f"GET /metrics (scrape {len(scrapes)})", body)
    return record


def test_refusals_are_counted_as_refetch_and_passed(stub_idp, upstream, start_relay, sensitive):
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", IDENTITY)], on_scrape=scrapes_to(sensitive),
                                    identities={IDENTITY: stub_idp.identity()})
    # /flaky-401?every=2: 401, 200, 401, ... The start-up token is refused once: dropped, a new
    # one fetched, the request replayed (200). The new token is refused at once: passed on.
    first = relay.request("GET", "/flaky-401?every=2")
    assert first.status == 200, f"the refused start-up token: {first.status}, expected the replay's 200"
    second = relay.request("GET", "/flaky-401?every=2")
    assert second.status == 401, f"the refused refetched token: {second.status}, expected the upstream's 401"
    assert len(stub_idp.token_requests()) == 2
    m = admin.wait_for(lambda m: m.total(REFUSALS, identity=IDENTITY) >= 2, f"two refusals counted in {REFUSALS}")
    assert m.by(REFUSALS, "action", identity=IDENTITY) == {"refetch": 1, "passed": 1}


# Under load: ~2% of requests refused whatever their token.

LOAD_S = 6
EVERY = 50


def refused_under_load(start_relay, stub, upstream, on_scrape=None, **route_options) -> tuple:
    """wrk for LOAD_S seconds on /flaky-401?every=EVERY through a route with an identity whose
    tokens live an hour; returns (token requests at the stub, wrk's report, admin client)."""
    stub.script(default={"kind": "token", "expires_in": LIFETIME})
    # No access log: tens of thousands of lines would make the leak scan of the log slow.
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", IDENTITY, **route_options)],
                                    on_scrape=on_scrape, accessLog=False, identities={IDENTITY: stub.identity()})
    bearer(relay.request("GET", "/orders/warm-up"))
    assert len(stub.token_requests()) == 1
    wrk = start_wrk(f"{relay.url}/flaky-401?every={EVERY}", connections=10, seconds=LOAD_S, timeout_s=5)
    try:
        report = finish_wrk(wrk, LOAD_S)
    finally:
        kill_wrk(wrk)
    assert report["requests"] > 20 * EVERY, f"too little load to show anything:\n{report['out']}"
    return len(stub.token_requests()), report, admin


def assert_token_requests_within(count: int, low: int, high: int, report: dict) -> None:
    assert low <= count <= high, (f"{count} token requests during {LOAD_S}s of load with {report['non2xx']} 401s "
                                  f"at the client; expected {low}..{high}:\n{report['out']}")
    assert report["non2xx"] > 0, f"no refusal reached the client:\n{report['out']}"


def test_upstream_401s_under_load_cause_one_token_request_per_10_seconds_by_default(stub_idp, upstream, start_relay):
    count, report, _ = refused_under_load(start_relay, stub_idp, upstream)
    assert_token_requests_within(count, 2, 1 + math.ceil(LOAD_S / 10) + 1, report)


def test_min_token_age_for_retry_of_1_second_bounds_refusal_fetches_to_about_one_a_second(
        stub_idp, upstream, start_relay):
    count, report, _ = refused_under_load(start_relay, stub_idp, upstream, minTokenAgeForRetrySeconds=1)
    # Refetches go on once a refetched token is a second old: at least half of the seconds show one.
    assert_token_requests_within(count, 1 + LOAD_S // 2, 1 + LOAD_S + 1, report)


def test_refetch_count_under_load_agrees_with_the_token_requests(stub_idp, upstream, start_relay, sensitive):
    _, report, admin = refused_under_load(start_relay, stub_idp, upstream, on_scrape=scrapes_to(sensitive),
                                          minTokenAgeForRetrySeconds=1)

    def settled(m: Metrics) -> bool:
        return m.total(REFUSALS, identity=IDENTITY, action="refetch") == len(stub_idp.token_requests()) - 1

    m = admin.wait_for(settled, f"{REFUSALS}{{action=refetch}} = the token requests after the first")
    actions = m.by(REFUSALS, "action", identity=IDENTITY)
    assert set(actions) <= {"refetch", "passed"}, actions
    assert actions.get("refetch", 0) >= 1, actions
    # The passed refusals are the 401s wrk saw, give or take: wrk drops the answers still under
    # way when it stops (one per connection at most), and a replayed request may meet a 401 of
    # its own (one in EVERY; allowed: one per refetch).
    passed = actions.get("passed", 0)
    assert abs(report["non2xx"] - passed) <= 10 + actions["refetch"], \
        f"{report['non2xx']} 401s at the client, refusals counted {actions}:\n{report['out']}"
