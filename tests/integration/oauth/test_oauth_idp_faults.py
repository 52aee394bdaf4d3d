"""The IdP fails, scripted by the stub. With no valid token the relay answers at once with a
problem+json naming the identity: 502 when the IdP refused (an OAuth error, or an answer that is
not an OAuth answer: an HTML page, an empty 4xx, a redirect, a 200 that carries an `error`), 503 +
Retry-After when it is unreachable, too slow (also when its answer trickles in), overloaded (429) or
failing (5xx). A token still valid keeps being used."""

import json
import secrets
import time

import pytest

from deadlines import wait_until
from idp_processes import sha256
from idp_relay import assert_oauth_problem, bearer, oauth_route, retry_after_seconds, token_timeout_limits

pytestmark = pytest.mark.oauth

HTML = ("<!DOCTYPE html><html><head><title>Request blocked</title></head>"
        "<body><h1>Sorry, you have been blocked</h1></body></html>")


def failing_relay(start_relay, stub, upstream, spec: dict | None = None, limits: dict | None = None, **identity_options):
    if spec is not None:
        stub.script(default=spec)
    return start_relay([oauth_route(upstream, "/", "orders")], limits=limits,
                       identities={"orders": stub.identity(**identity_options)})


def problem(relay, sensitive, status: int, oauth_error: str | None = None) -> tuple[dict, object]:
    resp = relay.request("GET", "/orders/1")
    sensitive.add_output(f"problem body ({resp.status})", resp.body)
    return assert_oauth_problem(resp, status, identity="orders", oauth_error=oauth_error), resp


@pytest.mark.parametrize("error, status", [
    ("invalid_client", 401), ("invalid_grant", 400), ("invalid_scope", 400), ("unauthorized_client", 400),
    ("unsupported_grant_type", 400), ("invalid_request", 400), ("account_locked", 403),
])
def test_an_oauth_error_gives_502_with_the_error_and_its_description(stub_idp, upstream, start_relay, sensitive,
                                                                     error, status):
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "oauth_error", "status": status, "error": error,
                                                             "error_description": f"the IdP says {error}"})
    doc, _ = problem(relay, sensitive, 502, oauth_error=error)
    assert doc.get("oauthErrorDescription") == f"the IdP says {error}"


def test_429_with_retry_after_gives_503_with_retry_after(stub_idp, upstream, start_relay, sensitive):
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "raw", "status": 429, "retry_after": 7,
                                                             "content_type": "text/plain", "body": "slow down"})
    doc, resp = problem(relay, sensitive, 503)
    assert 1 <= retry_after_seconds(resp) <= 8
    assert "429" in doc["detail"]


def test_the_idps_retry_after_is_honoured(stub_idp, upstream, start_relay, sensitive):
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "raw", "status": 429, "retry_after": 30,
                                                             "content_type": "text/plain", "body": "slow down"})
    _, resp = problem(relay, sensitive, 503)
    until = time.monotonic() + 1.5
    while time.monotonic() < until:  # requests during the IdP's Retry-After fail fast, without asking it
        _, resp = problem(relay, sensitive, 503)
        assert retry_after_seconds(resp) >= 10
        time.sleep(0.1)
    assert len(stub_idp.token_requests()) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_an_idp_5xx_gives_503_naming_the_status(stub_idp, upstream, start_relay, sensitive, status):
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "raw", "status": status,
                                                             "content_type": "text/plain", "body": "upstream trouble"})
    doc, _ = problem(relay, sensitive, 503)
    assert str(status) in doc["detail"]


def test_a_slow_idp_beyond_the_timeout_gives_503(stub_idp, upstream, start_relay, sensitive):
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "token", "expires_in": 3600, "delay_ms": 15000},
                          limits=token_timeout_limits(1))
    started = time.monotonic()
    problem(relay, sensitive, 503)
    assert time.monotonic() - started < 5


def test_an_unreachable_idp_gives_503(stub_idp, upstream, start_relay, sensitive, closed_port):
    relay = failing_relay(start_relay, stub_idp, upstream, tokenUrl=f"http://127.0.0.1:{closed_port}/o/token/")
    problem(relay, sensitive, 503)


@pytest.mark.parametrize("status, expected", [(403, 502), (404, 502), (200, 502), (502, 503)])
def test_an_html_page_is_reported_with_its_status_and_content_type(stub_idp, upstream, start_relay, sensitive,
                                                                   status, expected):
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "raw", "status": status,
                                                             "content_type": "text/html; charset=utf-8", "body": HTML})
    doc, _ = problem(relay, sensitive, expected)
    assert str(status) in doc["detail"]
    assert "text/html" in doc["detail"]


def test_an_empty_400_is_reported_with_its_status(stub_idp, upstream, start_relay, sensitive):
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "raw", "status": 400, "body": ""})
    doc, _ = problem(relay, sensitive, 502)
    assert "400" in doc["detail"]


def test_a_token_answer_without_access_token_gives_502(stub_idp, upstream, start_relay, sensitive):
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "token", "expires_in": 3600,
                                                             "fields": {"token": "accessToken"}})
    problem(relay, sensitive, 502)


def test_a_redirect_from_the_token_endpoint_is_not_followed(start_stub_idp, upstream, start_relay, sensitive):
    stub, elsewhere = start_stub_idp(), start_stub_idp()
    relay = failing_relay(start_relay, stub, upstream, {"kind": "raw", "status": 307, "body": "",
                                                         "headers": [["Location", elsewhere.token_url]]})
    problem(relay, sensitive, 502)
    assert elsewhere.token_requests() == [], "the relay followed the redirect: the secret went to another endpoint"


def test_a_200_carrying_a_token_and_an_error_is_refused(stub_idp, upstream, start_relay, sensitive):
    token = sensitive.add("the token in the error answer", "tok-" + secrets.token_urlsafe(24))
    body = json.dumps({"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                       "error": "invalid_client", "error_description": "client disabled"})
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "raw", "status": 200,
                                                             "content_type": "application/json", "body": body})
    doc, resp = problem(relay, sensitive, 502, oauth_error="invalid_client")
    assert doc.get("oauthErrorDescription") == "client disabled"
    assert token.encode() not in resp.body


def test_an_answer_dripping_in_is_cut_off_by_the_token_request_deadline(stub_idp, upstream, start_relay, sensitive):
    # About 200 bytes, one every 50 ms: 10 s to arrive in full, were each byte to extend the deadline.
    relay = failing_relay(start_relay, stub_idp, upstream, {"kind": "token", "expires_in": 3600, "drip_ms": 50},
                          limits=token_timeout_limits(1))
    started = time.monotonic()
    doc, _ = problem(relay, sensitive, 503)
    assert time.monotonic() - started < 4
    assert "did not answer within" in doc["detail"], doc


def test_a_valid_token_keeps_being_used_while_the_idp_fails(stub_idp, upstream, start_relay):
    stub_idp.script({"kind": "token", "expires_in": 4},
                    default={"kind": "raw", "status": 500, "content_type": "text/plain", "body": "down"})
    relay = failing_relay(start_relay, stub_idp, upstream)
    first = sha256(bearer(relay.request("GET", "/x")))
    [issued] = stub_idp.token_requests()
    wait_until(lambda: any(r["status"] == 500 for r in stub_idp.token_requests()), 5, "a failed refresh")
    assert time.time() < issued["answered"] + 3.5, "too late to tell: the first token is about to expire"
    assert sha256(bearer(relay.request("GET", "/x"))) == first
