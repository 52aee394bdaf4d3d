"""The relay side of the login tests (issue 11): a relay with interactive identities and an admin
listener, what it shows about them (`/identities`, the login pages), a person's browser going
through a login at django-oauth-toolkit, `RawBrowser` (a login's start and callback by hand, the
stub answering its authorization request: `at_stub`), and the values of a login (the relay's
cookies, its state and nonce) added to the leak scan.

    relay, admin = start_login_relay(start_relay, upstream, {"me": idp.identity("cli-code")})
    idp.set_redirect_uris("cli-code", [callback_url(relay)])
    chromium.get(relay.url + "/orders/1")
    log_in_at_dot(chromium, idp, sensitive, relay.url)  # login form, consent, back at the relay
    token = echoed_bearer(chromium)                  # the token the echo upstream received
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from admin_client import AdminClient, start_with_admin
from browser import consent, login_at_dot, wait_for, wait_for_url, where
from deadlines import scaled, wait_until
from http_client import RawConnection, Response
from idp_relay import bearer, oauth_route
from processes import LOOPBACK

LOGIN_REQUIRED = "urn:oauth-relay:problem:login-required"
# The DOT application of each login identity the tests name: `tv` logs in with a device code,
# `me` in a browser (authorization code).
DOT_LOGIN_CLIENTS = {"tv": "tv-device", "me": "cli-code"}
CALLBACK_PATH = "/.oauth-relay/callback"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
COOKIE_PREFIX = "oauth_relay_login_"


def start_login_relay(start_relay, upstream, identities: dict, routes: list | None = None, **top) -> tuple:
    """A relay whose route `/` forwards to the echo `upstream` with the first identity's token
    (or `routes`), with an admin listener on a free port; returns (relay, AdminClient)."""
    if routes is None:
        routes = [oauth_route(upstream, "/", next(iter(identities)))]
    relay, admin = start_with_admin(start_relay, routes, identities=identities, **top)
    # An identity discovering its IdP's endpoints is `pending`: nothing (not even a login) can
    # start before discovery answers.
    wait_until(lambda: all(i["state"] != "pending" for i in admin.request("GET", "/identities").json()["identities"]),
               10, "discovery of the identities' endpoints")
    return relay, admin


def approved_token(relay, target: str = "/x", timeout: float = 10) -> str:
    """Waits (bounded) for a request to `target` to get through once a login completed (a device
    code approved); the token it carried."""
    resp = wait_until(lambda: (r := get(relay, target)).status == 200 and r, timeout,
                      f"a request to {target} carrying the token after the login")
    return bearer(resp)


def store_entries(tmp_path, store: str = "default") -> list[str]:
    """The token files of the relay's store: its default place under the test's XDG state
    directory, or `token-store` beside the config."""
    directory = tmp_path / ("xdg-state/oauth-relay/tokens" if store == "default" else "token-store")
    return sorted(p.name for p in directory.glob("identity-*.token")) if directory.exists() else []


def callback_url(relay) -> str:
    """The default redirect URI of a relay's browser logins."""
    return f"{relay.url}{CALLBACK_PATH}"


def identity_view(admin: AdminClient, name: str) -> dict:
    """The entry of identity `name` in `GET /identities`."""
    resp = admin.request("GET", "/identities")
    assert resp.status == 200, f"/identities answered {resp.status}"
    found = [i for i in resp.json()["identities"] if i["name"] == name]
    assert found, f"no identity {name} in /identities"
    return found[0]


def wait_for_state(admin: AdminClient, name: str, state: str, timeout: float = 10) -> dict:
    """Polls `/identities` until identity `name` shows `state`; returns its entry."""
    last: list[dict] = []

    def reached():
        last[:] = [identity_view(admin, name)]
        return last[0]["state"] == state and last[0]

    try:
        return wait_until(reached, timeout, f"identity {name} to be {state}", interval=0.05)
    except pytest.fail.Exception:
        pytest.fail(f"identity {name} did not become {state} within {scaled(timeout):.0f}s; last: {last[0] if last else None}",
                    pytrace=False)


def get(relay, target: str, headers=(), host: str | None = None) -> Response:
    """One GET to the relay on a fresh connection (a script's request: no Accept), naming the
    relay's own address in Host unless `host` is given."""
    with RawConnection(relay.host, relay.port) as conn:
        return conn.request("GET", target, [*headers, ("Connection", "close")], host=host or f"{relay.host}:{relay.port}")


def browse(relay, target: str, cookies: dict[str, str] | None = None, host: str | None = None) -> Response:
    """A browser's top-level GET (Accept prefers HTML), with `cookies`."""
    headers = [("Accept", BROWSER_ACCEPT)]
    if cookies:
        headers.append(("Cookie", "; ".join(f"{k}={v}" for k, v in cookies.items())))
    return get(relay, target, headers, host)


def set_cookies(resp: Response) -> list[tuple[str, str, str | None]]:
    """(name, value, Path attribute) of the response's Set-Cookie headers (an empty value clears)."""
    cookies = []
    for header in resp.header_all("set-cookie"):
        pair, *attributes = header.split(";")
        name, _, value = pair.partition("=")
        paths = [a.strip()[5:] for a in attributes if a.strip().lower().startswith("path=")]
        cookies.append((name.strip(), value, paths[0] if paths else None))
    return cookies


def query_of(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


class RawBrowser:
    """A browser without a browser: follows the relay's login start by hand, keeping its cookies,
    for the negatives (a forged or replayed callback, another browser's callback). Every value
    of the login it sees goes to `sensitive`."""

    def __init__(self, relay, sensitive) -> None:
        self.relay = relay
        self.sensitive = sensitive
        self.cookies: dict[str, str] = {}
        self.cookie_paths: dict[str, str | None] = {}

    def start_login(self, name: str, returns: str | None = None, host: str | None = None) -> dict[str, str]:
        """GET the login start (naming `host`, or the relay's address, in Host); returns the
        authorization request's query (state, nonce, ...)."""
        target = f"/.oauth-relay/login/{name}" + (f"?return={returns}" if returns else "")
        resp = browse(self.relay, target, self.cookies, host=host)
        assert resp.status == 302, f"login start answered {resp.status}: {resp.body[:300]!r}"
        self.keep(resp)
        query = query_of(resp.header("location"))
        for key in ("state", "nonce", "code_challenge"):
            if query.get(key):
                self.sensitive.add(f"{key} of a login the relay started", query[key])
        return {**query, "authorization_endpoint": resp.header("location").split("?")[0]}

    def keep(self, resp: Response) -> None:
        """Takes the answer's cookies as a browser does (RFC 6265 §5.3: a cookie replaces, or
        clears, only the one with its name and path). The requests all go to the callback's
        path or below the login pages, so the path decides nothing else here."""
        for name, value, path in set_cookies(resp):
            if value:
                self.sensitive.add(f"the relay's login cookie {name}", value)
                self.cookies[name] = value
                self.cookie_paths[name] = path
            elif name in self.cookies and self.cookie_paths.get(name) == path:
                del self.cookies[name]

    def callback(self, query: dict[str, str]) -> Response:
        """The IdP's redirect back, arriving at the relay's callback with this browser's cookies."""
        resp = browse(self.relay, CALLBACK_PATH + "?" + urlencode(query), self.cookies)
        self.keep(resp)
        return resp


# The stub's answer with an ID token that passes every check (a login's code exchange).
ID_TOKEN_OK = {"kind": "token", "expires_in": 3600, "refresh_token": "new", "id_token": {}}


def at_stub(stub, login: dict) -> dict:
    """The stub's authorization endpoint answers the request the relay sent a RawBrowser to
    (`login`, from `start_login`): the query of its redirect back to the relay's callback."""
    assert login["authorization_endpoint"] == f"{stub.url}/authorize"
    query = {k: v for k, v in login.items() if k != "authorization_endpoint"}
    resp = stub.request("GET", "/authorize?" + urlencode(query), headers=[("Connection", "close")],
                        host=f"{LOOPBACK}:{stub.port}")
    assert resp.status == 302, resp.body[:200]
    location = resp.header("location")
    assert urlsplit(location).path == CALLBACK_PATH
    return query_of(location)


# ---------------------------------------------------------------------------------------------
# Chromium

def note_login_cookies(driver, sensitive) -> list[str]:
    """Adds the relay's login cookies the browser holds (any site, any path) to the leak scan;
    returns their names."""
    cookies = driver.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
    names = []
    for cookie in cookies:
        if cookie["name"].startswith(COOKIE_PREFIX):
            sensitive.add(f"the relay's login cookie {cookie['name']}", cookie["value"])
            names.append(cookie["name"])
    return names


def at_dot_login_form(driver, idp, sensitive) -> None:
    """Waits for the browser to be on DOT's login form, having been sent there by the relay's
    authorization request; notes the relay's cookie."""
    wait_for_url(driver, lambda url: url.startswith(f"{idp.url}/accounts/login/"), "DOT's login form")
    assert note_login_cookies(driver, sensitive), "the relay set no login cookie before sending the browser to the IdP"


def log_in_at_dot(driver, idp, sensitive, relay_url: str) -> None:
    """The person logs in on DOT's form, consents, and the browser returns to the relay at
    `relay_url` (past its callback)."""
    at_dot_login_form(driver, idp, sensitive)
    login_at_dot(driver, idp.person.username, idp.person.password)
    consent(driver)
    wait_for_url(driver, lambda url: url.startswith(relay_url) and CALLBACK_PATH not in url, "the browser back at the relay")


def page_text(driver) -> str:
    from selenium.webdriver.common.by import By
    return driver.find_element(By.TAG_NAME, "body").text


def echoed(driver, timeout: float = 20) -> dict:
    """The echo upstream's JSON answer the browser shows (waiting for it to load)."""
    from selenium.common.exceptions import WebDriverException

    def parsed(d):
        try:
            doc = json.loads(page_text(d))
        except (ValueError, WebDriverException):  # not the echo's page (yet)
            return None
        return doc if isinstance(doc, dict) and "headers" in doc else None
    return wait_for(driver, parsed, "the echo upstream's answer", timeout)


def echoed_bearer(driver) -> str:
    """The token in the Authorization header the echo upstream received for the browser's page."""
    doc = echoed(driver)
    values = [v for k, v in doc["headers"] if k.lower() == "authorization"]
    assert len(values) == 1, f"the upstream received {len(values)} Authorization headers; browser at {where(driver)}"
    scheme, _, token = values[0].partition(" ")
    assert scheme == "Bearer" and token
    return token


def wait_for_title(driver, predicate, what: str, timeout: float = 20) -> str:
    return wait_for(driver, lambda d: d.title if predicate(d.title) else None, what, timeout)
