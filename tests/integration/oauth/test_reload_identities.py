"""Reloading the configuration file with identities: an identity whose settings did not change
keeps its token (no token request), a changed one (any key, or a secret file's content) fetches a
new token at once, a removed one loses its routes and stops refreshing, an added one is fetched at
once; a file that is refused changes no identity. Against django-oauth-toolkit for the happy paths
(its /api/whoami shows the injected token is one it accepts) and the stub for the rest.

Tokens are compared by SHA-256, so a failing assertion shows no token.
"""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import unquote_plus

import pytest

from admin_client import (NOT_RELOADED, RELOADED, log_records, reload_under_wrk, rewrite, sighup, start_with_admin,
                          wait_for_log)
from deadlines import scaled, wait_until
from http_client import assert_problem, build_request
from idp_processes import form, header_values, sha256, tricky_secret
from idp_relay import bearer, oauth_route

pytestmark = pytest.mark.oauth


def token_of(resp) -> str:
    """The fingerprint of the token the relay injected into a request the echo upstream answered."""
    return sha256(bearer(resp))


def whoami(relay) -> dict:
    resp = relay.request("GET", "/api/whoami")
    assert resp.status == 200, f"django refused the injected token: {resp.status} {resp.body[:300]!r}"
    return resp.json()


def identity_names(admin) -> list[str]:
    resp = admin.request("GET", "/identities")
    assert resp.status == 200, resp.status
    return sorted(i["name"] for i in resp.json()["identities"])


def issued(record: dict) -> str:
    """The fingerprint of the access token a stub record issued."""
    return sha256(record["issued"]["access_token"])


def secret_sent(record: dict) -> str | None:
    """The client secret a stub token request carried (Basic credentials or the form)."""
    for auth in header_values(record, "authorization"):
        if auth[:6].lower() == "basic ":
            return unquote_plus(base64.b64decode(auth[6:].strip()).decode().partition(":")[2])
    return (form(record).get("client_secret") or [None])[0]


# ---------------------------------------------------------------------------------------------
# django-oauth-toolkit.

@pytest.mark.parametrize("change", [{"scope": "orders.read"}, {"clientAuth": "post"}], ids=["scope", "clientAuth"])
def test_an_unchanged_identity_keeps_its_token_and_a_changed_one_fetches_a_new_one(django_idp, upstream,
                                                                                   start_relay, change):
    identity = django_idp.identity("orders-cc", clientAuth="basic")
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/echo/", "orders")],
                                    identities={"orders": identity})
    first = token_of(relay.request("GET", "/echo/1"))
    assert len(django_idp.token_requests()) == 1

    # Same identity, one more route (to django, which checks the token itself).
    rewrite(relay, routes=[oauth_route(upstream, "/echo/", "orders"), oauth_route(django_idp, "/api/", "orders")])
    assert admin.reload_applied() == {"status": "applied", "routes": 2,
                                      "identities": {"kept": ["orders"], "started": [], "removed": []}}
    assert token_of(relay.request("GET", "/echo/2")) == first
    assert whoami(relay)["token_sha256"] == first
    assert len(django_idp.token_requests()) == 1, "a token request for an identity the reload did not change"
    record = wait_for_log(relay, RELOADED, 1)
    assert (record["identities_kept"], record["identities_started"], record["identities_removed"]) == (["orders"], [], [])

    # The identity changes: the next request carries a token fetched with the new settings.
    rewrite(relay, identities={"orders": {**identity, **change}})
    assert admin.reload_applied()["identities"] == {"kept": [], "started": ["orders"], "removed": []}
    third = token_of(relay.request("GET", "/echo/3"))
    assert third != first, "the changed identity's old token was injected after the reload"
    records = django_idp.token_requests()
    assert len(records) == 2, [r["status"] for r in records]
    assert records[1]["status"] == 200 and records[1]["access_token_sha256"] == third
    who = whoami(relay)
    assert who["token_sha256"] == third
    if "scope" in change:
        assert records[1]["scope"] == "orders.read" and who["scope"] == "orders.read"
    else:
        assert records[0]["client_auth"] == "basic" and records[1]["client_auth"] == "post"
    assert token_of(relay.request("GET", "/echo/4")) == third
    assert len(django_idp.token_requests()) == 2


def test_reloads_under_load_make_no_token_request_for_an_unchanged_identity(django_idp, start_relay):
    seconds, reloads = 5, 10
    identity = django_idp.identity("orders-cc")

    def api_route(generation: int) -> dict:
        return oauth_route(django_idp, "/api/", "orders", name="api", setHeaders={"X-Generation": str(generation)})

    relay, admin = start_with_admin(start_relay, [api_route(0)], identities={"orders": identity}, workers=2,
                                    accessLog=False)
    first = whoami(relay)["token_sha256"]
    assert len(django_idp.token_requests()) == 1

    def reload_once(i: int) -> None:
        rewrite(relay, routes=[api_route(i % 2)])
        assert admin.reload_applied()["identities"] == {"kept": ["orders"], "started": [], "removed": []}

    # Every request goes to django's /api/whoami: a request without a valid token is a 401 there
    # (and a 401 would make the relay fetch a new token, which the count below would show).
    # The whoami above is already one 2xx: wrk's first answers are those beyond it.
    reload_under_wrk(f"{relay.url}/api/whoami", connections=8, seconds=seconds, reloads=reloads,
                     answered=admin.answered_2xx, reload_once=reload_once, already=1)
    assert len(django_idp.token_requests()) == 1, "token requests under reload for an unchanged identity"
    assert whoami(relay)["token_sha256"] == first
    assert len(log_records(relay, RELOADED)) == reloads


# ---------------------------------------------------------------------------------------------
# The stub.

def test_a_removed_identity_loses_its_routes_and_stops_refreshing_and_an_added_one_is_fetched(
        start_stub_idp, upstream, start_relay):
    orders, billing, shipping = start_stub_idp(), start_stub_idp(), start_stub_idp()
    billing.script(default={"kind": "token", "expires_in": 2})  # refreshed every second or two
    relay, admin = start_with_admin(
        start_relay, [oauth_route(upstream, "/orders/", "orders"), oauth_route(upstream, "/billing/", "billing")],
        identities={"orders": orders.identity(), "billing": billing.identity()})
    orders_token = token_of(relay.request("GET", "/orders/1"))
    assert relay.request("GET", "/billing/1").status == 200
    wait_until(lambda: len(billing.token_requests()) >= 2, 6, "billing's token refreshed before the reload")
    assert identity_names(admin) == ["billing", "orders"]

    rewrite(relay, routes=[oauth_route(upstream, "/orders/", "orders"), oauth_route(upstream, "/shipping/", "shipping")],
            identities={"orders": orders.identity(), "shipping": shipping.identity()})
    assert admin.reload_applied()["identities"] == {"kept": ["orders"], "started": ["shipping"], "removed": ["billing"]}
    billing_requests = len(billing.token_requests())

    assert_problem(relay.request("GET", "/billing/2"), 404)
    assert identity_names(admin) == ["orders", "shipping"]
    # The added identity is fetched at once, before any request needs it; then the relay is ready.
    [shipping_record] = wait_until(shipping.token_requests, 5, "the added identity's token request")
    wait_until(lambda: admin.request("GET", "/readyz").status == 200, 5, "readyz 200 with the added identity's token")
    [shipping_view] = [i for i in admin.request("GET", "/identities").json()["identities"] if i["name"] == "shipping"]
    assert shipping_view["state"] == "valid", shipping_view
    assert token_of(relay.request("GET", "/shipping/1")) == issued(shipping_record)
    assert token_of(relay.request("GET", "/orders/2")) == orders_token
    assert len(orders.token_requests()) == 1

    # Removed: no more refreshes. Two token lifetimes of silence (at most the one refresh that may
    # have been under way at the reload); there is no condition to wait for, only an absence.
    time.sleep(scaled(4))
    assert len(billing.token_requests()) <= billing_requests + 1, "the removed identity is still refreshed"
    assert len(shipping.token_requests()) == 1 and len(orders.token_requests()) == 1


def test_a_request_waiting_for_a_kept_identity_token_gets_it_after_a_reload(stub_idp, upstream, start_relay):
    stub_idp.script({"kind": "token", "expires_in": 3600, "delay_ms": 1500})
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/orders/", "orders")],
                                    identities={"orders": stub_idp.identity()})
    with relay.connect(timeout=10) as conn:
        conn.send(build_request("GET", "/orders/1"))
        wait_until(stub_idp.token_requests, 5, "the token request at the stub")
        rewrite(relay, routes=[oauth_route(upstream, "/orders/", "orders"), oauth_route(upstream, "/more/", "orders")])
        assert admin.reload_applied()["identities"]["kept"] == ["orders"]
        assert stub_idp.token_requests()[0]["answered"] is None, "the fetch ended before the reload: nothing tested"
        token = token_of(conn.read_final_response(timeout=10))
    [record] = stub_idp.token_requests()
    assert token == issued(record)
    assert token_of(relay.request("GET", "/more/1")) == token
    assert len(stub_idp.token_requests()) == 1


@pytest.mark.parametrize("change", ["changed", "removed"])
def test_a_request_waiting_for_an_identity_the_reload_retires_gets_the_old_identity_token(stub_idp, upstream,
                                                                                          start_relay, change):
    # The first token request (the one the relay makes at start) is held 1.5 s at the stub, so
    # the request below waits for it; the reload then changes or removes the identity.
    stub_idp.script({"kind": "token", "expires_in": 3600, "delay_ms": 1500})
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/orders/", "orders")],
                                    identities={"orders": stub_idp.identity()})
    with relay.connect(timeout=10) as conn:
        conn.send(build_request("GET", "/orders/1"))  # its head arrives before the reload is asked for
        wait_until(stub_idp.token_requests, 5, "the token request at the stub")
        if change == "changed":
            rewrite(relay, identities={"orders": stub_idp.identity(scope="orders.write")})
            expected = {"kept": [], "started": ["orders"], "removed": []}
        else:
            rewrite(relay, routes=[oauth_route(upstream, "/public/")], identities={})
            expected = {"kept": [], "started": [], "removed": ["orders"]}
        assert admin.reload_applied()["identities"] == expected
        assert stub_idp.token_requests()[0]["answered"] is None, "the fetch ended before the reload: nothing tested"
        token = token_of(conn.read_final_response(timeout=10))
    first = stub_idp.token_requests()[0]
    assert token == issued(first), "the request that began before the reload did not get its identity's token"
    if change == "changed":
        after = token_of(relay.request("GET", "/orders/2"))
        records = stub_idp.token_requests()
        assert len(records) == 2 and after == issued(records[1]) and after != token
        assert form(records[1]).get("scope") == ["orders.write"], form(records[1])
    else:
        assert_problem(relay.request("GET", "/orders/2"), 404)
        assert len(stub_idp.token_requests()) == 1


def test_a_secret_file_whose_content_changed_keeps_the_identity_and_its_next_request_sends_it(stub_idp, upstream, start_relay,
                                                                                              tmp_path, sensitive):
    """A credential file the token thread reads again by itself is no setting: a reload after it
    was rotated keeps the identity and its token; the next token request carries the new content."""
    secret_file = tmp_path / "orders.secret"
    secret_file.touch(mode=0o600)
    secret_file.write_text(stub_idp.client_secret + "\n")
    identity = stub_idp.identity(clientSecret=None, clientSecretFile=str(secret_file))
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/orders/", "orders")],
                                    identities={"orders": identity})
    first = token_of(relay.request("GET", "/orders/1"))

    secret_file.write_text(stub_idp.client_secret + "\n")  # rewritten, same content
    assert admin.reload_applied()["identities"]["kept"] == ["orders"]
    assert token_of(relay.request("GET", "/orders/2")) == first
    assert len(stub_idp.token_requests()) == 1

    rotated = sensitive.add("the rotated client secret", tricky_secret("rot"))
    secret_file.write_text(rotated + "\n")
    assert admin.reload_applied()["identities"] == {"kept": ["orders"], "started": [], "removed": []}
    assert token_of(relay.request("GET", "/orders/3")) == first, "the token of a kept identity stays in use"
    assert len(stub_idp.token_requests()) == 1
    assert admin.request("POST", "/identities/orders/refresh").status == 202
    records = wait_until(lambda: len(r := stub_idp.token_requests()) == 2 and r, 10, "the token request the refresh caused")
    second = wait_until(lambda: (t := token_of(relay.request("GET", "/orders/4"))) != first and t, 10, "the new token on requests")
    assert second == issued(records[1])
    assert secret_sent(records[1]) == rotated, "the new token request did not use the secret file's new content"


BREAKAGES = {
    # name: (what to do to the new file: routes, identities, top-level keys; the error's JSON path)
    "bad-upstream": (lambda routes, identities, top: routes[1].update(upstream="ftp://127.0.0.1:21/"),
                     "$.routes[1].upstream"),
    "unknown-identity-key": (lambda routes, identities, top: identities["orders"].update(scopes="x"),
                             "$.identities.orders.scopes"),
    "route-to-unknown-identity": (lambda routes, identities, top: routes[1].update(identity="nobody"),
                                  "$.routes[1].identity"),
    "restart-only": (lambda routes, identities, top: top.update(workers=2), "$.workers"),
}


@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_a_refused_reload_changes_no_identity(stub_idp, upstream, start_relay, breakage):
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/orders/", "orders")],
                                    identities={"orders": stub_idp.identity()})
    before = token_of(relay.request("GET", "/orders/1"))
    assert len(stub_idp.token_requests()) == 1

    # The new file changes the identity, adds one and a route, and is broken in one place.
    routes = [oauth_route(upstream, "/orders/", "orders"), oauth_route(upstream, "/shipping/", "shipping")]
    identities = {"orders": stub_idp.identity(scope="orders.write"), "shipping": stub_idp.identity(scope="shipping")}
    top: dict = {}
    break_it, path = BREAKAGES[breakage]
    break_it(routes, identities, top)
    rewrite(relay, routes=routes, identities=identities, **top)

    errors = admin.reload_rejected()
    assert any(e.startswith(path + ": ") for e in errors), f"no error at {path}: {errors}"
    [record] = log_records(relay, NOT_RELOADED)
    assert record["errors"] == errors and record["trigger"] == "POST /reload", record

    assert token_of(relay.request("GET", "/orders/2")) == before
    assert_problem(relay.request("GET", "/shipping/1"), 404)
    assert identity_names(admin) == ["orders"]
    assert len(stub_idp.token_requests()) == 1, "a refused reload made a token request"
    assert admin.reloads() == {"applied": 0, "rejected": 1}


def test_a_refused_sighup_reload_changes_no_identity(stub_idp, upstream, start_relay):
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/orders/", "orders")],
                                    identities={"orders": stub_idp.identity()})
    before = token_of(relay.request("GET", "/orders/1"))
    rewrite(relay, routes=[{**oauth_route(upstream, "/orders/", "orders"), "upstream": "not a url"}],
            identities={"orders": stub_idp.identity(scope="orders.write")})
    sighup(relay)
    record = wait_for_log(relay, NOT_RELOADED, 1)
    assert record["trigger"] == "SIGHUP", record
    assert any(e.startswith("$.routes[0].upstream: ") for e in record["errors"]), record
    assert token_of(relay.request("GET", "/orders/2")) == before
    assert len(stub_idp.token_requests()) == 1
    assert json.loads(admin.request("GET", "/identities").body)["identities"][0]["state"] == "valid"
