"""Where a login may start and where it ends (the relay's login pages, not the IdP's):

- A person browsing the relay as `localhost` while the redirect URI names `127.0.0.1` logs in:
  the login cookie is set for `localhost`, the IdP sends the browser back to `127.0.0.1`, and the
  callback goes on to the same callback on `localhost`, where the cookie is (Chromium at DOT, and
  by hand for the edges: another browser is still refused, a login never loops).
- A login start a browser sends for another site is refused with a 403 page (Fetch Metadata:
  `Sec-Fetch-Site: cross-site`, or `Sec-Fetch-Dest` other than `document`): no device
  authorization at the IdP, no login taking room; curl and scripts, which send no Fetch Metadata,
  keep working. Chromium loading another site's `<img>` of the login URL, and following its link.
- Logins in flight are never dropped for a new start: when an identity has as many as the relay
  keeps, a new start is refused (503, Retry-After) and the first person's login still completes.
- No login page can be framed; the return path never leads into the relay's own pages.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, urlencode, urlsplit

import pytest

from browser import chromium, wait_for, wait_for_url  # noqa: F401 (chromium is a fixture)
from deadlines import wait_until
from idp_relay import bearer, oauth_route
from login_relay import (CALLBACK_PATH, ID_TOKEN_OK, RawBrowser, at_stub, browse, callback_url, echoed, echoed_bearer,
                         get, identity_view, log_in_at_dot, page_text, set_cookies, start_login_relay,
                         wait_for_state)
from processes import LOOPBACK

pytestmark = pytest.mark.oauth

NAVIGATION = [("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-User", "?1"), ("Sec-Fetch-Dest", "document")]


def localhost(relay) -> str:
    """The relay's plain listener as `localhost`: another host name than the redirect URI's."""
    return f"localhost:{relay.port}"


def start(relay, name: str, headers=(), host: str | None = None, returns: str | None = None):
    target = f"/.oauth-relay/login/{name}" + (f"?{urlencode({'return': returns})}" if returns else "")
    return get(relay, target, [("Accept", "text/html"), *headers], host)


# ---------------------------------------------------------------------------------------------
# 1. A browser on another host name than the redirect URI's

def test_a_person_browsing_localhost_logs_in_although_the_redirect_uri_names_127_0_0_1(django_idp, upstream, start_relay,
                                                                                      chromium, sensitive):  # noqa: F811
    relay, admin = start_login_relay(start_relay, upstream, {"me": django_idp.identity("cli-code")})
    django_idp.set_redirect_uris("cli-code", [callback_url(relay)])
    assert urlsplit(callback_url(relay)).hostname == LOOPBACK == "127.0.0.1"
    site = f"http://{localhost(relay)}"
    chromium.get(site + "/orders/42?page=2")
    log_in_at_dot(chromium, django_idp, sensitive, site)
    wait_for_url(chromium, lambda url: url == site + "/orders/42?page=2", "the page first asked for, still on localhost")
    assert echoed(chromium)["target"] == "/orders/42?page=2"
    token = echoed_bearer(chromium)
    who = django_idp.whoami(token).json()
    assert (who["user"], who["client_id"]) == (django_idp.person.username, django_idp.clients["cli-code"].client_id)
    assert identity_view(admin, "me")["state"] == "valid"
    # DOT sent the browser to the configured redirect URI, once, and one code was exchanged.
    [consented] = django_idp.authorizations(method="POST")
    assert consented["redirect_uri"] == callback_url(relay)
    assert len(django_idp.token_requests(grant_type="authorization_code", status=200)) == 1


def test_a_callback_without_the_cookie_goes_on_to_the_host_the_login_started_at(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default=ID_TOKEN_OK)
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    wait_for_state(admin, "me", "needs-login")
    browser = RawBrowser(relay, sensitive)
    back = at_stub(stub_idp, browser.start_login("me", returns="/orders/7", host=localhost(relay)))

    # The IdP's redirect arrives at 127.0.0.1, where this browser has no cookie: on to localhost.
    here = browse(relay, CALLBACK_PATH + "?" + urlencode(back))
    assert here.status == 302 and not set_cookies(here), here.body[:300]
    assert here.header("location") == f"http://{localhost(relay)}{CALLBACK_PATH}?{urlencode(back)}"
    # Another browser (no cookie) at localhost is refused there: no loop, the login stays.
    assert browse(relay, CALLBACK_PATH + "?" + urlencode(back), host=localhost(relay)).status == 400
    assert stub_idp.token_requests(grant_type="authorization_code") == []
    # The browser that started it, at localhost, finishes it and goes back to its page.
    done = browse(relay, CALLBACK_PATH + "?" + urlencode(back), browser.cookies, host=localhost(relay))
    assert (done.status, done.header("location")) == (302, "/orders/7")
    wait_for_state(admin, "me", "valid")
    assert len(stub_idp.token_requests(grant_type="authorization_code")) == 1


def test_the_return_path_never_leads_into_the_relays_own_pages(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default=ID_TOKEN_OK)
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    wait_for_state(admin, "me", "needs-login")
    for own in ("/x/../.oauth-relay/login/me", "/%2Eoauth-relay/status/me", "//evil.example/x"):
        browser = RawBrowser(relay, sensitive)
        resp = browser.callback(at_stub(stub_idp, browser.start_login("me", returns=quote(own, safe=""))))
        assert (resp.status, resp.header("location")) == (302, "/.oauth-relay/status/me"), own


def test_no_login_page_can_be_framed(stub_idp, upstream, start_relay):
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    wait_for_state(admin, "me", "needs-login")
    for target in ("/.oauth-relay/status/me", "/.oauth-relay/login/nobody", CALLBACK_PATH + "?state=x&code=y"):
        resp = get(relay, target, [("Accept", "text/html")])
        assert resp.header("content-type").startswith("text/html"), target
        assert resp.header("x-frame-options") == "DENY", target
        assert resp.header("content-security-policy") == "frame-ancestors 'none'", target


# ---------------------------------------------------------------------------------------------
# 4. A login start another site asks a browser for

@pytest.mark.parametrize("headers", [
    [("Sec-Fetch-Site", "cross-site"), *NAVIGATION],                             # a link or script on another site
    [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "image")],  # <img src=...>
    [("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "no-cors"), ("Sec-Fetch-Dest", "image")],  # even from the relay's origin
    [("Sec-Fetch-Site", "same-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "iframe")],  # a frame
], ids=["cross-site-navigation", "cross-site-img", "same-origin-img", "iframe"])
def test_a_login_start_a_browser_sends_for_another_site_is_refused_and_starts_nothing(stub_idp, upstream, start_relay, headers):
    stub_idp.script(device={"kind": "device", "interval": 1})
    identities = {"me": stub_idp.login_identity(), "tv": stub_idp.login_identity("device_code")}
    relay, admin = start_login_relay(start_relay, upstream, identities)
    for name in identities:
        wait_for_state(admin, name, "needs-login")
    for name in identities:
        resp = start(relay, name, headers)
        assert resp.status == 403, (name, resp.status, resp.body[:300])
        assert resp.header("location") is None and not set_cookies(resp), name
        assert b"Login not started" in resp.body
        # The way on for a person who meant it: the relay's own login link.
        assert f'href="/.oauth-relay/login/{name}"'.encode() in resp.body
    assert stub_idp.endpoint_requests(endpoint="device") == [], "no device authorization may start"
    assert identity_view(admin, "tv")["state"] == "needs-login"
    assert "deviceLogin" not in identity_view(admin, "tv")


def test_curl_and_a_persons_own_navigation_still_start_logins(stub_idp, upstream, start_relay):
    stub_idp.script(device={"kind": "device", "interval": 5})
    identities = {"me": stub_idp.login_identity(), "tv": stub_idp.login_identity("device_code")}
    relay, admin = start_login_relay(start_relay, upstream, identities)
    for name in identities:
        wait_for_state(admin, name, "needs-login")
    for headers in ([], [("Sec-Fetch-Site", "none"), *NAVIGATION], [("Sec-Fetch-Site", "same-origin"), *NAVIGATION],
                    [("Sec-Fetch-Site", "same-site"), *NAVIGATION]):
        resp = start(relay, "me", headers)
        assert resp.status == 302 and resp.header("location").startswith(stub_idp.url + "/authorize?"), headers
    resp = start(relay, "tv", [("Sec-Fetch-Site", "same-origin"), *NAVIGATION])
    assert (resp.status, resp.header("location")) == (302, "/.oauth-relay/status/tv")
    wait_until(lambda: stub_idp.endpoint_requests(endpoint="device"), 5, "the device authorization")


class OtherSite:
    """A page on another site than the relay's (`localhost` is another site than `127.0.0.1`),
    served on loopback from a thread for the test's browser."""

    def __init__(self, html: str) -> None:
        body = html.encode()

        class Page(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the stdlib's name)
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Page)
        self.url = f"http://localhost:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def other_site():
    sites: list[OtherSite] = []

    def serve(html: str) -> OtherSite:
        sites.append(OtherSite(html))
        return sites[-1]
    yield serve
    for site in sites:
        site.close()


def test_another_sites_img_and_link_start_no_login_in_chromium(stub_idp, upstream, start_relay, chromium, other_site):  # noqa: F811
    from selenium.webdriver.common.by import By

    stub_idp.script(device={"kind": "device", "interval": 5})
    relay, admin = start_login_relay(start_relay, upstream, {"tv": stub_idp.login_identity("device_code")},
                                     routes=[oauth_route(upstream, "/tv/", "tv")])
    wait_for_state(admin, "tv", "needs-login")
    login = f"{relay.url}/.oauth-relay/login/tv"
    page = other_site(f'<!doctype html><title>elsewhere</title><img id="img" src="{login}">'
                      f'<a id="go" href="{login}">a link to the relay</a>')
    chromium.get(page.url)
    wait_for(chromium, lambda d: d.execute_script("return document.getElementById('img').complete"), "the <img> to load")
    wait_until(lambda: "/.oauth-relay/login/tv" in relay.log(), 5, "the <img>'s request at the relay")
    assert stub_idp.endpoint_requests(endpoint="device") == [], "another site's <img> started a device login"

    # Following another site's link: the relay's 403 page, and still nothing started.
    chromium.find_element(By.ID, "go").click()
    wait_for_url(chromium, lambda url: url == login, "the relay's login page")
    assert "Login not started" in page_text(chromium)
    assert stub_idp.endpoint_requests(endpoint="device") == []
    # The person means it: the link on the relay's own page starts the login.
    chromium.find_element(By.LINK_TEXT, "Log in for identity tv").click()
    wait_for_url(chromium, lambda url: url == f"{relay.url}/.oauth-relay/status/tv", "the device login's status page")
    wait_until(lambda: len(stub_idp.endpoint_requests(endpoint="device")) == 1, 5, "the device authorization")


def test_a_full_identity_refuses_new_starts_and_its_logins_in_flight_complete(stub_idp, upstream, start_relay, sensitive):
    stub_idp.script(default=ID_TOKEN_OK)
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity()})
    wait_for_state(admin, "me", "needs-login")
    person = RawBrowser(relay, sensitive)
    first = person.start_login("me", returns="/mine")
    for _ in range(63):  # a script fills the rest of the 64 the relay keeps
        assert start(relay, "me").status == 302
    refused = start(relay, "me")
    assert refused.status == 503 and int(refused.header("retry-after")) > 0, refused.body[:300]
    assert b"logins in flight" in refused.body
    # The person's login, the oldest in flight, was not dropped to make room.
    done = person.callback(at_stub(stub_idp, first))
    assert (done.status, done.header("location")) == (302, "/mine")
    wait_for_state(admin, "me", "valid")
    assert bearer(get(relay, "/x"))
