"""`make soak`: the release binary under mixed traffic for SOAK_MINUTES (default 30), with real
servers around it, recording its memory, descriptors, upstream connections and token queue every
minute. Issue 25, "Soak and leaks".

    OAUTH_RELAY_BIN=.build/release/oauth-relay .venv-test/bin/python tests/soak/soak.py --minutes 30

Around the relay (2 workers, admin listener, `store.redis`):
- nginx: the upstream of most routes. Its answer (from a second server behind it, so that nginx
  reads the whole body, chunked or not) names the method, the length of the body it received,
  whether a Bearer token came and the request's sequence number, which the client checks;
  `/…/big` is a 1 MiB file.
- redis-server: the shared token store, stopped and started again every --redis-restart-seconds
  (default 180).
- django-oauth-toolkit: the IdP, issuing 5-second access tokens and rotating refresh tokens (a
  real IdP can: no scripted issuer is needed). Identities: `cc` (client_credentials), `pw`
  (password grant, then refresh tokens, rotated), `tv` (a person's device login, approved
  through DOT's own device pages) and `me` (a person's browser login through the relay's login
  pages, DOT's login form and consent, by a scripted browser). The relay refreshes each at half
  its lifetime: every 2.5 s.
- cut_upstream.py: an upstream that resets or closes mid-body on `/cut/reset` and `/cut/fin`.

Traffic (threads): keep-alive and `Connection: close` clients sending GETs and POSTs with bodies
(Content-Length and chunked) through the routes `cc`, `pw`, `plain` (no identity), `tv`, `me`,
`/api/whoami` (DOT checks the `pw` token the relay injects) and `/cut/`; clients that vanish
(half a request head, half a body, half of a 1 MiB answer, or nothing, then close); `POST
/reload` every 10 s, every other one changing the config (a route's `setHeaders`); a logout and
new login of `tv` and `me` in turn every --login-seconds (default 120).

Expected failures, counted apart: `/cut/reset` and `/cut/fin` (a truncated body or a 502), and
`tv`/`me` answering 401 `login-required` while their login is being redone. Everything else must
be the 200 the client checks.

Every --sample-seconds (default 60) the traffic pauses (clients close their connections, bounded
wait for the requests under way) and the harness records the relay's RSS (VmRSS), open
descriptors (/proc/PID/fd), established upstream connections (`ss`, to nginx, the cut upstream,
DOT and Redis) and `oauth_relay_token_queue_depth` from /metrics, then resumes.

Before the descriptors are read, the harness waits (up to 5 s) until the relay holds no client
connection on its listen or admin port any more (it closes its side of a connection the client
closed asynchronously); the admin scrape comes after the descriptors are read.

Every thread runs guarded: one that ends by an exception (any, pytest.fail's included) is a
problem named after the thread, with the exception's type and the first line of its message
(query strings and token-like strings cut), and ends the run. At the end, each thread must have
done its work as often as the traffic's time implies: at least one event per (interval + the
bound on one event), the pauses not counted (Redis restarts, reloads, logins, requests).

Warm-up: the first --warm-up-minutes (default max(3, minutes/5)) minutes: a short run (say
`--minutes 2 --warm-up-minutes 1 --sample-seconds 30`) checks the harness itself. The run fails
when, at the end, RSS is more than
2 MiB above its value at the end of warm-up, when the descriptors other than upstream connections
are more than --fd-tolerance (default 2) above theirs, when the upstream connections are more than
8 above theirs (the idle pools' connections come and go), when any request
failed unexpectedly, when the cut upstream refused a request, when a reload was not applied, or
when the relay does not exit 0 on SIGTERM, when a thread died or did less than its share. It
prints the table either way.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "integration"), str(HERE.parent / "integration" / "oauth"), str(HERE)]

import pytest  # noqa: E402  (the fixtures' modules fail with pytest.fail: its exception is caught below)
import requests  # noqa: E402

from admin_client import AdminClient  # noqa: E402
from cut_upstream import CutUpstream  # noqa: E402
from http_client import ConnectionClosed, RawConnection, Response, chunked_body  # noqa: E402
import idp_processes  # noqa: E402
from idp_processes import DjangoIdP  # noqa: E402
from processes import LOOPBACK, STORE_KEY, Relay, can_connect, free_port, relay_config  # noqa: E402
from redis_server import RedisServer  # noqa: E402

MIB = 1 << 20
RSS_GROWTH_LIMIT = 2 * MIB
TOKEN_SECONDS = 5
RELOAD_SECONDS = 10
REQUEST_SECONDS = 15          # one request's bound (a token wait during a Redis restart included)
PAUSE_SECONDS = 45            # the bound on what is under way when the traffic pauses (a login: 30)
LOGIN_SECONDS = 30            # the bound on one login, start to a request carrying the new token
BIG_LENGTH = MIB
LOGIN_REQUIRED = "urn:oauth-relay:problem:login-required"
UPSTREAM_TOLERANCE = 8         # the idle pools: 2 workers, each with connections to nginx and DOT
BROWSER_ACCEPT = "text/html,application/xhtml+xml"
CLIENT_SETTLE_SECONDS = 5      # the bound on the relay closing its side of the connections clients closed
REDIS_RESTART_BOUND = 25       # the bound on one Redis restart: stop (10 s), 2 s down, start
RELOAD_BOUND = 5               # the bound on one POST /reload
REQUEST_BOUND = 2 * REQUEST_SECONDS  # one traffic request: a connect, then the request


# DOT migrates its database at start: on a loaded machine that takes longer than the tests allow.
idp_processes.IDP_STARTUP_SECONDS = 180


class SoakFailure(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Counting


@dataclass
class Tally:
    ok: int = 0
    expected: int = 0
    unexpected: int = 0
    examples: list[str] = field(default_factory=list)  # the first unexpected failures (no bodies: tokens)

    def add(self, other: "Tally") -> None:
        self.ok += other.ok
        self.expected += other.expected
        self.unexpected += other.unexpected
        self.examples += other.examples[:10 - len(self.examples)]


class Counts:
    """Outcomes, per sampling interval; any thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.current = Tally()
        self.total = Tally()

    def ok(self) -> None:
        with self.lock:
            self.current.ok += 1

    def expected(self) -> None:
        with self.lock:
            self.current.expected += 1

    def unexpected(self, what: str) -> None:
        with self.lock:
            self.current.unexpected += 1
            if len(self.current.examples) < 10:
                self.current.examples.append(f"{time.strftime('%H:%M:%S')} {what}")

    def take(self) -> Tally:
        with self.lock:
            taken, self.current = self.current, Tally()
            self.total.add(taken)
            return taken


@dataclass
class Worker:
    """A soak thread's record: its name, how often its event comes (the wait between two, and the
    bound on one) and how many it did."""
    name: str
    what: str           # what an event is, for the report ("Redis restarts")
    interval: float     # the wait between two events
    bound: float        # the bound on one event
    done: int = 0       # written by its own thread only

    def expected(self, active_seconds: float) -> int:
        """The fewest events it must have done in `active_seconds` of traffic."""
        return int(active_seconds // (self.interval + self.bound))


def without_secrets(e: BaseException) -> str:
    """An exception for the report: its type and the first line of its message, with query strings
    (a URL may carry an authorization code) and token-like strings cut."""
    line = (str(e).splitlines() or [""])[0][:200]
    line = re.sub(r"\?\S*", "?…", line)
    line = re.sub(r"[A-Za-z0-9_~+=.-]{20,}", "…", line)
    return f"{type(e).__name__}: {line}" if line else type(e).__name__


# ---------------------------------------------------------------------------------------------
# The servers


def start_nginx(workdir: Path) -> tuple[subprocess.Popen, int]:
    """nginx in the foreground, one process; its answers let the client check what arrived."""
    port, inner = free_port(), free_port()
    (workdir / "nginx").mkdir()
    (workdir / "nginx" / "big.bin").write_bytes(bytes(BIG_LENGTH))
    conf = workdir / "nginx" / "nginx.conf"
    w = workdir / "nginx"
    conf.write_text(f"""
daemon off; master_process off; worker_processes 1;
pid {w}/nginx.pid; error_log {w}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {w}/body; proxy_temp_path {w}/proxy; fastcgi_temp_path {w}/fastcgi;
  uwsgi_temp_path {w}/uwsgi; scgi_temp_path {w}/scgi;
  keepalive_requests 1000000; keepalive_timeout 300s;
  map $http_authorization $auth_scheme {{ "~^Bearer ." bearer; default none; }}
  server {{
    listen {LOOPBACK}:{port};
    location ~ /big$ {{ root {w}; rewrite ^ /big.bin break; }}
    # Through the inner server: nginx reads the whole body (chunked or not) and sends its length.
    location / {{ proxy_pass http://{LOOPBACK}:{inner}; proxy_set_header X-Soak-Auth $auth_scheme; }}
  }}
  server {{
    listen {LOOPBACK}:{inner};
    location / {{ return 200 "$request_method length=$content_length auth=$http_x_soak_auth seq=$http_x_soak_seq soak=$http_x_soak\\n"; }}
  }}
}}
""")
    log = open(w / "stderr", "wb")
    proc = subprocess.Popen(["nginx", "-c", str(conf), "-e", str(w / "error.log")], stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log)
    log.close()
    deadline = time.monotonic() + 10
    while not can_connect(LOOPBACK, port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SoakFailure(f"nginx did not start: {(w / 'error.log').read_text(errors='replace')[-2000:]}")
        time.sleep(0.02)
    return proc, port


# ---------------------------------------------------------------------------------------------
# The relay's figures


@dataclass
class Sample:
    minute: float
    rss: int
    fds: int
    upstream_conns: int
    queue_depth: float | None
    tally: Tally


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise SoakFailure("no VmRSS in /proc/PID/status")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def upstream_connections(pid: int, ports: set[int]) -> int:
    """Established TCP connections of process `pid` to one of `ports`."""
    out = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True, timeout=10).stdout
    count = 0
    for line in out.splitlines():
        if f"pid={pid}," not in line:
            continue
        peer = line.split()[3]
        if int(peer.rsplit(":", 1)[1]) in ports:
            count += 1
    return count


def client_connections(pid: int, ports: set[int]) -> int:
    """Connections process `pid` holds on one of its listening `ports`, whatever their state
    (established, or closed by the client and not yet by the relay)."""
    out = subprocess.run(["ss", "-tanpH"], capture_output=True, text=True, timeout=10).stdout
    count = 0
    for line in out.splitlines():
        fields = line.split()
        if fields[0] == "LISTEN" or f"pid={pid}," not in line:
            continue
        if int(fields[3].rsplit(":", 1)[1]) in ports:
            count += 1
    return count


# ---------------------------------------------------------------------------------------------
# The scripted browser of the `me` login


class FormParser(HTMLParser):
    """The forms of a page: each one's action and its inputs (name -> value)."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"id": a.get("id"), "action": a.get("action") or "", "inputs": {}})
        elif tag == "input" and self.forms and a.get("name"):
            self.forms[-1]["inputs"].setdefault(a["name"], a.get("value") or "")


def forms_of(html: str) -> list[dict]:
    parser = FormParser()
    parser.feed(html)
    return parser.forms


def relay_get(relay: Relay, target: str, headers=()) -> Response:
    with RawConnection(relay.host, relay.port, timeout=REQUEST_SECONDS) as conn:
        return conn.request("GET", target, [*headers, ("Connection", "close")], host=f"{relay.host}:{relay.port}")


def browser_login(relay: Relay, idp: DjangoIdP, name: str) -> None:
    """A person's browser login through the relay's pages: the login start (its cookie kept),
    DOT's login form, the consent, then the relay's callback with the cookie."""
    resp = relay_get(relay, f"/.oauth-relay/login/{name}?return=/{name}/done", [("Accept", BROWSER_ACCEPT)])
    if resp.status != 302:
        raise SoakFailure(f"the login start answered {resp.status}")
    cookies = "; ".join(c.split(";")[0] for c in resp.header_all("set-cookie"))
    with requests.Session() as dot:

        def follow(answer):
            """Follows DOT's redirects, up to the one back to the relay (not followed: the relay's
            callback needs the relay's cookie)."""
            while answer.is_redirect and not urljoin(answer.url, answer.headers["location"]).startswith(relay.url):
                answer = dot.get(urljoin(answer.url, answer.headers["location"]), allow_redirects=False,
                                 timeout=REQUEST_SECONDS)
            return answer

        page = follow(dot.get(resp.header("location"), allow_redirects=False, timeout=REQUEST_SECONDS))
        [login] = [f for f in forms_of(page.text) if f["id"] == "login-form"]
        fields = {**login["inputs"], "username": idp.person.username, "password": idp.person.password}
        page = follow(dot.post(urljoin(page.url, login["action"]), data=fields, allow_redirects=False,
                               timeout=REQUEST_SECONDS))
        consents = [f for f in forms_of(page.text) if f["id"] == "authorizationForm"] if not page.is_redirect else []
        if consents:  # DOT asks the person to authorize the client (not when it was before)
            page = follow(dot.post(urljoin(page.url, consents[0]["action"]), data={**consents[0]["inputs"], "allow": "Authorize"},
                                   allow_redirects=False, timeout=REQUEST_SECONDS))
        location = urljoin(page.url, page.headers.get("location", ""))
    parts = urlsplit(location)
    if parts.path != "/.oauth-relay/callback":
        raise SoakFailure(f"DOT did not send the browser back to the relay's callback (HTTP {page.status_code})")
    resp = relay_get(relay, f"{parts.path}?{parts.query}", [("Accept", BROWSER_ACCEPT), ("Cookie", cookies)])
    if resp.status != 302 or resp.header("location") != f"/{name}/done":
        raise SoakFailure(f"the relay's callback answered {resp.status}")


# ---------------------------------------------------------------------------------------------
# The soak


class Soak:
    def __init__(self, args, workdir: Path):
        self.args = args
        self.workdir = workdir
        self.counts = Counts()
        self.stop = threading.Event()
        self.running = threading.Event()   # clear: the traffic pauses
        self.running.set()
        self.busy = 0                      # traffic threads inside a request
        self.busy_lock = threading.Condition()
        self.relogging: dict[str, float] = {}  # identity -> until when its 401 login-required is expected
        self.reload_flip = False
        self.problems: list[str] = []
        self.samples: list[Sample] = []
        self.seq = 0
        self.seq_lock = threading.Lock()
        self.workers: list[Worker] = []
        self.paused_seconds = 0.0          # the pauses' time once the threads run
        self.active_seconds = 0.0          # the traffic's time: from the threads' start to the stop, pauses not counted

    # -- setting up -----------------------------------------------------------------------------

    def start_servers(self) -> None:
        w = self.workdir
        self.nginx, self.nginx_port = start_nginx(w)
        self.nginx_url = f"http://{LOOPBACK}:{self.nginx_port}"
        self.cut = CutUpstream().start()
        (w / "redis").mkdir()
        self.redis = RedisServer(w / "redis").start()
        (w / "idp").mkdir()
        self.idp = DjangoIdP(w / "idp", access_token_seconds=TOKEN_SECONDS, rotate_refresh_token=True).start()

    def routes(self, flip: bool) -> list[dict]:
        n = self.nginx_url
        return [
            {"match": {"pathPrefix": "/cc/"}, "upstream": n, "identity": "cc"},
            {"match": {"pathPrefix": "/pw/"}, "upstream": n, "identity": "pw",
             "setHeaders": {"X-Soak": "b" if flip else "a"}},
            {"match": {"pathPrefix": "/plain/"}, "upstream": n},
            {"match": {"pathPrefix": "/tv/"}, "upstream": n, "identity": "tv"},
            {"match": {"pathPrefix": "/me/"}, "upstream": n, "identity": "me"},
            # DOT revokes an access token when it rotates its refresh token: a request that carried
            # it then gets a 401, which the relay answers by fetching anew and replaying. With a
            # token refreshed every 2.5 s, the default guard (a token fetched after a refusal is
            # not dropped again for 10 s) would pass the next such 401 to the client.
            {"match": {"pathPrefix": "/api/"}, "upstream": self.idp.url, "identity": "pw", "minTokenAgeForRetrySeconds": 1},
            {"match": {"pathPrefix": "/cut/"}, "upstream": self.cut.url, "identity": "cc"},
        ]

    def config(self, port: int, admin_port: int, flip: bool) -> dict:
        idp = self.idp
        identities = {"cc": idp.identity("orders-cc"), "pw": idp.identity("legacy-pw"),
                      "tv": idp.identity("tv-device"), "me": idp.identity("cli-code")}
        return relay_config(f"{LOOPBACK}:{port}", self.routes(flip), workers=2, identities=identities,
                            admin=f"{LOOPBACK}:{admin_port}", accessLog=False,
                            store={"redis": self.redis.url, "key": STORE_KEY})

    def start_relay(self) -> None:
        port, admin_port = free_port(), free_port()
        (self.workdir / "relay").mkdir()
        self.relay = Relay(self.config(port, admin_port, False), self.workdir / "relay", LOOPBACK, port,
                           args=["--log-level", "info"]).start()
        self.admin = AdminClient(admin_port)
        deadline = time.monotonic() + 20
        while not can_connect(LOOPBACK, admin_port) or any(
                i["state"] == "pending" for i in self.admin.request("GET", "/identities").json()["identities"]):
            if time.monotonic() > deadline:
                raise SoakFailure("the identities' endpoints were not discovered within 20 s")
            time.sleep(0.1)
        self.idp.set_redirect_uris("cli-code", [f"{self.relay.url}/.oauth-relay/callback"])

    # -- the requests ---------------------------------------------------------------------------

    def next_seq(self) -> int:
        with self.seq_lock:
            self.seq += 1
            return self.seq

    def login_expected(self, name: str, resp: Response) -> bool:
        if name not in ("tv", "me") or resp.status != 401:
            return False
        try:
            kind = resp.json().get("type")
        except ValueError:
            return False
        return kind == LOGIN_REQUIRED and time.monotonic() < self.relogging.get(name, 0)

    def check_nginx(self, resp: Response, method: str, name: str, seq: int, body_length: int) -> str | None:
        """What is wrong with nginx's answer through the relay, or None."""
        if resp.status != 200:
            return f"HTTP {resp.status}"
        text = resp.body.decode("latin-1")
        m = re.fullmatch(r"(\w+) length=(\d*) auth=(\w+) seq=(\d*) soak=(\w*)\n", text)
        if not m:
            return "an answer that is not nginx's"
        if m[1] != method or m[4] != str(seq):
            return f"nginx answered another request ({m[1]} seq {m[4]} for {method} seq {seq})"
        if int(m[2] or 0) != body_length:
            return f"nginx received {m[2]} bytes for a {body_length}-byte body"
        if (m[3] == "bearer") != (name != "plain"):
            return f"auth={m[3]} on route {name}"
        if name == "pw" and m[5] not in ("a", "b"):
            return "no X-Soak from setHeaders"
        return None

    def one_request(self, conn: RawConnection, name: str, keep_alive: bool) -> Response:
        seq = self.next_seq()
        method = random.choice(["GET", "GET", "POST"])
        body, headers = b"", [("X-Soak-Seq", str(seq))]
        if not keep_alive:
            headers.append(("Connection", "close"))
        if method == "POST":
            payload = os.urandom(random.randint(1, 64 * 1024))
            if random.random() < 0.5:
                body = payload
            else:
                body = chunked_body([payload[i:i + 8192] for i in range(0, len(payload), 8192)])
                headers.append(("Transfer-Encoding", "chunked"))
            length = len(payload)
        else:
            length = 0
        resp = conn.request(method, f"/{name}/r{seq}", headers, body, timeout=REQUEST_SECONDS)
        if self.login_expected(name, resp):
            self.counts.expected()
            return resp
        wrong = self.check_nginx(resp, method, name, seq, length)
        if wrong:
            self.counts.unexpected(f"{method} /{name}/: {wrong}")
        else:
            self.counts.ok()
        return resp

    def whoami(self, conn: RawConnection) -> Response:
        resp = conn.request("GET", "/api/whoami", timeout=REQUEST_SECONDS)
        if resp.status == 200 and resp.json().get("client_id") == self.idp.clients["legacy-pw"].client_id:
            self.counts.ok()
        else:
            self.counts.unexpected(f"GET /api/whoami: HTTP {resp.status}")
        return resp

    def cut_request(self, conn: RawConnection) -> None:
        kind = random.choice(["whole", "reset", "fin"])
        try:
            resp = conn.request("GET", f"/cut/{kind}", [("Connection", "close")], timeout=REQUEST_SECONDS)
        except ConnectionClosed:
            if kind == "whole":
                self.counts.unexpected("GET /cut/whole: connection closed")
            else:
                self.counts.expected()
            return
        if kind == "whole" and resp.status == 200 and len(resp.body) == 64 * 1024:
            self.counts.ok()
        elif kind != "whole" and resp.status == 502:
            self.counts.expected()
        else:
            self.counts.unexpected(f"GET /cut/{kind}: HTTP {resp.status}, {len(resp.body)} bytes")

    def enter(self, before_waiting=None) -> bool:
        """A traffic thread about to send: waits while the traffic pauses; False once stopping.
        `before_waiting` runs once when it has to wait (a keep-alive client closes its connection:
        the pause may have begun after its last request ended)."""
        waiting = False
        while not self.stop.is_set():
            with self.busy_lock:
                if self.running.is_set():
                    self.busy += 1
                    return True
            if not waiting and before_waiting is not None:
                before_waiting()
            waiting = True
            self.running.wait(0.5)
        return False

    def leave(self) -> None:
        with self.busy_lock:
            self.busy -= 1
            self.busy_lock.notify_all()

    def traffic(self, worker: Worker, routes: list[str], keep_alive: bool) -> None:
        """One client: requests on one connection (up to 50, then a new one), or one connection each."""
        conn: RawConnection | None = None
        used = 0

        def close():
            nonlocal conn
            if conn is not None:
                conn.close()
                conn = None

        while self.enter(before_waiting=close):
            try:
                if conn is None:
                    conn, used = RawConnection(self.relay.host, self.relay.port, timeout=REQUEST_SECONDS), 0
                name = random.choice(routes)
                closes = True
                if name == "api":
                    closes = "close" in (self.whoami(conn).header("connection") or "").lower()
                elif name == "cut":
                    self.cut_request(conn)
                else:
                    closes = "close" in (self.one_request(conn, name, keep_alive).header("connection") or "").lower()
                used += 1
                if conn is not None and (closes or not keep_alive or used >= 50 or conn.eof):
                    conn.close()
                    conn = None
            except (OSError, AssertionError, TimeoutError, ValueError) as e:
                self.counts.unexpected(f"{type(e).__name__}: {str(e)[:120]}")
                if conn is not None:
                    conn.close()
                conn = None
            finally:
                if conn is not None and not self.running.is_set():
                    conn.close()  # the traffic pauses: no client connection stays open
                    conn = None
                self.leave()
                worker.done += 1
        close()

    def vanishing(self, worker: Worker) -> None:
        """Clients that go away: after connecting, after half a head, half a body, half an answer."""
        while self.enter():
            try:
                with socket.create_connection((self.relay.host, self.relay.port), timeout=REQUEST_SECONDS) as s:
                    kind = random.randrange(4)
                    if kind == 1:
                        s.sendall(b"GET /plain/x HTTP/1.1\r\nHost: relay.t")
                    elif kind == 2:
                        s.sendall(b"POST /cc/x HTTP/1.1\r\nHost: relay.test\r\nContent-Length: 100000\r\n\r\n" + bytes(30000))
                    elif kind == 3:
                        s.sendall(b"GET /plain/big HTTP/1.1\r\nHost: relay.test\r\n\r\n")
                        got = 0
                        while got < BIG_LENGTH // 2:
                            data = s.recv(65536)
                            if not data:
                                self.counts.unexpected("GET /plain/big: closed before half of it")
                                break
                            got += len(data)
                    if random.random() < 0.5:  # half of them reset instead of closing
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                self.counts.expected()
            except OSError as e:
                self.counts.unexpected(f"a vanishing client: {type(e).__name__}")
            finally:
                self.leave()
                worker.done += 1
            self.stop.wait(0.05)

    # -- the scenario's events ------------------------------------------------------------------

    def reloads(self, worker: Worker) -> None:
        """POST /reload every 10 s; every other one with a changed config (`pw`'s `setHeaders`)."""
        changes = 0
        while not self.stop.wait(RELOAD_SECONDS):
            if not self.enter():
                return
            try:
                self.reload_once(changes := changes + 1)
                worker.done += 1
            finally:
                self.leave()

    def reload_once(self, number: int) -> None:
        """The `number`th reload: an odd one changes the config file first."""
        if number % 2:
            self.reload_flip = not self.reload_flip
            self.relay.config["routes"] = self.routes(self.reload_flip)
            self.relay.config_path.write_text(json.dumps(self.relay.config, indent=2))
        try:
            resp = self.admin.reload()
            if resp.status != 200 or resp.json().get("status") != "applied":
                self.problems.append(f"{time.strftime('%H:%M:%S')} POST /reload answered {resp.status}")
        except (OSError, AssertionError, ValueError) as e:
            self.problems.append(f"{time.strftime('%H:%M:%S')} POST /reload: {without_secrets(e)}")

    def redis_restarts(self, worker: Worker) -> None:
        """Stops Redis and starts it again (2 s later) every --redis-restart-seconds."""
        while not self.stop.wait(self.args.redis_restart_seconds):
            if not self.enter():
                return
            try:
                self.redis.stop(timeout=10)
                self.stop.wait(2)
                self.redis.start()
                worker.done += 1
            finally:
                self.leave()

    def login(self, name: str) -> None:
        """Forgets `name`'s token (a logout) and logs the person in again; until the new token
        carries a request, its 401 login-required is expected."""
        self.relogging[name] = time.monotonic() + LOGIN_SECONDS + 5
        deadline = time.monotonic() + LOGIN_SECONDS
        while (status := self.admin.request("DELETE", f"/identities/{name}/token").status) != 204:
            if time.monotonic() > deadline:
                raise SoakFailure(f"DELETE /identities/{name}/token answered {status}")
            time.sleep(0.5)  # 503 while Redis restarts: ask again
        if name == "tv":
            resp = relay_get(self.relay, "/tv/start")
            if resp.status != 401 or resp.json().get("type") != LOGIN_REQUIRED:
                raise SoakFailure(f"the device login did not start: HTTP {resp.status}")
            if self.idp.approve_device(resp.json()["userCode"]) != "authorized":
                raise SoakFailure("DOT did not authorize the device code")
        else:
            browser_login(self.relay, self.idp, name)
        while (status := relay_get(self.relay, f"/{name}/after-login").status) != 200:
            if time.monotonic() > deadline:
                raise SoakFailure(f"/{name}/ answered {status} {LOGIN_SECONDS} s after the login began")
            time.sleep(0.1)
        self.relogging[name] = time.monotonic() + 2  # requests sent before the 200 may still answer 401

    def logins(self, worker: Worker) -> None:
        """A logout and new login of `tv` and `me` in turn every --login-seconds."""
        turn = 0
        while not self.stop.wait(self.args.login_seconds):
            name = ("tv", "me")[turn % 2]
            turn += 1
            if not self.enter():
                return
            try:
                self.login(name)
                worker.done += 1
            except (SoakFailure, OSError, AssertionError, ValueError, pytest.fail.Exception) as e:
                self.problems.append(f"{time.strftime('%H:%M:%S')} login of {name}: {without_secrets(e)}")
            finally:
                self.leave()

    # -- sampling -------------------------------------------------------------------------------

    def pause(self) -> None:
        self.running.clear()
        deadline = time.monotonic() + PAUSE_SECONDS
        with self.busy_lock:
            while self.busy and time.monotonic() < deadline:
                self.busy_lock.wait(0.2)
            if self.busy:
                self.problems.append(f"{self.busy} requests still under way {PAUSE_SECONDS} s into a pause")

    def settle_clients(self, pid: int) -> int:
        """Waits (up to 5 s) until the relay holds no client connection on its listen or admin port
        (it closes its side of a connection the client closed asynchronously); how many are left."""
        ports = {self.relay.port, self.admin.port}
        deadline = time.monotonic() + CLIENT_SETTLE_SECONDS
        while (left := client_connections(pid, ports)) and time.monotonic() < deadline:
            time.sleep(0.05)
        return left

    def sample(self, started: float) -> Sample:
        pid = self.relay.pid
        ports = {self.nginx_port, self.cut.port, self.idp.port, self.redis.port}
        left = self.settle_clients(pid)
        rss, fds, upstream = rss_bytes(pid), open_fds(pid), upstream_connections(pid, ports)
        metrics = self.metrics = self.admin.scrape()  # after the descriptors: its connection is not counted
        s = Sample((time.monotonic() - started) / 60, rss, fds, upstream,
                   metrics.value("oauth_relay_token_queue_depth"), self.counts.take())
        self.samples.append(s)
        print(row(s), flush=True)
        if left:
            print(f"       ({left} client connections still held by the relay {CLIENT_SETTLE_SECONDS} s into the pause)",
                  flush=True)
        return s

    def spawn(self, worker: Worker, target, *args) -> threading.Thread:
        """A thread running `target(worker, *args)`: an exception that ends it (any, pytest.fail's
        included) is a problem named after the thread, and ends the run."""
        def guarded():
            try:
                target(worker, *args)
            except BaseException as e:  # noqa: BLE001 (a thread that dies must fail the run, whatever killed it)
                self.problems.append(f"{time.strftime('%H:%M:%S')} thread {worker.name} died: {without_secrets(e)}")
                self.stop.set()  # the other threads end at their next enter()

        self.workers.append(worker)
        return threading.Thread(target=guarded, name=worker.name, daemon=True)

    def run(self) -> None:
        # Both people log in once before the traffic starts (a login that fails is a problem, and
        # is tried once more so that the run goes on to measure what it can).
        for name in ("tv", "me"):
            for attempt in (1, 2):
                try:
                    self.login(name)
                    break
                except (SoakFailure, OSError, AssertionError, ValueError, pytest.fail.Exception) as e:
                    self.problems.append(f"{time.strftime('%H:%M:%S')} first login of {name} (attempt {attempt}): "
                                         f"{without_secrets(e)}")
        self.relogging.clear()
        routes = ["cc", "pw", "plain", "tv", "me", "api", "cut"]
        threads = [self.spawn(Worker(f"traffic-{'keep-alive' if keep_alive else 'close'}-{i}", "requests", 0, REQUEST_BOUND),
                              self.traffic, routes, keep_alive)
                   for i, keep_alive in enumerate((True, True, True, False, False), 1)]
        threads += [self.spawn(Worker("vanishing", "vanishing clients", 0.05, REQUEST_BOUND), self.vanishing),
                    self.spawn(Worker("reloads", "reloads", RELOAD_SECONDS, RELOAD_BOUND), self.reloads),
                    self.spawn(Worker("redis-restarts", "Redis restarts", self.args.redis_restart_seconds,
                                      REDIS_RESTART_BOUND), self.redis_restarts),
                    self.spawn(Worker("logins", "logins", self.args.login_seconds, LOGIN_SECONDS), self.logins)]
        started = time.monotonic()
        print(HEADER, flush=True)
        self.pause()
        self.sample(started)
        self.running.set()
        for t in threads:
            t.start()
        threads_started = time.monotonic()
        try:
            end = started + self.args.minutes * 60
            while (now := time.monotonic()) < end:
                if self.stop.wait(min(self.args.sample_seconds - (now - started) % self.args.sample_seconds, end - now)):
                    break  # a thread died
                paused = time.monotonic()
                self.pause()
                self.sample(started)
                self.running.set()
                self.paused_seconds += time.monotonic() - paused
        finally:
            self.stop.set()
            self.running.set()
            self.active_seconds = time.monotonic() - threads_started - self.paused_seconds
            for t in threads:
                t.join(timeout=LOGIN_SECONDS + REQUEST_SECONDS)
                if t.is_alive():
                    self.problems.append(f"thread {t.name} did not end")

    def shutdown(self) -> None:
        """Stops what was started, the relay first (SIGTERM: it must exit 0)."""
        for what, attribute, stop in [("relay", "relay", lambda: self.relay.stop(signal.SIGTERM, timeout=15)),
                                      ("IdP", "idp", lambda: self.idp.kill()), ("Redis", "redis", lambda: self.redis.kill()),
                                      ("cut upstream", "cut", lambda: self.cut.stop())]:
            if not hasattr(self, attribute):
                continue
            try:
                code = stop()
                if what == "relay" and code != 0:
                    self.problems.append(f"the relay exited with {code} on SIGTERM")
            except (Exception, pytest.fail.Exception) as e:  # noqa: BLE001 (every server is stopped whatever happens)
                self.problems.append(f"stopping the {what}: {e}")
        if hasattr(self, "nginx"):
            self.nginx.terminate()
            try:
                self.nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.nginx.kill()

    # -- the verdict ----------------------------------------------------------------------------

    def verdict(self) -> list[str]:
        failures = list(self.problems)
        for worker in self.workers:
            if worker.done < (expected := worker.expected(self.active_seconds)):
                failures.append(f"thread {worker.name} did {worker.done} {worker.what} in {self.active_seconds:.0f} s of "
                                f"traffic: at least {expected} expected (every {worker.interval:g} s, each within "
                                f"{worker.bound:g} s)")
        total = self.counts.total
        if total.unexpected:
            failures.append(f"{total.unexpected} requests failed unexpectedly; first: " + " | ".join(total.examples))
        if self.cut.refused:
            failures.append(f"the cut upstream refused {len(self.cut.refused)} requests: {self.cut.refused[0]}")
        warm = warm_up_sample(self.samples, self.args.warm_up_minutes)
        last = self.samples[-1]
        if warm is None or warm is last:
            failures.append("the run ended before the end of warm-up: nothing to compare")
            return failures
        print(f"warm-up: the first {warm.minute:.0f} minutes; compared: minute {warm.minute:.0f} against "
              f"minute {last.minute:.0f}")
        growth = last.rss - warm.rss
        print(f"RSS {warm.rss / MIB:.1f} -> {last.rss / MIB:.1f} MiB ({growth / MIB:+.2f}), "
              f"descriptors {warm.fds} -> {last.fds}, of them upstream connections {warm.upstream_conns} -> {last.upstream_conns}")
        if growth > RSS_GROWTH_LIMIT:
            failures.append(f"RSS grew {growth / MIB:.2f} MiB after warm-up (limit 2)")
        # The idle upstream pool holds a varying number of connections (3 to 9 in a 10-minute run):
        # they are judged apart from the other descriptors, which must stay put.
        if last.fds - last.upstream_conns > warm.fds - warm.upstream_conns + self.args.fd_tolerance:
            failures.append(f"descriptors other than upstream connections grew from {warm.fds - warm.upstream_conns} "
                            f"to {last.fds - last.upstream_conns} after warm-up (tolerance {self.args.fd_tolerance})")
        if last.upstream_conns > warm.upstream_conns + UPSTREAM_TOLERANCE:
            failures.append(f"upstream connections grew from {warm.upstream_conns} to {last.upstream_conns} after warm-up "
                            f"(tolerance {UPSTREAM_TOLERANCE})")
        return failures


HEADER = f"{'minute':>6} {'RSS MiB':>8} {'fds':>5} {'up conns':>8} {'queue':>5} {'ok':>7} {'exp-fail':>8} {'unexp':>6}"


def row(s: Sample) -> str:
    queue = "-" if s.queue_depth is None else f"{s.queue_depth:.0f}"
    return (f"{s.minute:6.1f} {s.rss / MIB:8.1f} {s.fds:5d} {s.upstream_conns:8d} {queue:>5} {s.tally.ok:7d} "
            f"{s.tally.expected:8d} {s.tally.unexpected:6d}")


def warm_up_sample(samples: list[Sample], warm_up: float) -> Sample | None:
    """The first sample at or after the end of warm-up (`warm_up` minutes)."""
    return next((s for s in samples if s.minute >= warm_up - 0.05), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES", "30")))
    parser.add_argument("--sample-seconds", type=float, default=60)
    parser.add_argument("--redis-restart-seconds", type=float, default=180)
    parser.add_argument("--login-seconds", type=float, default=120)
    parser.add_argument("--fd-tolerance", type=int, default=2)
    parser.add_argument("--warm-up-minutes", type=float, help="default: max(3, minutes / 5)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs) after a passing run")
    args = parser.parse_args()
    if args.warm_up_minutes is None:
        args.warm_up_minutes = max(3.0, args.minutes / 5)
    for tool in ("nginx", "redis-server", "ss"):
        if shutil.which(tool) is None:
            print(f"soak: {tool} is not installed (scripts/install-deps --test)", file=sys.stderr)
            return 2
    workdir = Path(tempfile.mkdtemp(prefix="oauth-relay-soak-"))
    os.environ["XDG_STATE_HOME"] = str(workdir / "xdg-state")
    soak = Soak(args, workdir)
    failures: list[str] = []
    try:
        soak.start_servers()
        soak.start_relay()
        soak.run()
    except (SoakFailure, OSError, AssertionError, pytest.fail.Exception) as e:
        failures.append(f"the scenario stopped: {e}")
    finally:
        soak.shutdown()
    if soak.samples:
        failures += soak.verdict()
    if soak.samples:
        m = soak.metrics
        print("relay's counts: token requests " + json.dumps(m.by("oauth_relay_token_requests_total", "outcome"))
              + ", upstream token refusals " + json.dumps(m.by("oauth_relay_upstream_token_refusals_total", "action"))
              + ", reloads " + json.dumps(m.by("oauth_relay_config_reloads_total", "outcome"))
              + ", logins " + json.dumps(m.by("oauth_relay_logins_total", "outcome")))
    total = soak.counts.total
    print(f"requests: {total.ok} ok, {total.expected} expected failures (cut upstream, logins redone, vanishing "
          f"clients), {total.unexpected} unexpected; cut upstream answered {soak.cut.answered if hasattr(soak, 'cut') else {}}")
    if failures:
        print("SOAK FAILED:\n  " + "\n  ".join(failures))
        print(f"logs kept in {workdir}")
        return 1
    print("soak passed")
    if args.keep:
        print(f"logs kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
