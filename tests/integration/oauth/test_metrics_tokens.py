"""The token series of `GET /metrics` on the admin listener: token requests by identity and outcome
(success, refused: the IdP said no for good, unavailable: 5xx, 429, timeout, unreachable), and the
token expiry gauge (Unix time; 0 without a token) — against the IdP stub, and django-oauth-toolkit
for the happy path. Every scrape's body goes to `sensitive`: no token or secret may show in it.

The relay fetches a token at start-up; the stub's records (`token_requests()`) are the reference
for how many token requests there were."""

from __future__ import annotations

import json
import time

import pytest

from admin_client import Metrics, start_with_admin
from deadlines import wait_until
from idp_relay import assert_oauth_problem, bearer, oauth_route, token_timeout_limits
from processes import route

pytestmark = pytest.mark.oauth

REQUESTS = "oauth_relay_token_requests_total"
EXPIRY = "oauth_relay_token_expiry_timestamp_seconds"
LIFETIME = 3600


def start_with_orders(start_relay, sensitive, upstream, identity: dict, limits: dict | None = None):
    """A relay with the identity `orders` and an admin listener whose every scrape body goes to
    `sensitive` (no token or secret may show in it)."""
    scrapes = []

    def record(body: bytes) -> None:
        scrapes.append(body)
        sensitive.add_output(f"GET /metrics (scrape {len(scrapes)})", body)

    return start_with_admin(start_relay, [oauth_route(upstream, "/", "orders", name="orders-api")], on_scrape=record,
                            limits=limits, identities={"orders": identity})


def expiry(m: Metrics) -> float | None:
    """The expiry gauge of identity orders; None when the series is not exported."""
    return m.value(EXPIRY, identity="orders")


def assert_expiry_between(m: Metrics, low: float, high: float) -> float:
    found = expiry(m)
    assert found is not None, "no expiry series for identity orders"
    assert low <= found <= high, (f"expiry {found:.1f} not within [{low:.1f}, {high:.1f}] "
                                  f"(now {time.time():.1f}, the token lives {LIFETIME}s)")
    return found


# ---------------------------------------------------------------------------------------------
# Success, expiry, forgetting the token.

def test_a_token_fetched_is_counted_as_success_with_its_expiry(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default={"kind": "token", "expires_in": LIFETIME})
    t0 = time.time()
    relay, admin = start_with_orders(start_relay, sensitive, upstream, stub_idp.identity())
    token = bearer(relay.request("GET", "/orders/1"))
    t1 = time.time()
    m = admin.wait_for(lambda m: m.total(REQUESTS, identity="orders") >= 1 and (expiry(m) or 0) > 0,
                       "the token request counted and the expiry exported")
    assert len(stub_idp.token_requests()) == 1
    assert m.by(REQUESTS, "outcome", identity="orders") == {"success": 1}
    assert_expiry_between(m, t0 + LIFETIME - 1, t1 + LIFETIME + 1)
    # Neither the token nor the client's secret shows (the autouse leak scan checks 8-character
    # pieces of every token and secret in every scrape too).
    assert token not in m.text
    assert stub_idp.client_secret not in m.text
    assert set(m.by(REQUESTS, "identity")) == {"orders"}


def test_deleting_the_token_zeroes_the_expiry_until_the_next_token(stub_idp, upstream, start_relay, sensitive):
    # The first token at once; later ones after 2 s, so the gauge's 0 is there to be seen even if
    # the relay fetches again right after the DELETE.
    stub_idp.script({"kind": "token", "expires_in": LIFETIME},
                    default={"kind": "token", "expires_in": LIFETIME, "delay_ms": 2000})
    relay, admin = start_with_orders(start_relay, sensitive, upstream, stub_idp.identity())
    before = bearer(relay.request("GET", "/orders/1"))
    first = expiry(admin.wait_for(lambda m: (expiry(m) or 0) > 0, "the first expiry"))

    t_delete = time.time()
    assert admin.request("DELETE", "/identities/orders/token").status == 204
    admin.wait_for(lambda m: expiry(m) == 0, "the expiry gauge 0 after DELETE /identities/orders/token",
                   timeout=1.5)

    after = bearer(relay.request("GET", "/orders/2", timeout=10))
    t_after = time.time()
    assert after != before
    m = admin.wait_for(lambda m: m.total(REQUESTS, identity="orders", outcome="success") >= 2
                       and (expiry(m) or 0) > 0, "the second token counted and its expiry exported")
    assert m.by(REQUESTS, "outcome", identity="orders") == {"success": 2}
    assert len(stub_idp.token_requests()) == 2
    second = assert_expiry_between(m, t_delete + LIFETIME - 1, t_after + LIFETIME + 1)
    assert second > first
    assert before not in m.text and after not in m.text


# ---------------------------------------------------------------------------------------------
# Failures.

UNAVAILABLE = {
    "500": ({"kind": "raw", "status": 500, "content_type": "text/plain", "body": "boom"}, None),
    "503": ({"kind": "raw", "status": 503, "content_type": "text/plain", "body": "down"}, None),
    "429": ({"kind": "raw", "status": 429, "retry_after": 30, "content_type": "text/plain", "body": "slow down"}, None),
    "closed": ({"kind": "close"}, None),
    "timeout": ({"kind": "token", "expires_in": LIFETIME, "delay_ms": 5000}, token_timeout_limits(0.5)),
}


def counted_like_the_stub(stub, outcome: str):
    """A predicate: every token request the stub received is counted, under `outcome`."""
    def check(m: Metrics) -> bool:
        counted = m.total(REQUESTS, identity="orders", outcome=outcome)  # before the stub's count:
        return counted >= 1 and counted == len(stub.token_requests())  # the stub records first
    return check


@pytest.mark.parametrize("case", list(UNAVAILABLE))
def test_an_idp_that_cannot_answer_now_is_counted_as_unavailable(stub_idp, upstream, start_relay, sensitive, case):
    spec, limits = UNAVAILABLE[case]
    stub_idp.script(default=spec)
    relay, admin = start_with_orders(start_relay, sensitive, upstream, stub_idp.identity(), limits=limits)
    resp = relay.request("GET", "/orders/1", timeout=10)
    sensitive.add_output("problem body", resp.body)
    assert_oauth_problem(resp, 503, identity="orders")
    m = admin.wait_for(counted_like_the_stub(stub_idp, "unavailable"),
                       "every token request counted as unavailable", timeout=8)
    assert set(m.by(REQUESTS, "outcome", identity="orders")) == {"unavailable"}
    assert expiry(m) in (None, 0), f"expiry {expiry(m)} without a token"


def test_an_oauth_error_is_counted_as_refused(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default={"kind": "oauth_error", "status": 401, "error": "invalid_client",
                             "error_description": "unknown client"})
    relay, admin = start_with_orders(start_relay, sensitive, upstream, stub_idp.identity())
    resp = relay.request("GET", "/orders/1")
    sensitive.add_output("problem body", resp.body)
    assert_oauth_problem(resp, 502, identity="orders", oauth_error="invalid_client")
    m = admin.wait_for(counted_like_the_stub(stub_idp, "refused"), "every token request counted as refused")
    assert set(m.by(REQUESTS, "outcome", identity="orders")) == {"refused"}
    assert expiry(m) in (None, 0), f"expiry {expiry(m)} without a token"
    assert stub_idp.client_secret not in m.text


def test_success_after_failures_counts_each_outcome(stub_idp, upstream, start_relay, sensitive):
    # 500 first (start-up fetch), then tokens: the relay retries after its backoff.
    stub_idp.script({"kind": "raw", "status": 500, "content_type": "text/plain", "body": "boom"},
                    default={"kind": "token", "expires_in": LIFETIME})
    relay, admin = start_with_orders(start_relay, sensitive, upstream, stub_idp.identity())
    wait_until(lambda: relay.request("GET", "/orders/1").status == 200, 15, "a token after the failure")
    m = admin.wait_for(lambda m: m.total(REQUESTS, identity="orders", outcome="success") >= 1,
                       "the successful token request counted")
    records = stub_idp.token_requests()
    assert [r["status"] for r in records] == [500, 200], [r["status"] for r in records]
    assert m.by(REQUESTS, "outcome", identity="orders") == {"unavailable": 1, "success": 1}
    assert (expiry(m) or 0) > time.time() + LIFETIME - 100


# ---------------------------------------------------------------------------------------------
# Reloads.

def test_removing_the_identity_drops_its_expiry_but_keeps_its_counts(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default={"kind": "token", "expires_in": LIFETIME})
    relay, admin = start_with_orders(start_relay, sensitive, upstream, stub_idp.identity())
    bearer(relay.request("GET", "/orders/1"))
    admin.wait_for(lambda m: (expiry(m) or 0) > 0, "the expiry exported")

    config = json.loads(relay.config_path.read_text())
    config["routes"] = [route(upstream, "/", name="plain")]
    config.pop("identities", None)
    relay.config_path.write_text(json.dumps(config))
    resp = admin.request("POST", "/reload")
    assert resp.status == 200, resp.body
    assert relay.request("GET", "/x").echo_headers("Authorization") == []
    m = admin.wait_for(lambda m: expiry(m) is None, "the expiry series of identity orders dropped")
    assert m.by(REQUESTS, "outcome", identity="orders") == {"success": 1}
    assert m.by("oauth_relay_config_reloads_total", "outcome") == {"applied": 1, "rejected": 0}


# ---------------------------------------------------------------------------------------------
# A real authorization server.

def test_a_django_token_is_counted_with_its_expiry(django_idp, upstream, start_relay, sensitive):
    t0 = time.time()
    relay, admin = start_with_orders(start_relay, sensitive, upstream, django_idp.identity("orders-cc"))
    token = bearer(relay.request("GET", "/orders/1"))
    t1 = time.time()
    assert django_idp.whoami(token).status == 200
    m = admin.wait_for(lambda m: m.total(REQUESTS, identity="orders") >= 1 and (expiry(m) or 0) > 0,
                       "the token request counted and the expiry exported")
    [record] = django_idp.token_requests()
    assert record["status"] == 200
    assert m.by(REQUESTS, "outcome", identity="orders") == {"success": 1}
    assert_expiry_between(m, t0 + django_idp.access_token_seconds - 1, t1 + django_idp.access_token_seconds + 1)
    assert token not in m.text
