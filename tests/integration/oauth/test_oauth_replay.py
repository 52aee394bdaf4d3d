"""The upstream says the token is bad (a status in the route's `retryOnStatus`, default [401]): the
relay drops that token, fetches one new token and replays the request once, when it can.
(The echo upstream's /status/NNN answers NNN every time, so the replay's answer reaches the client.)
The same with django-oauth-toolkit revoking a token is in test_oauth_django.py."""

import hashlib

import pytest

from idp_processes import sha256
from idp_relay import oauth_route

pytestmark = pytest.mark.oauth


def start(start_relay, stub, upstream, **route_options):
    return start_relay([oauth_route(upstream, "/", "orders", **route_options)], identities={"orders": stub.identity()})


def echoed_token_sha(resp) -> str:
    """The fingerprint of the bearer token in the echo body of any status."""
    [value] = resp.echo_headers("Authorization")
    return sha256(value.partition(" ")[2])


def issued(stub) -> list[str]:
    return [sha256(r["issued"]["access_token"]) for r in stub.token_requests() if r["issued"]]


def test_upstream_401_causes_one_new_token_and_one_replay(stub_idp, upstream, start_relay):
    relay = start(start_relay, stub_idp, upstream)
    resp = relay.request("GET", "/status/401")
    assert resp.status == 401
    assert upstream.stats()["requests_started"] == 2
    tokens = issued(stub_idp)
    assert len(tokens) == 2
    assert echoed_token_sha(resp) == tokens[1], "the replay did not carry the new token"


def test_a_replayed_request_carries_its_body_again(stub_idp, upstream, start_relay):
    relay = start(start_relay, stub_idp, upstream)
    body = bytes(range(256)) * 8
    resp = relay.request("POST", "/status/401", headers=[("Content-Type", "application/octet-stream")], body=body)
    assert resp.status == 401
    assert upstream.stats()["requests_started"] == 2
    echo = resp.json()
    assert echo["body_length"] == len(body)
    assert echo["body_sha256"] == hashlib.sha256(body).hexdigest()


def test_a_body_over_the_replay_limit_is_not_replayed(stub_idp, upstream, start_relay):
    relay = start(start_relay, stub_idp, upstream)
    body = b"x" * (256 * 1024)
    resp = relay.request("POST", "/status/401", body=body)
    assert resp.status == 401
    assert upstream.stats()["requests_started"] == 1


def test_a_status_outside_retry_on_status_is_passed_through(stub_idp, upstream, start_relay):
    relay = start(start_relay, stub_idp, upstream, retryOnStatus=[])
    resp = relay.request("GET", "/status/401")
    assert resp.status == 401
    assert upstream.stats()["requests_started"] == 1
    assert len(issued(stub_idp)) == 1


def test_retry_on_status_can_name_other_statuses(stub_idp, upstream, start_relay):
    relay = start(start_relay, stub_idp, upstream, retryOnStatus=[401, 403])
    resp = relay.request("GET", "/status/403")
    assert resp.status == 403
    assert upstream.stats()["requests_started"] == 2
    assert len(issued(stub_idp)) == 2
