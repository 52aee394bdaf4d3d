"""Step-up logins (issue 29) with the real relay, django-oauth-toolkit and headless Chromium: an
upstream that needs `orders.write` answers a person's `orders.read` token `403` with
`WWW-Authenticate: Bearer error="insufficient_scope", scope="orders.write"` (RFC 6750 §3.1). The
relay does not pass that on as a refused token: the person's next login asks DOT for the
identity's scope joined with `orders.write`, and until it completes requests get the login
problem (a browser is sent to the login, as for a first login). Once the person consents, the
request reaches the upstream with a token DOT granted `orders.write`. A person who declines the
step-up (the IdP's `access_denied` redirect) ends it: the upstream's 403 then goes to the client as it was sent,
and no new login starts.

The upstream here is the test's own: it asks DOT (`/api/whoami`, DOT's own check of a bearer
token) what each token it receives was granted, and never trusts the token itself.
"""

from __future__ import annotations

import json
import re
import threading
from urllib.parse import urlencode
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from browser import chromium, consent, login_at_dot, wait_for, wait_for_url  # noqa: F401 (chromium is a fixture)
from http_client import assert_problem
from idp_processes import sha256
from login_relay import (LOGIN_REQUIRED, at_dot_login_form, callback_url, get, identity_view, note_login_cookies, page_text,
                         query_of, start_login_relay)
from processes import LOOPBACK

pytestmark = pytest.mark.oauth

NEEDED = "orders.write"
CHALLENGE = f'Bearer realm="orders", error="insufficient_scope", scope="{NEEDED}"'


class ScopeCheckingUpstream:
    """An upstream that serves only tokens DOT granted `orders.write`: 401 `invalid_token` for a
    token DOT refuses, 403 with the step-up challenge for one without that scope, else 200 JSON
    {"scope", "user", "token_sha256", "path"}. Records (status, scope, token fingerprint) per request."""

    def __init__(self, idp) -> None:
        self.idp = idp
        self.records: list[dict] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                upstream.answer(self)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.url = f"http://{LOOPBACK}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, request: BaseHTTPRequestHandler) -> None:
        scheme, _, token = (request.headers.get("Authorization") or "").partition(" ")
        granted = None
        if scheme == "Bearer" and token:
            checked = self.idp.whoami(token)
            granted = checked.json() if checked.status == 200 else None
        if granted is None:
            status, body, challenge = 401, {"error": "invalid_token"}, 'Bearer error="invalid_token"'
        elif NEEDED not in (granted["scope"] or "").split():
            status, body, challenge = 403, {"error": "insufficient_scope"}, CHALLENGE
        else:
            status, challenge = 200, None
            body = {"scope": granted["scope"], "user": granted["user"], "token_sha256": sha256(token), "path": request.path}
        self.records.append({"status": status, "scope": granted and granted["scope"], "token_sha256": token and sha256(token)})
        data = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        if challenge:
            request.send_header("WWW-Authenticate", challenge)
        request.end_headers()
        request.wfile.write(data)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scoped_upstream(django_idp):
    upstream = ScopeCheckingUpstream(django_idp)
    yield upstream
    upstream.stop()


def step_up_relay(start_relay, upstream, idp):
    """A relay whose route `/` carries the person's token of DOT's `cli-code` (scope
    `openid profile email orders.read`) to `upstream`."""
    relay, admin = start_login_relay(start_relay, upstream.url, {"me": idp.identity("cli-code")})
    idp.set_redirect_uris("cli-code", [callback_url(relay)])
    return relay, admin


def at_consent_for_step_up(chromium, idp, relay, sensitive, target: str) -> None:  # noqa: F811
    """The person's first login (for `orders.read`) completes; the upstream's 403 sends the browser
    through the relay (no page of its own is shown) straight back to DOT's consent page, for the
    step-up."""
    chromium.get(relay.url + target)
    at_dot_login_form(chromium, idp, sensitive)
    login_at_dot(chromium, idp.person.username, idp.person.password)
    first = chromium.current_url
    consent(chromium)
    wait_for(chromium, lambda d: d.current_url.startswith(f"{idp.url}/o/authorize/") and d.current_url != first
             and d.find_elements("css selector", "form#authorizationForm"), "DOT's consent page for the step-up")
    note_login_cookies(chromium, sensitive)


def scopes_asked(idp) -> list[list[str]]:
    """The scope each consent the person gave at DOT asked for, in order."""
    return [sorted((a["scope"] or "").split()) for a in idp.authorizations(method="POST")]


def step_up_count(admin, outcome: str) -> float:
    text = admin.request("GET", "/metrics").body.decode()
    found = [float(m.group(1)) for line in text.splitlines()
             if line.startswith("oauth_relay_step_ups_total{") and 'identity="me"' in line and f'outcome="{outcome}"' in line
             and (m := re.search(r"\}\s+(\S+)$", line))]
    return sum(found)


def test_a_step_up_logs_the_person_in_for_the_larger_scope_and_the_request_reaches_the_upstream(
        django_idp, scoped_upstream, start_relay, chromium, sensitive):  # noqa: F811
    relay, admin = step_up_relay(start_relay, scoped_upstream, django_idp)
    at_consent_for_step_up(chromium, django_idp, relay, sensitive, "/orders/7")
    [first] = [r for r in scoped_upstream.records if r["status"] == 403]
    assert NEEDED not in first["scope"].split(), "the first login's token lacks the scope"

    # While the step-up is pending, a script gets the login problem naming the scope, as for a
    # first login; the identity shows it.
    problem = assert_problem(get(relay, "/orders/8", [("Accept", "application/json")]), 401)
    assert (problem["type"], problem["identity"]) == (LOGIN_REQUIRED, "me")
    assert f"the upstream asked for scope {NEEDED}: log in again to grant it" in problem["detail"]
    view = identity_view(admin, "me")
    assert (view["state"], view["pendingStepUp"]) == ("needs-login", {"scope": [NEEDED]})
    assert len(scoped_upstream.records) == 1, "no request went to the upstream meanwhile"

    consent(chromium)
    wait_for_url(chromium, lambda url: url == relay.url + "/orders/7", "the browser back at the page it asked for")
    served = wait_for(chromium, lambda d: "token_sha256" in page_text(d) and json.loads(page_text(d)), "the upstream's answer")
    assert NEEDED in served["scope"].split() and served["path"] == "/orders/7"
    assert served["user"] == django_idp.person.username

    # DOT was asked for the identity's scope first, then for it joined with the step-up's.
    assert scopes_asked(django_idp) == [sorted("openid profile email orders.read".split()),
                                        sorted(f"openid profile email orders.read {NEEDED}".split())]
    view = identity_view(admin, "me")
    assert view["state"] == "valid" and "pendingStepUp" not in view and NEEDED in view["scope"].split()
    # Scripts now carry the stepped-up token too.
    later = get(relay, "/orders/9")
    assert later.status == 200 and json.loads(later.body)["token_sha256"] == served["token_sha256"]
    assert step_up_count(admin, "login_needed") == 1


def test_a_declined_step_up_passes_the_upstreams_403_through_and_starts_no_new_login(
        django_idp, scoped_upstream, start_relay, chromium, sensitive):  # noqa: F811
    relay, admin = step_up_relay(start_relay, scoped_upstream, django_idp)
    at_consent_for_step_up(chromium, django_idp, relay, sensitive, "/orders/7")
    # The person declines: the IdP's error redirect for this login (RFC 6749 §4.1.2.1, with RFC
    # 9207's `iss`, which DOT's own Cancel leaves out although its metadata promises it, so the
    # relay refuses that callback as not the IdP's).
    state = sensitive.add("the step-up login's state", query_of(chromium.current_url)["state"])
    chromium.get(callback_url(relay) + "?" + urlencode({"error": "access_denied", "state": state, "iss": django_idp.issuer}))
    wait_for(chromium, lambda d: "access_denied" in page_text(d), "the relay's page on the declined login")
    asked = len(django_idp.authorizations())
    view = identity_view(admin, "me")
    assert "pendingStepUp" not in view and "access_denied" in view["lastLoginFailure"], view

    # The same challenge again: the upstream's 403 goes to the client as sent, to a script and to
    # the browser alike, and no login starts.
    refused = get(relay, "/orders/7")
    assert (refused.status, refused.header("www-authenticate")) == (403, CHALLENGE)
    assert json.loads(refused.body) == {"error": "insufficient_scope"}
    chromium.get(relay.url + "/orders/8")
    wait_for(chromium, lambda d: "insufficient_scope" in page_text(d), "the upstream's 403 in the browser")
    assert chromium.current_url == relay.url + "/orders/8", "the browser was not sent to a login"
    assert len(django_idp.authorizations()) == asked
    assert [r["status"] for r in scoped_upstream.records] == [403, 403, 403]
    assert identity_view(admin, "me")["state"] == "valid"
    assert (step_up_count(admin, "login_needed"), step_up_count(admin, "declined")) == (1, 2)
