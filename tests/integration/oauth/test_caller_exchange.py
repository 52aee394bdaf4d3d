"""Tokens per caller: an identity with `subjectTokenFrom: "caller"` (RFC 8693 token exchange) or
`assertionFrom: "caller"` (Entra ID's on-behalf-of flow) exchanges each request's own bearer token
for a token of that caller, cached per caller in a bounded LRU (`maxCallers`) with one exchange in
flight per caller.

The token endpoint is exchange_stub.py: it verifies every field of every exchange (grant_type,
the subject or assertion, subject_token_type, audience, resource, scope, requested_token_use, the
client authentication, and nothing else) and issues `xt.<sha256 of the subject>.<serial>`, so the
echo upstream shows whose token each request carried. Its `failures` must stay empty.
"""

from __future__ import annotations

import hashlib
import secrets
import sys
import threading
import time
from pathlib import Path

import pytest

from admin_client import AdminClient, start_with_admin
from deadlines import scaled, wait_until
from http_client import RawConnection, assert_problem, build_request
from idp_processes import HERE, _IdP, tricky_secret
from idp_relay import bearer, bearer_in_echo, oauth_route, run_token_command, token_command_config
from processes import LOOPBACK
from relay_build import SANITIZER

pytestmark = pytest.mark.oauth

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
AUDIENCE, RESOURCE, SCOPE = "orders-api", "https://orders.internal/", "orders.read"
LOOKUPS = "oauth_relay_caller_cache_lookups_total"
EXCHANGES = "oauth_relay_caller_exchanges_total"


class ExchangeStubIdP(_IdP):
    name = "exchange stub"

    def __init__(self, log_path: Path):
        super().__init__(log_path)
        self.host = LOOPBACK
        self.client_id = f"relay client.{secrets.token_hex(3)}"
        self.client_secret = tricky_secret("obo")

    def start(self) -> "ExchangeStubIdP":
        self._spawn([sys.executable, str(HERE / "exchange_stub.py"), "--host", self.host, "--port", "0"], 10)
        return self

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    def script(self, mode: str = "token_exchange", auth: str = "basic", **entries) -> None:
        expect = {"subject_token_type": ACCESS_TOKEN_TYPE, "audience": AUDIENCE, "resource": [RESOURCE], "scope": SCOPE}
        if mode == "on_behalf_of":
            expect = {"scope": "api://orders/.default"}
        self.control("PUT", "/_stub/script", {"mode": mode, "client": {"auth": auth, "id": self.client_id,
                                                                       "secret": self.client_secret},
                                              "expect": expect, **entries})

    def state(self) -> dict:
        return self.control("GET", "/_stub/state")

    def release(self) -> None:
        self.control("POST", "/_stub/release")

    def assert_verified(self) -> dict:
        """The state, once every request the stub received passed its checks."""
        state = self.state()
        assert state["failures"] == [], f"exchanges the stub refused: {state['failures']}"
        return state


@pytest.fixture
def exchange_idp(tmp_path, sensitive):
    idp = ExchangeStubIdP(tmp_path / "exchange-stub.log").start()
    sensitive.add("the client secret", idp.client_secret)
    yield idp
    idp.kill()


def exchange_identity(idp: ExchangeStubIdP, **options) -> dict:
    return {"tokenUrl": idp.token_url, "grant": TOKEN_EXCHANGE, "subjectTokenFrom": "caller", "clientId": idp.client_id,
            "clientSecret": idp.client_secret, "audience": AUDIENCE, "resource": [RESOURCE], "scope": SCOPE, **options}


def start(start_relay, upstream, identity: dict, workers: int = 1, **top):
    return start_with_admin(start_relay, [oauth_route(upstream, "/", "orders", name="orders-api")],
                            identities={"orders": identity}, workers=workers, **top)


def caller_token() -> str:
    return secrets.token_urlsafe(32)


def issued_prefix(caller: str) -> str:
    """The start of every token the stub issues for `caller`."""
    return f"xt.{hashlib.sha256(caller.encode()).hexdigest()[:24]}."


def get(relay, caller: str | None, target: str = "/orders", conn: RawConnection | None = None):
    headers = [("Authorization", f"Bearer {caller}")] if caller is not None else []
    if conn is not None:
        return conn.request("GET", target, headers)
    return relay.request("GET", target, headers=headers)


def lookups(admin: AdminClient) -> dict[str, float]:
    return {"hit": 0.0, "miss": 0.0, "wait": 0.0, **admin.scrape().by(LOOKUPS, "result", identity="orders")}


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def requests_per_thread(relay, jobs: list[list[str]]) -> list[tuple[str, str]]:
    """Each job (a list of caller tokens, in order) on a keep-alive connection of its own thread;
    returns every (caller, token the upstream received)."""
    seen: list[tuple[str, str]] = []
    errors: list[str] = []
    lock = threading.Lock()

    def run(callers: list[str]) -> None:
        try:
            with RawConnection(relay.host, relay.port, timeout=20) as conn:
                for caller in callers:
                    token = bearer(get(relay, caller, conn=conn))
                    with lock:
                        seen.append((caller, token))
        except Exception as e:  # reported below, with the others
            with lock:
                errors.append(repr(e))

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(scaled(40))
    assert not any(thread.is_alive() for thread in threads), "request threads still running"
    assert not errors, errors[:3]
    return seen


# ---------------------------------------------------------------------------------------------
# (a) Each caller's token, exchanged for that caller.

def test_each_caller_reaches_the_upstream_with_the_token_exchanged_for_it(exchange_idp, upstream, start_relay, sensitive):
    exchange_idp.script()
    relay, admin = start(start_relay, upstream, exchange_identity(exchange_idp))
    callers = [sensitive.add(f"caller {i}", caller_token()) for i in range(3)]
    identities = admin.request("GET", "/identities").json()["identities"]
    assert identities[0]["state"] == "per-caller" and identities[0]["callers"] == {"entries": 0, "maxCallers": 10000}, identities
    assert exchange_idp.state()["exchanges"] == 0, "an identity on behalf of its callers fetched a token of its own"

    tokens = {}
    for caller in callers:
        first, second = bearer(get(relay, caller)), bearer(get(relay, caller))
        assert first == second, "a caller's second request did not reuse its token"
        assert first.startswith(issued_prefix(caller)), "the upstream received a token exchanged for another subject"
        tokens[caller] = sensitive.add(f"token of {caller[:4]}", first)
    assert len(set(tokens.values())) == 3

    state = exchange_idp.assert_verified()
    assert state["exchanges"] == 3 and sorted(state["by_subject"].values()) == [1, 1, 1], state
    metrics = admin.scrape()
    sensitive.add_output("GET /metrics", metrics.text)
    assert metrics.by(EXCHANGES, "outcome", identity="orders") == {"issued": 3}
    assert metrics.by(LOOKUPS, "result", identity="orders") == {"hit": 3, "miss": 3, "wait": 0}
    assert metrics.value("oauth_relay_caller_cache_entries", identity="orders") == 3
    identities = admin.request("GET", "/identities").json()["identities"]
    assert identities[0]["callers"]["entries"] == 3, identities


def test_the_token_command_and_refresh_say_the_identity_has_tokens_per_caller(exchange_idp, upstream, start_relay, tmp_path,
                                                                              sensitive):
    config = token_command_config(tmp_path / "token.json", upstream, {"orders": exchange_identity(exchange_idp)})
    result = run_token_command(config, "orders", sensitive)
    assert result.returncode == 1 and result.stdout == ""
    assert "identity orders has no token of its own: it exchanges each caller's token" in result.stderr, result.stderr
    relay, admin = start(start_relay, upstream, exchange_identity(exchange_idp))
    doc = assert_problem(admin.request("POST", "/identities/orders/refresh"), 409)
    assert "no token of its own to refresh" in doc["detail"], doc


# ---------------------------------------------------------------------------------------------
# (b) 1,000 callers x 10 requests; (c) 300 concurrent requests of one caller.

def test_a_thousand_callers_ten_requests_each_make_exactly_a_thousand_exchanges(exchange_idp, upstream, start_relay):
    exchange_idp.script()
    relay, admin = start(start_relay, upstream, exchange_identity(exchange_idp), workers=2)
    callers = [caller_token() for _ in range(1000)]
    threads = 8
    # Each thread asks for its own callers, round after round: no two requests of a caller at once.
    jobs = [[caller for _ in range(10) for caller in callers[t::threads]] for t in range(threads)]
    started = time.monotonic()
    seen = requests_per_thread(relay, jobs)
    elapsed = time.monotonic() - started
    assert len(seen) == 10_000
    by_caller: dict[str, set[str]] = {}
    for caller, token in seen:
        assert token.startswith(issued_prefix(caller)), "a caller's request carried another caller's token"
        by_caller.setdefault(caller, set()).add(token)
    assert all(len(tokens) == 1 for tokens in by_caller.values())
    state = exchange_idp.assert_verified()
    print(f"1,000 callers x 10 requests in {elapsed:.2f} s: {state['exchanges']} exchanges")
    assert state["exchanges"] == 1000 and set(state["by_subject"].values()) == {1}
    assert lookups(admin) == {"hit": 9000, "miss": 1000, "wait": 0}


def test_three_hundred_concurrent_requests_of_a_new_caller_make_one_exchange(exchange_idp, upstream, start_relay):
    exchange_idp.script(hold=True)
    relay, admin = start(start_relay, upstream, exchange_identity(exchange_idp), workers=2)
    caller = caller_token()
    payload = build_request("GET", "/orders", [("Authorization", f"Bearer {caller}"), ("Connection", "close")])
    conns = [RawConnection(relay.host, relay.port, timeout=20) for _ in range(300)]
    try:
        for conn in conns:
            conn.send(payload)
        # Every request looked its caller's token up: one began the exchange, the others joined it.
        admin.wait_for(lambda m: m.by(LOOKUPS, "result", identity="orders") == {"hit": 0, "miss": 1, "wait": 299},
                       "300 requests parked on one exchange", timeout=20)
        wait_until(lambda: exchange_idp.state()["held"] == 1, 10, "the exchange held at the stub")
        state = exchange_idp.state()
        assert state["exchanges"] == 1 and state["held"] == 1, state
        exchange_idp.release()
        tokens = {bearer_in_echo(conn.read_final_response(timeout=20).json()) for conn in conns}
    finally:
        for conn in conns:
            conn.close()
    assert len(tokens) == 1 and tokens.pop().startswith(issued_prefix(caller))
    assert exchange_idp.assert_verified()["exchanges"] == 1


# ---------------------------------------------------------------------------------------------
# (d) The LRU bound.

def test_the_bound_of_callers_keeps_entries_and_memory_flat(exchange_idp, upstream, start_relay):
    # Tokens of 4 KiB: 2,000 entries kept would hold some 16 MiB more.
    exchange_idp.script(token_bytes=4096)
    relay, admin = start(start_relay, upstream, exchange_identity(exchange_idp, maxCallers=100))
    callers = [caller_token() for _ in range(2000)]
    figures = []
    for batch in range(8):
        part = callers[batch * 250:(batch + 1) * 250]
        requests_per_thread(relay, [part[t::4] for t in range(4)])
        entries = admin.scrape().value("oauth_relay_caller_cache_entries", identity="orders")
        figures.append((250 * (batch + 1), entries, rss_kib(relay.pid)))
        assert entries is not None and entries <= 100, f"{entries} entries with maxCallers 100"
    print("callers, entries, RSS KiB: " + "; ".join(f"{n}, {e:.0f}, {r}" for n, e, r in figures))
    warm = figures[1][2]
    growth = max(rss for _, _, rss in figures[2:]) - warm
    print(f"RSS after 500 callers {warm} KiB, growth over the next 1,500: {growth} KiB")
    if SANITIZER is None:
        assert growth < 4096, f"RSS grew {growth} KiB past warm-up with maxCallers 100"
    else:
        print(f"RSS not bounded under the {SANITIZER} sanitizer (freed memory stays in its quarantine)")
    metrics = admin.scrape()
    assert metrics.value("oauth_relay_caller_cache_evictions_total", identity="orders") == 1900
    assert exchange_idp.assert_verified()["exchanges"] == 2000


# ---------------------------------------------------------------------------------------------
# (e) Refusals are the caller's; an outage is 503.

def test_a_refused_caller_gets_401_or_403_and_other_callers_go_on(exchange_idp, upstream, start_relay, sensitive):
    refused, forbidden, other, late = (sensitive.add(f"caller {i}", caller_token()) for i in range(4))
    digest = lambda caller: hashlib.sha256(caller.encode()).hexdigest()  # noqa: E731
    exchange_idp.script(refuse={
        digest(refused): {"status": 400, "error": "invalid_grant", "error_description": "subject token revoked"},
        digest(forbidden): {"status": 400, "error": "invalid_scope", "error_description": "orders.read not granted"},
    })
    relay, admin = start(start_relay, upstream, exchange_identity(exchange_idp))

    resp = get(relay, refused)
    doc = assert_problem(resp, 401, route="orders-api")
    assert doc["oauthError"] == "invalid_grant" and doc["oauthErrorDescription"] == "subject token revoked", doc
    assert resp.header("www-authenticate") == 'Bearer realm="oauth-relay", error="invalid_token"'
    sensitive.add_output("401 body", resp.body)
    resp = get(relay, forbidden)
    doc = assert_problem(resp, 403, route="orders-api")
    assert doc["oauthError"] == "invalid_scope", doc
    assert resp.header("www-authenticate") == 'Bearer realm="oauth-relay", error="insufficient_scope"'
    assert bearer(get(relay, other)).startswith(issued_prefix(other))
    # The refusal stands for that caller a while: no second exchange.
    assert_problem(get(relay, refused), 401)
    assert exchange_idp.state()["by_subject"][digest(refused)] == 1

    exchange_idp.script(outage={"status": 503, "retry_after": "3"})
    resp = get(relay, late)
    doc = assert_problem(resp, 503, route="orders-api")
    assert resp.header("retry-after") == "3", resp.headers
    # The identity and the route are not failing: a caller with a token goes on.
    assert bearer(get(relay, other)).startswith(issued_prefix(other))
    identities = admin.request("GET", "/identities").json()["identities"]
    assert identities[0]["state"] == "per-caller", identities
    assert admin.scrape().by(EXCHANGES, "outcome", identity="orders") == {"issued": 1, "refused": 2, "unavailable": 1}
    exchange_idp.assert_verified()


def test_an_upstream_refusal_drops_the_callers_token_and_replays_once(exchange_idp, upstream, start_relay, sensitive):
    exchange_idp.script()
    relay, admin = start(start_relay, upstream, exchange_identity(exchange_idp))
    caller, other = sensitive.add("caller", caller_token()), sensitive.add("other", caller_token())
    assert bearer(get(relay, other)).startswith(issued_prefix(other))
    resp = get(relay, caller, target="/status/401")
    assert resp.status == 401 and resp.json()["target"] == "/status/401"
    state = exchange_idp.assert_verified()
    # The first token refused, a second exchanged and refused too: the answer goes to the client.
    assert state["by_subject"][hashlib.sha256(caller.encode()).hexdigest()] == 2, state
    # Another caller's token was not touched.
    assert bearer(get(relay, other)).startswith(issued_prefix(other))
    assert exchange_idp.state()["by_subject"][hashlib.sha256(other.encode()).hexdigest()] == 1


# ---------------------------------------------------------------------------------------------
# (f) No bearer token.

def test_a_request_without_a_bearer_token_is_401_with_a_challenge(exchange_idp, upstream, start_relay):
    exchange_idp.script()
    relay, _ = start(start_relay, upstream, exchange_identity(exchange_idp))
    for headers in ([], [("Authorization", "Basic dXNlcjpwYXNz")]):
        resp = relay.request("GET", "/orders", headers=headers)
        doc = assert_problem(resp, 401, route="orders-api")
        assert doc["type"] == "urn:oauth-relay:problem:caller-token-required", doc
        assert resp.header("www-authenticate") == 'Bearer realm="oauth-relay"', headers
    # Credentials that are not one token68 (RFC 6750 §2.1), or two Authorization fields: 400.
    for headers in ([("Authorization", "Bearer a,b")], [("Authorization", "Bearer a"), ("Authorization", "Bearer b")]):
        resp = relay.request("GET", "/orders", headers=headers)
        doc = assert_problem(resp, 400, route="orders-api")
        assert 'error="invalid_request"' in resp.header("www-authenticate"), resp.headers
    assert exchange_idp.assert_verified()["exchanges"] == 0


# ---------------------------------------------------------------------------------------------
# (g) Entra ID's on-behalf-of form.

def test_on_behalf_of_sends_the_callers_token_as_the_assertion(exchange_idp, upstream, start_relay, sensitive):
    exchange_idp.script(mode="on_behalf_of", auth="post")
    identity = {"tokenUrl": exchange_idp.token_url, "grant": JWT_BEARER, "assertionFrom": "caller", "clientAuth": "post",
                "clientId": exchange_idp.client_id, "clientSecret": exchange_idp.client_secret, "scope": "api://orders/.default"}
    relay, _ = start(start_relay, upstream, identity, workers=2)
    for caller in (sensitive.add("caller a", caller_token()), sensitive.add("caller b", caller_token())):
        token = bearer(get(relay, caller))
        assert token.startswith(issued_prefix(caller))
        assert bearer(get(relay, caller)) == token
    assert exchange_idp.assert_verified()["exchanges"] == 2
