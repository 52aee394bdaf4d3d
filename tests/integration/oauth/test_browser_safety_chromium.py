"""Browser safety with headless Chromium: the relay listens on 127.0.0.1 and adds a token to what
it forwards, so any web page the person opens could make their browser send requests to it.
These tests show, with a real browser, the real relay, django-oauth-toolkit issuing the token
(client_credentials) and the echo upstream, that:

- a page of another origin (the attacker, served on 127.0.0.2) gets nothing through with the
  token: a form POST, fetch() in no-cors and cors mode, <img>, <iframe> and <script> all reach
  the relay and are refused 403 (`cross-site-request`), none reaches the upstream, and the page
  reads no answer;
- an origin listed in `routes[N].browser.allowOrigins` does get through: the relay answers the
  CORS preflight itself, forwards the request with the token and lets the page read the answer;
  an origin not listed (127.0.0.3) still fails;
- a cross-site top-level GET navigation is served with the token (SameSite=Lax semantics: a
  link to the relay works);
- DNS rebinding (a name of the attacker's that now resolves to 127.0.0.1) meets the Host check:
  the page's same-origin fetch gets the 421 `misdirected-request` problem, not the upstream;
- the refusals are counted in /metrics (`oauth_relay_refused_requests_total{reason}`).

A first test sends the attacker's requests to a recording server instead of the relay: what
Chromium marks them with (Origin, Sec-Fetch-*) is the premise of the relay's rule, and it shows
Chromium itself blocks none of them (loopback to loopback: Private/Local Network Access does not
apply), so a refusal the later tests see is the relay's. Raw-socket tests at the end pin the
rules the browser tests rely on (the problems' members, the preflight's headers, which Hosts are
served), so that a failure of a browser test can be told from a failure of the rule.

Every server is on loopback (127.0.0.1, .2, .3); Chromium resolves no name but `localhost` and,
for the rebinding test, `rebind.test` (to 127.0.0.1). Every wait is bounded (deadlines.scaled).
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import browser
from admin_client import log_records, start_with_admin
from browser import PAGE_SECONDS, start_chromium, wait_for_url
from deadlines import scaled, wait_until
from http_client import RawConnection, Response, assert_problem
from idp_processes import sha256
from idp_relay import bearer_in_echo, oauth_route
from login_relay import echoed, echoed_bearer
from processes import LOOPBACK

pytestmark = pytest.mark.oauth

ATTACKER_HOST = "127.0.0.2"          # the attacker's site: another origin, another site
OTHER_HOST = "127.0.0.3"             # a second site, never listed in allowOrigins
REBIND_NAME = "rebind.test"          # the attacker's name that "now resolves" to the relay
CROSS_SITE = "urn:oauth-relay:problem:cross-site-request"
MISDIRECTED = "urn:oauth-relay:problem:misdirected-request"
REFUSED = "oauth_relay_refused_requests_total"
FETCH_METADATA = ("Origin", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-User")


# ---------------------------------------------------------------------------------------------
# Chromium with the test's addresses: 127.0.0.2 and .3 reachable, and `rebind.test` mapped to
# 127.0.0.1 (before the catch-all that makes every other name fail).

RESOLVER_RULES = (f"--host-resolver-rules=MAP {REBIND_NAME} {LOOPBACK} , MAP * ~NOTFOUND , EXCLUDE localhost , "
                  f"EXCLUDE {LOOPBACK} , EXCLUDE {ATTACKER_HOST} , EXCLUDE {OTHER_HOST} , EXCLUDE [::1]")


def chromium_arguments() -> list[str]:
    """browser.CHROMIUM_ARGUMENTS with this module's resolver rules instead of the default ones."""
    arguments = [a for a in browser.CHROMIUM_ARGUMENTS if not a.startswith("--host-resolver-rules=")]
    assert len(arguments) == len(browser.CHROMIUM_ARGUMENTS) - 1, "browser.py's resolver rules moved"
    return arguments + [RESOLVER_RULES]


@pytest.fixture
def chromium(tmp_path, monkeypatch):
    """A headless Chromium (browser.start_chromium: fresh profile, background services off) with
    RESOLVER_RULES."""
    monkeypatch.setattr(browser, "CHROMIUM_ARGUMENTS", chromium_arguments())
    driver = start_chromium(tmp_path / "chromium-profile", tmp_path / "chromedriver.log")
    try:
        yield driver
    finally:
        driver.quit()


# ---------------------------------------------------------------------------------------------
# The attacker's web server: serves the pages a test writes, records every request it gets.

@dataclass
class Received:
    """A request as a test server received it."""
    method: str
    path: str
    headers: list[tuple[str, str]]

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def fetch_metadata(self) -> dict[str, str | None]:
        return {name: self.header(name) for name in FETCH_METADATA}


class PageServer:
    """An HTTP server on `host` (a loopback address), port picked by the kernel. `pages` maps a
    path to the HTML it serves; any other path gets 404, or with `answer_all` a 200 `ok` (text/plain,
    no CORS headers) to any method, as a stand-in for the relay that only records. Each request
    is recorded (`received`) and logged, with its headers, to `log_path`."""

    name = "page server"

    def __init__(self, host: str, log_path: Path, answer_all: bool = False):
        self.host = host
        self.log_path = log_path
        self.answer_all = answer_all
        self.pages: dict[str, str] = {}
        self.received: list[Received] = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> "PageServer":
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                path = self.path.split("?")[0]
                record = Received(self.command, path, list(self.headers.items()))
                with owner.lock:
                    owner.received.append(record)
                    with open(owner.log_path, "a") as log:
                        log.write(f"{self.command} {self.path} {json.dumps(record.headers)}\n")
                if path in owner.pages and self.command == "GET":
                    status, content_type, body = 200, "text/html; charset=utf-8", owner.pages[path].encode()
                elif owner.answer_all:
                    status, content_type, body = 200, "text/plain", b"ok"
                else:
                    status, content_type, body = 404, "text/plain", b"not found"
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.send_header("Connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = do_OPTIONS = do_HEAD = handle_any

            def log_message(self, *args):
                pass

        self.log_path.touch()
        self.server = ThreadingHTTPServer((self.host, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, name=f"page server {self.host}", daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str) -> str:
        return self.origin + path

    def requests_to(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.path == path]


@pytest.fixture
def start_page_server(tmp_path, register_log):
    """start_page_server(host, answer_all=False) -> a running PageServer, stopped after the test."""
    started: list[PageServer] = []

    def start(host: str, answer_all: bool = False) -> PageServer:
        server = PageServer(host, tmp_path / f"page-server-{len(started)}-{host}.log", answer_all)
        started.append(server)
        register_log(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


# ---------------------------------------------------------------------------------------------
# A rebinding name: the first page of http://rebind.test:PORT comes from the attacker; after it,
# every connection to that name reaches the relay (as if DNS now answered 127.0.0.1 for the
# relay's port).

class RebindingServer:
    """A TCP server on 127.0.0.1. The first request for `/attack.html` gets `page` (with
    `Connection: close`); from then on, every connection is forwarded byte for byte to
    127.0.0.1:`relay_port`. A request before the page that is not the page gets 404. Each
    request head it reads first on a connection is recorded (`heads`), with what it did."""

    name = "rebinding server"

    def __init__(self, relay_port: int, page: str, log_path: Path):
        self.relay_port = relay_port
        self.page = page
        self.log_path = log_path
        self.rebound = threading.Event()
        self.heads: list[tuple[str, Received]] = []   # ("page" | "forwarded" | "404", request)
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        self.closed = False

    def start(self) -> "RebindingServer":
        self.log_path.touch()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind((LOOPBACK, 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, name="rebinding accept", daemon=True).start()
        return self

    @property
    def origin(self) -> str:
        return f"http://{REBIND_NAME}:{self.port}"

    def _note(self, what: str, request: Received) -> None:
        with self.lock:
            self.heads.append((what, request))
            with open(self.log_path, "a") as log:
                log.write(f"{what}: {request.method} {request.path} {json.dumps(request.headers)}\n")

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if self.closed:
                    conn.close()
                    return
                self.sockets.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(scaled(PAGE_SECONDS))
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            request = parse_head(data)
            if self.rebound.is_set():
                self._note("forwarded", request)
                self._forward(conn, data)
            elif request.path == "/attack.html":
                self._note("page", request)
                body = self.page.encode()
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                             b"Cache-Control: no-store\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                self.rebound.set()
            else:
                self._note("404", request)
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass
        finally:
            conn.close()

    def _forward(self, client: socket.socket, first: bytes) -> None:
        relay = socket.create_connection((LOOPBACK, self.relay_port), timeout=scaled(PAGE_SECONDS))
        with self.lock:
            self.sockets.append(relay)
        relay.sendall(first)

        def pump(src: socket.socket, dst: socket.socket) -> None:
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        back = threading.Thread(target=pump, args=(relay, client), daemon=True)
        back.start()
        pump(client, relay)
        back.join(scaled(PAGE_SECONDS))
        relay.close()

    def stop(self) -> None:
        with self.lock:
            self.closed = True
            sockets = list(self.sockets)
        self.listener.close()
        for s in sockets:
            try:
                s.close()
            except OSError:
                pass

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def parse_head(data: bytes) -> Received:
    lines = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    method, target, _ = (lines[0].split(" ") + ["", ""])[:3]
    headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:])]
    return Received(method, target.split("?")[0], headers)


# ---------------------------------------------------------------------------------------------
# Pages.

def html_page(title: str, body: str) -> str:
    """A page whose scripts note results in `window.results` (name -> value). Its icon is inline,
    so Chromium asks no server for a favicon."""
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title><link rel="icon" href="data:,">
<script>
  window.results = {{}};
  function note(name, value) {{ window.results[name] = value; }}
</script></head>
<body>
{body}
</body></html>"""


@dataclass(frozen=True)
class Attack:
    """One request the attacker's page makes the browser send to the relay, and how Chromium
    marks it (Fetch Metadata, and whether it carries Origin)."""
    kind: str
    method: str
    path: str
    mode: str
    dest: str
    sends_origin: bool


ATTACKS = [
    Attack("form POST into an iframe", "POST", "/api/delete", "navigate", "iframe", True),
    Attack("fetch no-cors POST", "POST", "/api/fetch-no-cors", "no-cors", "empty", True),
    Attack("fetch cors GET", "GET", "/api/fetch-cors", "cors", "empty", True),
    Attack("<img>", "GET", "/api/img", "no-cors", "image", False),
    Attack("<iframe>", "GET", "/api/frame", "navigate", "iframe", False),
    Attack("<script>", "GET", "/api/script", "no-cors", "script", False),
]
# What the page itself sees settle (the navigations into frames give it no reliable signal).
PAGE_RESULTS = ("img", "script", "fetch-no-cors", "fetch-cors")


def attack_page(target: str) -> str:
    """The attacker's page: on load, sends every request of ATTACKS to `target` (the relay's
    origin) and notes what it could observe of the answers."""
    return html_page("attack", f"""
<iframe name="sink" title="sink"></iframe>
<form id="delete" method="POST" action="{target}/api/delete" target="sink"><input name="confirm" value="yes"></form>
<img src="{target}/api/img" alt="" onload="note('img', 'load')" onerror="note('img', 'error')">
<iframe src="{target}/api/frame" title="frame"></iframe>
<script src="{target}/api/script" onload="note('script', 'load')" onerror="note('script', 'error')"></script>
<script>
  document.getElementById('delete').submit();
  fetch('{target}/api/fetch-no-cors', {{mode: 'no-cors', method: 'POST', body: 'confirm=yes'}})
    .then(r => note('fetch-no-cors', {{outcome: 'response', type: r.type, status: r.status}}),
          e => note('fetch-no-cors', {{outcome: 'error', error: String(e)}}));
  fetch('{target}/api/fetch-cors', {{mode: 'cors'}})
    .then(r => r.text().then(body => note('fetch-cors', {{outcome: 'response', status: r.status, body: body}})),
          e => note('fetch-cors', {{outcome: 'error', error: String(e)}}));
</script>""")


def navigation_page(target_url: str) -> str:
    """A page that sends the browser, top level, to `target_url` (no user gesture)."""
    return html_page("navigate", f"<script>location = {json.dumps(target_url)};</script>")


def rebinding_page() -> str:
    """The attacker's page at http://rebind.test:PORT: once the name points at the relay, a
    same-origin fetch of /api/secret; notes the status, Content-Type and body it could read."""
    return html_page("rebind", """
<script>
  fetch('/api/secret')
    .then(r => r.text().then(body => note('secret', {outcome: 'response', status: r.status,
                                                      contentType: r.headers.get('content-type'), body: body})),
          e => note('secret', {outcome: 'error', error: String(e)}));
</script>""")


FETCH_SCRIPT = """
const [url, init, done] = arguments;
fetch(url, init).then(
  r => r.text().then(body => done({outcome: 'response', status: r.status, type: r.type, body: body}),
                     e => done({outcome: 'body-error', status: r.status, error: String(e)})),
  e => done({outcome: 'error', error: String(e)}));
"""


def page_fetch(driver, url: str, init: dict) -> dict:
    """fetch(url, init) run by the page the browser shows (its origin is the request's origin);
    {outcome: 'response', status, type, body} or {outcome: 'error', error}."""
    return driver.execute_async_script(FETCH_SCRIPT, url, init)


def redacted(text: str) -> str:
    """`text` (an answer's body, for a failure message) with every bearer token replaced."""
    return re.sub(r"(Bearer|DPoP)\s+[^\s\"',\]]+", r"\1 <redacted>", text)


def shown(resp: Response) -> str:
    """An answer's body for a failure message: at most 400 characters, tokens redacted."""
    return repr(redacted(resp.body.decode("utf-8", "replace"))[:400])


def problem(resp: Response, status: int, route: str | None = None) -> dict:
    """assert_problem, after checking the status with a message that shows no token (an answer
    forwarded to the echo upstream carries the injected one)."""
    assert resp.status == status, f"expected the relay's {status}, got {resp.status}: {shown(resp)}"
    return assert_problem(resp, status, route)


def page_results(driver) -> dict:
    return driver.execute_script("return window.results || {};") or {}


def settle(condition, timeout: float, describe) -> None:
    """Polls `condition()` until true or `timeout` (scaled) passes; then fails with `describe()`."""
    deadline = time.monotonic() + scaled(timeout)
    while not condition():
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {scaled(timeout):.0f}s: {describe()}", pytrace=False)
        time.sleep(0.05)


# ---------------------------------------------------------------------------------------------
# The relay: route `api` (/api/) to the echo upstream, with identity `orders` (DOT's
# client_credentials application `orders-cc`).

def api_route(upstream, browser_access: dict | None = None) -> dict:
    options = {"name": "api"}
    if browser_access is not None:
        options["browser"] = browser_access
    return oauth_route(upstream, "/api/", "orders", **options)


def identities(idp) -> dict:
    return {"orders": idp.identity("orders-cc")}


def start_api_relay(start_relay, upstream, idp, browser_access: dict | None = None, **top):
    return start_relay([api_route(upstream, browser_access)], identities=identities(idp), **top)


def raw(relay, method: str, target: str, headers=(), host: str | None = None) -> Response:
    """One request on a fresh connection, Host the relay's own address unless `host` is given."""
    with RawConnection(relay.host, relay.port) as conn:
        return conn.request(method, target, [*headers, ("Connection", "close")],
                            host=host or f"{relay.host}:{relay.port}")


def access_log(relay) -> list[dict]:
    """The relay's access log lines (JSON: method, path, route, status, ...)."""
    return log_records(relay, "access")


def answers_to(relay, path: str) -> list[tuple[str, int]]:
    """(method, status) of each access log line for `path` (query left out)."""
    return [(r.get("method"), r.get("status")) for r in access_log(relay) if str(r.get("path", "")).split("?")[0] == path]


def upstream_requests(upstream) -> int:
    """How many request heads the echo upstream has received (its own counter, not through the relay)."""
    return upstream.stats()["requests_started"]


def echo_values(echo: dict, name: str) -> list[str]:
    return [v for k, v in echo["headers"] if k.lower() == name.lower()]


def issued_token_sha256(idp) -> str:
    """The SHA-256 of the one access token DOT issued (to the relay)."""
    [record] = idp.token_requests(status=200)
    return record["access_token_sha256"]


def fetch_metadata_table(rows: list[tuple[str, str, dict]]) -> str:
    """Rows (kind, method, {header: value}) as an aligned text table, for reports."""
    header = ["request", "method", *FETCH_METADATA]
    lines = [header] + [[kind, method, *[values.get(h) or "-" for h in FETCH_METADATA]] for kind, method, values in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines)


def run_attack(driver, page: PageServer, relay) -> dict:
    """Opens the attacker's page (on `page`, aimed at `relay`), waits until the page has seen
    every subresource settle and the relay's access log names every attack; returns the page's
    results. On timeout it fails naming what the relay logged and what the page saw: an attack
    missing from the log is one Chromium did not send (or the relay did not log)."""
    page.pages["/attack.html"] = attack_page(relay.url)
    driver.get(page.url("/attack.html"))

    def done() -> bool:
        results = page_results(driver)
        return all(name in results for name in PAGE_RESULTS) and all(answers_to(relay, a.path) for a in ATTACKS)

    def describe() -> str:
        missing = [f"{a.kind} ({a.method} {a.path})" for a in ATTACKS if not answers_to(relay, a.path)]
        return (f"the relay's access log has no line for: {missing or 'none missing'} (not sent by Chromium, "
                f"or not logged by the relay); the page saw {page_results(driver)}")

    settle(done, PAGE_SECONDS, describe)
    return page_results(driver)


# ---------------------------------------------------------------------------------------------
# The premise: what Chromium sends, and that it blocks none of it itself.

def test_chromium_sends_every_cross_site_request_marked_with_fetch_metadata(chromium, start_page_server, capsys):
    """The attacker's page at http://127.0.0.2:P aimed at a recording server on 127.0.0.1 (no
    relay): every request of ATTACKS arrives (Chromium blocks none of them, loopback to
    loopback), each with `Sec-Fetch-Site: cross-site` and its mode and destination; the ones
    that are not GETs without CORS carry Origin. A top-level navigation arrives as
    navigate/document, and a fetch PUT with a custom header as an OPTIONS preflight. The table
    printed (pytest -s) is what the relay's cross-site rule sees."""
    target = start_page_server(LOOPBACK, answer_all=True)
    attacker = start_page_server(ATTACKER_HOST)
    attacker.pages["/attack.html"] = attack_page(target.origin)
    attacker.pages["/navigate.html"] = navigation_page(target.url("/api/nav"))

    chromium.get(attacker.url("/attack.html"))
    settle(lambda: all(n in page_results(chromium) for n in PAGE_RESULTS) and all(target.requests_to(a.path) for a in ATTACKS),
           PAGE_SECONDS, lambda: (f"requests at the recorder: {[(r.method, r.path) for r in target.received]}; "
                                  f"the page saw {page_results(chromium)}"))
    cors_put = page_fetch(chromium, target.url("/api/put"), {"mode": "cors", "method": "PUT", "body": "{}",
                                                             "headers": {"X-Custom": "1", "Content-Type": "application/json"}})
    chromium.get(attacker.url("/navigate.html"))
    wait_for_url(chromium, lambda url: url == target.url("/api/nav"), "the top-level navigation to the recorder")

    rows = []
    for attack in ATTACKS:
        [request] = target.requests_to(attack.path)
        rows.append((attack.kind, request.method, request.fetch_metadata()))
    [preflight] = target.requests_to("/api/put")
    rows.append(("fetch cors PUT + X-Custom: preflight", preflight.method, preflight.fetch_metadata()))
    [navigation] = target.requests_to("/api/nav")
    rows.append(("top-level navigation (location=)", navigation.method, navigation.fetch_metadata()))
    table = fetch_metadata_table(rows)
    with capsys.disabled():
        print(f"\nWhat Chromium sent from {attacker.origin} to {target.origin}:\n{table}")

    for attack, (_, method, seen) in zip(ATTACKS, rows):
        expected = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": attack.mode, "Sec-Fetch-Dest": attack.dest}
        assert method == attack.method and {k: seen[k] for k in expected} == expected, f"{attack.kind}:\n{table}"
        assert (seen["Origin"] == attacker.origin) if attack.sends_origin else seen["Origin"] in (None, attacker.origin), \
            f"{attack.kind}: Origin {seen['Origin']!r}\n{table}"
    assert preflight.method == "OPTIONS" and preflight.header("Access-Control-Request-Method") == "PUT", table
    assert (preflight.header("Origin"), preflight.header("Sec-Fetch-Mode")) == (attacker.origin, "cors"), table
    assert cors_put["outcome"] == "error", f"a preflight without CORS headers must fail the fetch: {cors_put}"
    assert target.requests_to("/api/put") == [preflight], "the PUT itself must not be sent after a failed preflight"
    nav = navigation.fetch_metadata()
    assert (nav["Sec-Fetch-Site"], nav["Sec-Fetch-Mode"], nav["Sec-Fetch-Dest"]) == ("cross-site", "navigate", "document"), table


# ---------------------------------------------------------------------------------------------
# (a) A page of another origin gets nothing through with the token.

def test_an_attackers_page_gets_no_request_through_with_the_token(django_idp, upstream, start_relay, chromium,
                                                                    start_page_server):
    """Every request the attacker's page (http://127.0.0.2:P) makes the browser send to the relay
    (form POST into an iframe, fetch no-cors POST, fetch cors GET, <img>, <iframe>, <script>)
    reaches the relay and is answered 403 by it; the upstream receives none of them (so none
    with the token), and the page reads nothing: its cors fetch fails as a network error, its
    no-cors fetch is opaque, the image and the script fail to load. A request without Origin and
    Fetch Metadata (a script's) still gets the token, so the route does inject one."""
    relay = start_api_relay(start_relay, upstream, django_idp)
    attacker = start_page_server(ATTACKER_HOST)
    results = run_attack(chromium, attacker, relay)

    refused = {a.kind: answers_to(relay, a.path) for a in ATTACKS}
    for attack in ATTACKS:
        assert refused[attack.kind], (f"Chromium never sent the {attack.kind} to the relay (blocked by the browser "
                                      f"itself?): this test then cannot show that the relay refuses it")
        assert refused[attack.kind] == [(attack.method, 403)], f"the relay answered the {attack.kind}: {refused[attack.kind]}"
    assert upstream_requests(upstream) == 0, f"the upstream received requests the relay should have refused: {refused}"

    assert results["fetch-cors"]["outcome"] == "error", \
        f"the page read the relay's answer to its cors fetch: {redacted(json.dumps(results['fetch-cors']))}"
    assert "TypeError" in results["fetch-cors"]["error"], results["fetch-cors"]
    assert results["fetch-no-cors"] == {"outcome": "response", "type": "opaque", "status": 0}, results["fetch-no-cors"]
    assert (results["img"], results["script"]) == ("error", "error"), results

    # The route works and injects DOT's token for a request no browser page made.
    control = raw(relay, "GET", "/api/control")
    assert control.status == 200, f"{control.status}: {shown(control)}"
    assert sha256(bearer_in_echo(control.json())) == issued_token_sha256(django_idp)
    assert upstream_requests(upstream) == 1


# ---------------------------------------------------------------------------------------------
# (b) An origin listed in routes[N].browser.allowOrigins.

def allowing_relay(start_relay, upstream, idp, origin: str):
    return start_api_relay(start_relay, upstream, idp, {"allowOrigins": [origin], "maxAgeSeconds": 600})


def test_a_listed_origin_reads_the_answer_after_a_preflight_the_relay_answers_itself(django_idp, upstream, start_relay,
                                                                                      chromium, start_page_server):
    """With the page's origin in `browser.allowOrigins`, a cors fetch PUT with `X-Custom` and a
    JSON Content-Type (so the browser sends a preflight first) succeeds: the relay answers the
    OPTIONS itself (204, the upstream never sees it), forwards the PUT with DOT's token, and the
    page reads the upstream's answer. A plain cors GET succeeds the same way."""
    app = start_page_server(ATTACKER_HOST)
    relay = allowing_relay(start_relay, upstream, django_idp, app.origin)
    app.pages["/app.html"] = html_page("app", "")
    chromium.get(app.url("/app.html"))

    put = page_fetch(chromium, relay.url + "/api/put", {"mode": "cors", "method": "PUT", "body": "{}",
                                                        "headers": {"X-Custom": "1", "Content-Type": "application/json"}})
    assert put["outcome"] == "response" and put["status"] == 200, \
        f"the listed origin's PUT failed: {redacted(json.dumps(put))}; the relay answered {access_log(relay)}"
    echo = json.loads(put["body"])
    assert (echo["method"], echo["target"]) == ("PUT", "/api/put")
    assert echo_values(echo, "X-Custom") == ["1"]
    assert sha256(bearer_in_echo(echo)) == issued_token_sha256(django_idp)
    wait_until(lambda: len(answers_to(relay, "/api/put")) == 2, 5, "access log lines for the preflight and the PUT")
    assert answers_to(relay, "/api/put") == [("OPTIONS", 204), ("PUT", 200)]
    assert upstream_requests(upstream) == 1, "the upstream received the preflight (or more than the PUT)"

    get = page_fetch(chromium, relay.url + "/api/get", {"mode": "cors"})
    assert get["outcome"] == "response" and get["status"] == 200, f"the listed origin's GET failed: {redacted(json.dumps(get))}"
    echo = json.loads(get["body"])
    assert (echo["method"], echo["target"]) == ("GET", "/api/get")
    assert sha256(bearer_in_echo(echo)) == issued_token_sha256(django_idp)
    assert upstream_requests(upstream) == 2


def test_an_origin_not_listed_still_fails(django_idp, upstream, start_relay, chromium, start_page_server):
    """With http://127.0.0.2:P listed, a page at http://127.0.0.3:Q gets nowhere: its cors GET and
    the preflight of its cors PUT are refused 403 by the relay, both fetches fail in the page, and
    the upstream receives nothing."""
    listed = start_page_server(ATTACKER_HOST)
    other = start_page_server(OTHER_HOST)
    relay = allowing_relay(start_relay, upstream, django_idp, listed.origin)
    other.pages["/app.html"] = html_page("other", "")
    chromium.get(other.url("/app.html"))

    get = page_fetch(chromium, relay.url + "/api/get", {"mode": "cors"})
    put = page_fetch(chromium, relay.url + "/api/put", {"mode": "cors", "method": "PUT", "body": "{}",
                                                        "headers": {"X-Custom": "1", "Content-Type": "application/json"}})
    assert get["outcome"] == "error", f"an unlisted origin read the relay's answer: {redacted(json.dumps(get))}"
    assert put["outcome"] == "error", f"an unlisted origin read the relay's answer: {redacted(json.dumps(put))}"
    wait_until(lambda: answers_to(relay, "/api/get") and answers_to(relay, "/api/put"), 5,
               "access log lines for the unlisted origin's requests")
    assert answers_to(relay, "/api/get") == [("GET", 403)], access_log(relay)
    assert answers_to(relay, "/api/put") == [("OPTIONS", 403)], access_log(relay)
    assert upstream_requests(upstream) == 0


# ---------------------------------------------------------------------------------------------
# (c) Top-level navigation.

def test_a_cross_site_top_level_navigation_is_served_with_the_token(django_idp, upstream, start_relay, chromium,
                                                                     start_page_server):
    """The attacker's page sends the browser, top level, to http://127.0.0.1:RELAY/api/nav (GET,
    navigate/document, cross-site): like a SameSite=Lax cookie, the token goes along. The
    browser shows the upstream's answer, which got DOT's token. (A link to the relay from any
    page works; what such a GET does must be safe, as HTTP requires of GET.)"""
    relay = start_api_relay(start_relay, upstream, django_idp)
    attacker = start_page_server(ATTACKER_HOST)
    attacker.pages["/navigate.html"] = navigation_page(relay.url + "/api/nav")
    chromium.get(attacker.url("/navigate.html"))
    wait_for_url(chromium, lambda url: url == relay.url + "/api/nav", "the navigation to the relay")

    echo = echoed(chromium)
    assert (echo["method"], echo["target"]) == ("GET", "/api/nav")
    assert sha256(echoed_bearer(chromium)) == issued_token_sha256(django_idp)
    # It was a cross-site navigation (the relay forwards the Fetch Metadata it got).
    seen = {name: echo_values(echo, name) for name in FETCH_METADATA}
    assert (seen["Sec-Fetch-Site"], seen["Sec-Fetch-Mode"], seen["Sec-Fetch-Dest"]) == \
        (["cross-site"], ["navigate"], ["document"]), seen
    assert upstream_requests(upstream) == 1
    assert answers_to(relay, "/api/nav") == [("GET", 200)]


# ---------------------------------------------------------------------------------------------
# (d) DNS rebinding.

def test_a_rebound_name_gets_the_misdirected_problem_not_the_upstream(django_idp, upstream, start_relay, chromium,
                                                                        tmp_path, register_log):
    """DNS rebinding: the attacker's page is at http://rebind.test:F (Chromium resolves the name
    to 127.0.0.1, where the test's server serves the page once, with Connection: close). Then
    the name "points at the relay": every later connection to F is forwarded to the relay. The
    page's fetch('/api/secret') is same-origin for the browser (no Origin, no cross-site Fetch
    Metadata: only the Host, `rebind.test:F`, betrays it), so it would read the answer; the
    relay refuses that Host 421 `misdirected-request`, the page reads that problem, and the
    upstream receives nothing."""
    relay = start_api_relay(start_relay, upstream, django_idp)
    rebinding = RebindingServer(relay.port, rebinding_page(), tmp_path / "rebinding.log")
    register_log(rebinding)
    rebinding.start()
    try:
        chromium.get(rebinding.origin + "/attack.html")
        settle(lambda: "secret" in page_results(chromium), PAGE_SECONDS,
               lambda: f"the page's fetch to settle; the rebinding server saw "
                       f"{[(w, r.method, r.path) for w, r in rebinding.heads]}")
        secret = page_results(chromium)["secret"]
        forwarded = [r for what, r in rebinding.heads if what == "forwarded"]
    finally:
        rebinding.stop()

    # Chromium resends a request answered 421 Misdirected Request once, on a new connection
    # (seen on every run with Chromium 156): one fetch, one or two requests at the relay.
    heads = [(w, r.method, r.path) for w, r in rebinding.heads]
    assert forwarded and [r.path for r in forwarded] == ["/api/secret"] * len(forwarded) and len(forwarded) <= 2, \
        f"the fetch did not reach the relay through the rebound name (or more than it did): {heads}"
    for fetch in forwarded:
        assert fetch.header("Host") == f"{REBIND_NAME}:{rebinding.port}"
        # The browser sees a same-origin request to a non-secure origin: no Origin, no Fetch
        # Metadata; nothing but Host tells the relay it is not its own page's.
        assert fetch.header("Origin") is None and fetch.header("Sec-Fetch-Site") in (None, "same-origin"), \
            fetch.fetch_metadata()

    assert secret["outcome"] == "response", f"the page's fetch failed instead of getting the relay's 421: {secret.get('error')}"
    assert secret["status"] == 421, f"the page read {secret['status']} from the relay: {redacted(secret['body'])[:600]!r}"
    assert (secret["contentType"] or "").split(";")[0].strip() == "application/problem+json", secret["contentType"]
    doc = json.loads(secret["body"])
    assert (doc["type"], doc["status"]) == (MISDIRECTED, 421), doc
    assert "Bearer" not in secret["body"]
    assert upstream_requests(upstream) == 0
    assert answers_to(relay, "/api/secret") == [("GET", 421)] * len(forwarded)


# ---------------------------------------------------------------------------------------------
# (e) Metrics.

def test_refusals_are_counted_by_reason_in_metrics(django_idp, upstream, start_relay, chromium, start_page_server):
    """After the attacker's page, oauth_relay_refused_requests_total{reason="cross-site"} counts
    each of its refused requests (as many as the access log's 403s), and a request for a Host
    the relay does not serve counts under reason="host"."""
    relay, admin = start_with_admin(start_relay, [api_route(upstream)], identities=identities(django_idp))
    before = admin.scrape()
    assert (before.total(REFUSED, reason="cross-site"), before.total(REFUSED, reason="host")) == (0, 0), before.summary()

    run_attack(chromium, start_page_server(ATTACKER_HOST), relay)
    refused = sum(1 for r in access_log(relay) if r.get("status") == 403)
    assert refused == len(ATTACKS), access_log(relay)
    admin.wait_for(lambda m: m.total(REFUSED, reason="cross-site") == refused,
                   f'{REFUSED}{{reason="cross-site"}} == {refused}')

    problem(raw(relay, "GET", "/api/x", host="attacker.example"), 421)
    after = admin.wait_for(lambda m: m.total(REFUSED, reason="host") == 1, f'{REFUSED}{{reason="host"}} == 1')
    assert after.total(REFUSED, reason="cross-site") == refused, after.summary()


# ---------------------------------------------------------------------------------------------
# Without a browser: the rules the browser tests rely on, request by request.

def test_the_cross_site_refusal_names_the_route_the_origin_and_the_setting(django_idp, upstream, start_relay):
    """Each kind of cross-site request gets 403 `cross-site-request` with the route's name, the
    request's origin and, in `detail`, the key that would allow it
    (`routes[0].browser.allowOrigins`; for `Origin: null`, which no key can allow, why not); no
    CORS header; nothing forwarded."""
    relay = start_api_relay(start_relay, upstream, django_idp)
    page = f"http://{ATTACKER_HOST}:8000"
    sibling = f"http://{LOOPBACK}:1"   # the same site (the host is the site), another origin
    cases = [
        ("fetch from another site", "GET", [("Origin", page), ("Sec-Fetch-Site", "cross-site"),
                                            ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "empty")], page),
        ("a same-site page (other port)", "GET", [("Origin", sibling), ("Sec-Fetch-Site", "same-site"),
                                                  ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "empty")], sibling),
        ("a form POST navigating the top level", "POST", [("Origin", page), ("Sec-Fetch-Site", "cross-site"),
                                                          ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")], page),
        ("Origin without Fetch Metadata", "POST", [("Origin", page)], page),
        ("Origin null", "POST", [("Origin", "null")], "null"),
    ]
    for what, method, headers, origin in cases:
        resp = raw(relay, method, "/api/x", headers)
        doc = problem(resp, 403, route="api")
        assert (doc["type"], doc.get("origin")) == (CROSS_SITE, origin), f"{what}: {doc}"
        if origin == "null":
            # No key to name: `check` refuses "null" in allowOrigins (any page can be in an
            # opaque origin), so the detail says why instead.
            assert "null" in doc["detail"], f"{what}: {doc['detail']!r}"
        else:
            assert "routes[0].browser.allowOrigins" in doc["detail"], f"{what}: {doc['detail']!r}"
        assert not [k for k, _ in resp.headers if k.lower().startswith("access-control-")], f"{what}: {resp.headers}"
    assert upstream_requests(upstream) == 0


def test_requests_that_are_not_cross_site_get_the_token(django_idp, upstream, start_relay):
    """A script's request (no Origin, no Fetch Metadata), a request the person typed
    (`Sec-Fetch-Site: none`), one of the relay's own pages (same-origin) and a top-level GET or
    HEAD navigation from another site are forwarded with the token."""
    relay = start_api_relay(start_relay, upstream, django_idp)
    page = f"http://{ATTACKER_HOST}:8000"
    navigation = [("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")]
    cases = [
        ("a script", "GET", []),
        ("typed in the address bar", "GET", [("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate"),
                                             ("Sec-Fetch-Dest", "document")]),
        ("the relay's own origin", "POST", [("Origin", relay.url), ("Sec-Fetch-Site", "same-origin"),
                                            ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "empty")]),
        ("the relay's own origin without Fetch Metadata", "POST", [("Origin", relay.url)]),
        ("a cross-site top-level GET navigation", "GET", navigation),
        ("a cross-site top-level HEAD navigation", "HEAD", navigation),
    ]
    token = None
    for what, method, headers in cases:
        resp = raw(relay, method, "/api/x", headers)
        assert resp.status == 200, f"{what}: {resp.status} {shown(resp)}"
        if method != "HEAD":
            token = bearer_in_echo(resp.json())
    assert sha256(token) == issued_token_sha256(django_idp)
    assert upstream_requests(upstream) == len(cases)


def test_the_relay_answers_a_listed_origins_preflight_itself(django_idp, upstream, start_relay):
    """A listed origin's preflight: 204 from the relay with the CORS headers (origin, methods,
    headers, max age, credentials, Vary: Origin), the upstream not asked; the request after it is
    forwarded with the token and its answer carries Access-Control-Allow-Origin. The same
    preflight from an unlisted origin: 403, no CORS header."""
    listed = f"http://{ATTACKER_HOST}:8000"
    relay = start_api_relay(start_relay, upstream, django_idp,
                            {"allowOrigins": [listed], "allowHeaders": ["Content-Type", "X-Custom"],
                             "allowMethods": ["GET", "PUT"], "exposeHeaders": ["X-Echo-Connection-Id"],
                             "maxAgeSeconds": 600})
    preflight = [("Access-Control-Request-Method", "PUT"), ("Access-Control-Request-Headers", "content-type,x-custom"),
                 ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Dest", "empty")]
    resp = raw(relay, "OPTIONS", "/api/put", [("Origin", listed), *preflight])
    assert resp.status == 204, f"{resp.status} {shown(resp)}"
    assert resp.header("access-control-allow-origin") == listed
    assert resp.header("access-control-allow-credentials") == "true"
    assert "PUT" in [m.strip() for m in (resp.header("access-control-allow-methods") or "").split(",")], resp.headers
    allowed_headers = {h.strip().lower() for h in (resp.header("access-control-allow-headers") or "").split(",")}
    assert {"content-type", "x-custom"} <= allowed_headers, resp.headers
    assert resp.header("access-control-max-age") == "600"
    assert "origin" in {v.strip().lower() for value in resp.header_all("vary") for v in value.split(",")}, resp.headers
    assert upstream_requests(upstream) == 0, "the upstream received the preflight"

    with RawConnection(relay.host, relay.port) as conn:
        put = conn.request("PUT", "/api/put", [("Origin", listed), ("Sec-Fetch-Site", "cross-site"), ("Sec-Fetch-Mode", "cors"),
                                               ("Sec-Fetch-Dest", "empty"), ("X-Custom", "1"),
                                               ("Content-Type", "application/json"), ("Connection", "close")],
                           b"{}", host=f"{relay.host}:{relay.port}")
    assert put.status == 200, f"{put.status} {shown(put)}"
    assert sha256(bearer_in_echo(put.json())) == issued_token_sha256(django_idp)
    assert put.header("access-control-allow-origin") == listed
    assert put.header("access-control-allow-credentials") == "true"
    assert "x-echo-connection-id" in (put.header("access-control-expose-headers") or "").lower(), put.headers

    unlisted = raw(relay, "OPTIONS", "/api/put", [("Origin", f"http://{OTHER_HOST}:8000"), *preflight])
    doc = problem(unlisted, 403, route="api")
    assert doc["type"] == CROSS_SITE
    assert not [k for k, _ in unlisted.headers if k.lower().startswith("access-control-")], unlisted.headers


def test_only_loopback_names_and_configured_hosts_are_served(django_idp, upstream, start_relay):
    """On the loopback listener: Host localhost, *.localhost, 127.0.0.0/8, [::1] (any port), a name
    in the top-level `hosts` and a route's `match.host` are served; any other name gets 421
    `misdirected-request` and is not forwarded."""
    routes = [api_route(upstream), oauth_route(upstream, "/", "orders", name="named", host="api.internal.test")]
    relay = start_relay(routes, identities=identities(django_idp), hosts=["relay.test"])
    port = relay.port
    served = [f"localhost:{port}", "localhost", f"app.localhost:{port}", f"127.0.0.1:{port}", f"127.8.9.10:{port}",
              f"[::1]:{port}", f"relay.test:{port}", "api.internal.test"]
    for host in served:
        resp = raw(relay, "GET", "/api/x", host=host)
        assert resp.status == 200, f"Host {host}: {resp.status} {shown(resp)}"
    count = upstream_requests(upstream)
    assert count == len(served)
    for host in ["attacker.example", f"rebind.test:{port}", f"localhost.attacker.example:{port}", f"127.0.0.1.nip.io:{port}"]:
        doc = problem(raw(relay, "GET", "/api/x", host=host), 421)
        assert doc["type"] == MISDIRECTED, f"Host {host}: {doc}"
    assert upstream_requests(upstream) == count, "a request for an unserved Host reached the upstream"
