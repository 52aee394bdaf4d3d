"""Web pages must not borrow the relay's tokens (issue 21), seen by real clients: curl and raw
sockets against the relay binary, a real IdP (django-oauth-toolkit) behind the happy paths, the
echo upstream recording what reached it.

- The Host check on every request of a loopback listener (DNS rebinding): 421, never forwarded.
- Cross-site browser requests on a route with a credential: 403, before any token is looked up.
- Listed origins (`routes[].browser.allowOrigins`): the relay answers their preflights and adds
  CORS fields; the upstream sees only the real request, with the token.
- Logins are not started by a HEAD or by a part of a page; the favicon stays home.
- Clients that are not browsers (curl, SDKs, the legacy service in a pod) notice nothing.
Chromium's own view of the same is in test_browser_safety_chromium.py.
"""

from __future__ import annotations

import json

import pytest

from admin_client import start_with_admin
from http_client import RawConnection, assert_problem, curl
from idp_relay import bearer, oauth_route
from login_relay import BROWSER_ACCEPT, LOGIN_REQUIRED, identity_view, start_login_relay
from deadlines import wait_until
from processes import LOOPBACK, run_check

pytestmark = pytest.mark.oauth

MISDIRECTED = "urn:oauth-relay:problem:misdirected-request"
CROSS_SITE = "urn:oauth-relay:problem:cross-site-request"
FRONT_END = "http://localhost:3000"


def served(upstream) -> int:
    return upstream.stats()["requests_started"]


def refusing_idp(stub_idp):
    """The stub IdP refusing every token request: a request whose token were looked up would get
    the relay's 502 `token-refused`, so any other answer was decided before the token."""
    stub_idp.script(default={"kind": "oauth_error", "status": 400, "error": "invalid_client"})
    return stub_idp.identity()


def dev_proxy(start_relay, upstream, identity: dict, **top):
    """The local dev proxy of the issue: `/api/` injects the identity's token, `/front/` too and
    lets the front-end at localhost:3000 call it, `/pub/` forwards without a credential."""
    routes = [oauth_route(upstream, "/api/", "svc", name="api"),
              oauth_route(upstream, "/front/", "svc", name="front",
                          browser={"allowOrigins": [FRONT_END], "exposeHeaders": ["X-Echo"], "maxAgeSeconds": 120}),
              oauth_route(upstream, "/pub/", name="pub")]
    return start_with_admin(start_relay, routes, identities={"svc": identity}, **top)


# ---------------------------------------------------------------------------------------------
# The two requests the issue opens with, before and after.

def test_a_foreign_host_is_misdirected_and_never_reaches_the_upstream(stub_idp, upstream, start_relay):
    relay, admin = dev_proxy(start_relay, upstream, stub_idp.identity())
    resp = curl(f"http://127.0.0.1:{relay.port}/api/x", "-H", f"Host: evil.example:{relay.port}")
    doc = assert_problem(resp, 421)
    assert doc["type"] == MISDIRECTED and "evil.example" in doc["detail"], doc
    assert resp.header("connection") == "close"
    assert served(upstream) == 0
    # The same request by the relay's own name goes through with the token.
    assert bearer(curl(f"http://127.0.0.1:{relay.port}/api/x"))
    assert admin.scrape().value("oauth_relay_refused_requests_total", reason="host") == 1


def test_a_cross_site_form_post_gets_no_credential_and_costs_no_token(stub_idp, upstream, start_relay):
    relay, admin = dev_proxy(start_relay, upstream, refusing_idp(stub_idp))
    resp = curl(f"http://127.0.0.1:{relay.port}/api/delete", "-X", "POST", "-H", "Origin: https://evil.example",
                "-H", "Sec-Fetch-Site: cross-site", "-H", "Sec-Fetch-Mode: no-cors", "-d", "a=1")
    doc = assert_problem(resp, 403, route="api")
    assert doc["type"] == CROSS_SITE and doc["origin"] == "https://evil.example", doc
    assert "routes[0].browser.allowOrigins" in doc["detail"], doc
    assert served(upstream) == 0
    # Without the browser's words, the same request reaches the token: which the IdP refuses.
    assert assert_problem(curl(f"http://127.0.0.1:{relay.port}/api/delete", "-X", "POST", "-d", "a=1"), 502)["type"] \
        == "urn:oauth-relay:problem:token-refused"
    metrics = admin.scrape()
    assert metrics.value("oauth_relay_refused_requests_total", reason="cross-site") == 1
    assert metrics.value("oauth_relay_refused_requests_total", reason="host") == 0


# ---------------------------------------------------------------------------------------------
# The refusal table: what a page can make a browser send, and what it gets.

PAGE = "https://evil.example"
REFUSED = [
    # (id, path, method, headers, status, problem type)
    ("rebound-name", "/api/x", "GET", [("Host", "evil.example:{port}")], 421, MISDIRECTED),
    ("localhost-suffix", "/api/x", "GET", [("Host", "localhost.evil.example:{port}")], 421, MISDIRECTED),
    ("loopback-ip-suffix", "/api/x", "GET", [("Host", "127.0.0.1.evil.example")], 421, MISDIRECTED),
    ("rebound-name-no-route", "/nowhere", "GET", [("Host", "evil.example")], 421, MISDIRECTED),
    ("rebound-name-public-route", "/pub/x", "GET", [("Host", "evil.example")], 421, MISDIRECTED),
    ("form-post", "/api/x", "POST", [("Origin", PAGE), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"),
                                     ("Sec-Fetch-Dest", "document")], 403, CROSS_SITE),
    ("img", "/api/x", "GET", [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "image")],
     403, CROSS_SITE),
    ("script", "/api/x", "GET", [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "script")],
     403, CROSS_SITE),
    ("iframe", "/api/x", "GET", [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "iframe")],
     403, CROSS_SITE),
    ("fetch-cors", "/api/x", "GET", [("Origin", PAGE), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "cors")], 403, CROSS_SITE),
    ("same-site-port", "/api/x", "PUT", [("Origin", "http://127.0.0.1:1"), ("Sec-Fetch-Site", "same-site"),
                                          ("Sec-Fetch-Mode", "cors")], 403, CROSS_SITE),
    ("old-browser-origin", "/api/x", "POST", [("Origin", PAGE)], 403, CROSS_SITE),
    ("opaque-origin", "/api/x", "POST", [("Origin", "null")], 403, CROSS_SITE),
    ("preflight-unlisted", "/front/x", "OPTIONS", [("Origin", PAGE), ("Access-Control-Request-Method", "PUT")], 403, CROSS_SITE),
    ("preflight-no-listing", "/api/x", "OPTIONS", [("Origin", FRONT_END), ("Access-Control-Request-Method", "PUT")],
     403, CROSS_SITE),
    ("repeated-fetch-site", "/api/x", "POST", [("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Site", "same-origin")],
     403, CROSS_SITE),
]


@pytest.mark.parametrize("path,method,headers,status,kind", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_what_a_page_can_make_a_browser_send_is_refused(stub_idp, upstream, start_relay, path, method, headers, status, kind):
    relay, _ = dev_proxy(start_relay, upstream, refusing_idp(stub_idp))
    fields = [(k, v.format(port=relay.port)) for k, v in headers]
    host = next((v for k, v in fields if k == "Host"), f"127.0.0.1:{relay.port}")
    with RawConnection(relay.host, relay.port) as conn:
        resp = conn.request(method, path, [(k, v) for k, v in fields if k != "Host"] + [("Connection", "close")], host=host)
    doc = assert_problem(resp, status)
    assert doc["type"] == kind, doc
    assert not any(k.lower().startswith("access-control-") for k, _ in resp.headers), resp.headers
    assert served(upstream) == 0


# ---------------------------------------------------------------------------------------------
# What keeps working: clients that are not browsers, same-origin pages, navigations.

@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST.:{port}", "app.localhost:{port}"])
def test_curl_by_any_loopback_name_gets_the_token_of_a_real_idp(django_idp, upstream, start_relay, host):
    relay, _ = dev_proxy(start_relay, upstream, django_idp.identity("orders-cc"))
    resp = curl(f"http://127.0.0.1:{relay.port}/api/orders/1", "-X", "POST", "-d", "a=1", "-H", "Host: " + host.format(port=relay.port))
    token = bearer(resp)
    assert django_idp.whoami(token).json()["client_id"] == django_idp.clients["orders-cc"].client_id


def test_curl_over_ipv6_loopback_gets_the_token(stub_idp, upstream, start_relay):
    from processes import ipv6_loopback_available
    if not ipv6_loopback_available():
        pytest.skip("no IPv6 loopback on this machine")
    relay, _ = dev_proxy(start_relay, upstream, stub_idp.identity(), host="::1")
    assert bearer(curl(f"http://[::1]:{relay.port}/api/x", "-g"))


def test_same_origin_pages_typed_urls_and_top_level_navigations_get_the_token(stub_idp, upstream, start_relay):
    relay, admin = dev_proxy(start_relay, upstream, stub_idp.identity())
    own = f"http://127.0.0.1:{relay.port}"
    for headers in ([("Origin", own), ("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "cors")],
                    [("Origin", own)],
                    [("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")],
                    # A link on another site, followed: SameSite=Lax lets a top-level GET through.
                    [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")]):
        with RawConnection(relay.host, relay.port) as conn:
            resp = conn.request("GET", "/api/x", headers + [("Connection", "close")], host=f"127.0.0.1:{relay.port}")
        assert bearer(resp), headers
    assert admin.scrape().value("oauth_relay_refused_requests_total", reason="cross-site") == 0


# ---------------------------------------------------------------------------------------------
# CORS for a listed front-end.

def test_a_listed_front_ends_preflight_is_answered_by_the_relay_alone(stub_idp, upstream, start_relay):
    relay, _ = dev_proxy(start_relay, upstream, refusing_idp(stub_idp))
    resp = curl(f"http://127.0.0.1:{relay.port}/front/orders", "-X", "OPTIONS", "-H", f"Origin: {FRONT_END}",
                "-H", "Access-Control-Request-Method: PUT", "-H", "Access-Control-Request-Headers: content-type,x-trace",
                "-H", "Sec-Fetch-Mode: cors", "-H", "Sec-Fetch-Site: same-site")
    assert resp.status == 204, resp.body
    assert resp.header("access-control-allow-origin") == FRONT_END
    assert resp.header("access-control-allow-credentials") == "true"
    assert resp.header("access-control-allow-methods") == "PUT"
    assert resp.header("access-control-allow-headers") == "content-type, x-trace"
    assert resp.header("access-control-max-age") == "120"
    assert "Origin" in resp.header("vary")
    assert resp.header("content-length") is None and resp.body == b""
    assert served(upstream) == 0, "the preflight never reaches the upstream, and needs no token"


def test_a_listed_front_end_gets_the_answer_with_cors_fields_and_the_upstream_the_token(stub_idp, upstream, start_relay):
    relay, _ = dev_proxy(start_relay, upstream, stub_idp.identity())
    # The upstream's own CORS fields are replaced by the route's.
    resp = curl(f"http://127.0.0.1:{relay.port}/front/orders?set-header=Access-Control-Allow-Origin:*", "-X", "PUT",
                "-H", f"Origin: {FRONT_END}", "-H", "Sec-Fetch-Site: same-site", "-H", "Sec-Fetch-Mode: cors",
                "-H", "Content-Type: application/json", "-d", "{}")
    assert bearer(resp)
    assert resp.header_all("access-control-allow-origin") == [FRONT_END]
    assert resp.header("access-control-allow-credentials") == "true"
    assert resp.header("access-control-expose-headers") == "X-Echo"
    assert "Origin" in [v.strip() for value in resp.header_all("vary") for v in value.split(",")]
    assert served(upstream) == 1
    # Without an Origin (curl, a same-origin page), the route's answers carry no CORS field, the
    # upstream's neither, and say that they vary by Origin.
    plain = curl(f"http://127.0.0.1:{relay.port}/front/orders?set-header=Access-Control-Allow-Origin:*")
    assert bearer(plain)
    assert plain.header_all("access-control-allow-origin") == []
    assert "Origin" in [v.strip() for value in plain.header_all("vary") for v in value.split(",")]


def test_the_relays_own_answers_carry_cors_fields_for_a_listed_front_end(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "oauth_error", "status": 400, "error": "invalid_client"})
    relay, _ = dev_proxy(start_relay, upstream, stub_idp.identity())
    resp = curl(f"http://127.0.0.1:{relay.port}/front/orders", "-H", f"Origin: {FRONT_END}", "-H", "Sec-Fetch-Site: same-site",
                "-H", "Sec-Fetch-Mode: cors")
    assert_problem(resp, 502, route="front")
    assert resp.header("access-control-allow-origin") == FRONT_END, "the page can read why"


# ---------------------------------------------------------------------------------------------
# Logins are not started by pages, and the favicon stays home.

def test_a_head_or_a_part_of_a_page_does_not_start_a_device_login_but_a_request_does(django_idp, upstream, start_relay):
    relay, admin = start_login_relay(start_relay, upstream, {"tv": django_idp.identity("tv-device")})
    own = f"127.0.0.1:{relay.port}"
    for method, headers in (("HEAD", []),
                            ("GET", [("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "image")]),
                            ("GET", [("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "empty")])):
        with RawConnection(relay.host, relay.port) as conn:
            resp = conn.request(method, "/tv/1", headers + [("Connection", "close")], host=own)
        assert resp.status == 401, (method, headers, resp.status)
        assert django_idp.device_authorizations() == [], (method, headers)
    assert identity_view(admin, "tv")["state"] == "needs-login"
    with RawConnection(relay.host, relay.port) as conn:
        resp = conn.request("GET", "/tv/1", [("Connection", "close")], host=own)
    doc = assert_problem(resp, 401)
    assert doc["type"] == LOGIN_REQUIRED and doc["userCode"], doc
    assert len(django_idp.device_authorizations()) == 1


def test_a_head_request_at_the_login_start_starts_nothing(django_idp, upstream, start_relay):
    relay, _ = start_login_relay(start_relay, upstream, {"me": django_idp.identity("cli-code")})
    own = f"127.0.0.1:{relay.port}"
    with RawConnection(relay.host, relay.port) as conn:
        head = conn.request("HEAD", "/.oauth-relay/login/me", [("Accept", BROWSER_ACCEPT), ("Connection", "close")], host=own)
    assert head.status == 403 and head.header("location") is None
    with RawConnection(relay.host, relay.port) as conn:
        get = conn.request("GET", "/.oauth-relay/login/me", [("Accept", BROWSER_ACCEPT), ("Connection", "close")], host=own)
    assert get.status == 302 and get.header("location").startswith(django_idp.authorize_url)


def test_the_browsers_favicon_is_not_sent_upstream_with_a_persons_token(django_idp, upstream, start_relay):
    relay, _ = start_login_relay(start_relay, upstream, {"me": django_idp.identity("cli-code")})
    with RawConnection(relay.host, relay.port) as conn:
        resp = conn.request("GET", "/favicon.ico", [("Sec-Fetch-Dest", "image"), ("Sec-Fetch-Site", "same-origin"),
                                                    ("Sec-Fetch-Mode", "no-cors"), ("Connection", "close")],
                            host=f"localhost:{relay.port}")
    assert_problem(resp, 404)
    assert served(upstream) == 0


# ---------------------------------------------------------------------------------------------
# The admin listener: it starts logins and shows a device login's code, so no page may use it.

def admin_call(admin, method: str, path: str, headers=(), host: str | None = None):
    with RawConnection(LOOPBACK, admin.port) as conn:
        return conn.request(method, path, [*headers, ("Connection", "close")], host=host or f"{LOOPBACK}:{admin.port}")


def test_the_admin_listener_answers_no_page_and_no_rebound_name(django_idp, upstream, start_relay):
    relay, admin = start_login_relay(start_relay, upstream, {"tv": django_idp.identity("tv-device")})
    forged = admin_call(admin, "POST", "/identities/tv/login", [("Origin", "https://evil.example"), ("Sec-Fetch-Site", "cross-site"),
                                                                ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "empty")])
    assert assert_problem(forged, 403)["type"] == CROSS_SITE
    rebound = admin_call(admin, "GET", "/identities", host=f"evil.example:{admin.port}")
    assert assert_problem(rebound, 421)["type"] == MISDIRECTED
    assert b"tv" not in rebound.body, "a rebound page reads nothing of the identities"
    assert django_idp.device_authorizations() == [], "no device login started by a page"
    metrics = admin.scrape()
    assert metrics.value("oauth_relay_refused_requests_total", reason="cross-site") == 1
    assert metrics.value("oauth_relay_refused_requests_total", reason="host") == 1
    # curl, as the README's commands and `oauth-relay login` use it.
    assert admin_call(admin, "POST", "/identities/tv/login").status == 202
    wait_until(lambda: len(django_idp.device_authorizations()) == 1, 10, "the device login the admin call started")


# ---------------------------------------------------------------------------------------------
# Configuration: hosts, the warning, reloads.

def test_hosts_names_more_names_and_a_reload_applies_them(stub_idp, upstream, start_relay):
    from admin_client import rewrite
    relay, admin = dev_proxy(start_relay, upstream, stub_idp.identity(), hosts=["dev.test"])
    def status(host: str) -> int:
        with RawConnection(relay.host, relay.port) as conn:
            return conn.request("GET", "/pub/x", [("Connection", "close")], host=host).status
    assert (status("dev.test"), status("other.test")) == (200, 421)
    rewrite(relay, hosts=["other.test"])
    admin.reload_applied()
    assert (status("dev.test"), status("other.test")) == (421, 200)


def test_check_warns_of_a_non_loopback_listener_serving_identities_to_any_name(stub_idp, tmp_path):
    config = {"listen": "0.0.0.0:18180", "admin": None, "identities": {"svc": stub_idp.identity()},
              "routes": [{"name": "api", "upstream": "http://127.0.0.1:9", "identity": "svc"}]}
    code, output = run_check(tmp_path, config)
    assert code == 0, output
    assert 'WARNING: listen 0.0.0.0:18180 is not a loopback address and serves routes with credentials (api)' in output
    code, output = run_check(tmp_path, {**config, "hosts": ["svc.local"]})
    assert code == 0 and "WARNING" not in output, output


def test_check_refuses_a_wildcard_origin_and_a_wildcard_host(tmp_path):
    config = {"listen": "127.0.0.1:18180", "admin": None, "hosts": ["*"],
              "routes": [{"upstream": "http://127.0.0.1:9", "browser": {"allowOrigins": ["*"]}}]}
    code, output = run_check(tmp_path, config)
    assert code == 1, output
    assert "$.hosts[0]:" in output and "$.routes[0].browser.allowOrigins[0]: no wildcard" in output, output
