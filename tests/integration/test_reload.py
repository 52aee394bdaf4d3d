"""Reloading the configuration file (SIGHUP, admin `POST /reload`), without identities.

A valid file applies to every request whose head arrives after the reload (POST /reload: after
its 200; SIGHUP: once `configuration reloaded` is logged); requests under way finish with the old
routes; keep-alive connections stay open and get the new routes on their next request. An invalid
file, or one that changes what only a restart can (`listen`, `listenTls.address`, `admin`,
`workers`), changes nothing: 422 problem with every error and its JSON path, and a log line.
Each route marks what it forwards with `X-Route: <name>` (setHeaders), so the echo upstream tells
which route, of which configuration, served a request. The admin client and the reload and wrk
helpers are in admin_client.py (shared with oauth/test_reload_identities.py).
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
import ssl
import time

import pytest

from admin_client import (ERROR_WITH_PATH, NOT_RELOADED, RELOADED, log_records, reload_under_wrk, rewrite, sighup,
                          start_with_admin, wait_for_log)
from deadlines import scaled, wait_until
from http_client import RawConnection, Response, assert_problem, build_request, curl
from processes import LOOPBACK, connection_refused, free_port, route

# ---------------------------------------------------------------------------------------------
# Routes that say which one took a request.

def marked(upstream, name: str, prefix: str = "/", **options) -> dict:
    return route(upstream, prefix, name=name, setHeaders={"X-Route": name, **options.pop("setHeaders", {})},
                 **options)


def routed_by(resp: Response) -> str:
    assert resp.status == 200, f"{resp.status}: {resp.body[:300]!r}"
    routes = resp.echo_headers("X-Route")
    assert len(routes) == 1, routes
    return routes[0]


# ---------------------------------------------------------------------------------------------
# Applying a valid file.

def test_post_reload_adds_a_route_then_removes_one(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/a/")])
    assert routed_by(relay.request("GET", "/a/1")) == "a"
    assert_problem(relay.request("GET", "/b/1"), 404)

    rewrite(relay, routes=[marked(upstream, "a", "/a/"), marked(upstream, "b", "/b/")])
    assert admin.reload_applied() == {"status": "applied", "routes": 2,
                                      "identities": {"kept": [], "started": [], "removed": []}}
    assert routed_by(relay.request("GET", "/b/1")) == "b"
    assert routed_by(relay.request("GET", "/a/2")) == "a"

    rewrite(relay, routes=[marked(upstream, "b", "/b/")])
    assert admin.reload_applied()["routes"] == 1
    assert_problem(relay.request("GET", "/a/3"), 404)
    assert routed_by(relay.request("GET", "/b/2")) == "b"

    first, second = log_records(relay, RELOADED)
    for record, count in ((first, 2), (second, 1)):
        assert record["trigger"] == "POST /reload", record
        assert len(record["routes"]) == count, record
        assert record["identities_kept"] == record["identities_started"] == record["identities_removed"] == []
    assert admin.reloads() == {"applied": 2, "rejected": 0}


def test_a_changed_route_applies_to_the_next_request(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "old", "/")])
    assert routed_by(relay.request("GET", "/x")) == "old"
    rewrite(relay, routes=[marked(upstream, "new", "/")])
    admin.reload_applied()
    assert routed_by(relay.request("GET", "/x")) == "new"


def test_sighup_adds_and_removes_routes_like_post_reload(start_relay, upstream):
    relay = start_relay([marked(upstream, "a", "/a/")])  # no admin listener: SIGHUP alone
    assert_problem(relay.request("GET", "/b/1"), 404)

    rewrite(relay, routes=[marked(upstream, "a", "/a/"), marked(upstream, "b", "/b/")])
    sighup(relay)
    record = wait_for_log(relay, RELOADED, 1)
    assert record["trigger"] == "SIGHUP" and len(record["routes"]) == 2, record
    assert routed_by(relay.request("GET", "/b/1")) == "b"

    rewrite(relay, routes=[marked(upstream, "b", "/b/")])
    sighup(relay)
    record = wait_for_log(relay, RELOADED, 2)
    assert record["trigger"] == "SIGHUP" and len(record["routes"]) == 1, record
    assert_problem(relay.request("GET", "/a/1"), 404)
    assert routed_by(relay.request("GET", "/b/2")) == "b"
    assert relay.running()


# ---------------------------------------------------------------------------------------------
# Connections and requests that span a reload.

def test_keep_alive_connection_opened_before_the_reload_gets_the_new_routes(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/a/")])
    with relay.connect() as conn:
        assert routed_by(conn.request("GET", "/a/1")) == "a"
        assert_problem(conn.request("GET", "/b/1"), 404)

        rewrite(relay, routes=[marked(upstream, "b", "/b/")])
        admin.reload_applied()

        # The same socket: the connection was not closed, and its next request routes anew.
        assert routed_by(conn.request("GET", "/b/2")) == "b"
        assert_problem(conn.request("GET", "/a/2"), 404)
        assert routed_by(conn.request("GET", "/b/3")) == "b"
        assert conn.stays_open(0.3)


def test_idle_keep_alive_connections_stay_open_across_a_reload(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/")], workers=2)
    conns = [relay.connect() for _ in range(6)]
    try:
        for conn in conns:
            assert routed_by(conn.request("GET", "/x")) == "a"
        rewrite(relay, routes=[marked(upstream, "b", "/")])
        admin.reload_applied()
        for conn in conns:
            assert conn.stays_open(0.05), "the relay closed a keep-alive connection at the reload"
        for conn in conns:
            assert routed_by(conn.request("GET", "/y")) == "b"
    finally:
        for conn in conns:
            conn.close()


def test_a_request_in_flight_at_the_reload_completes_through_the_old_route(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "old", "/slow")])
    with relay.connect(timeout=15) as conn:
        conn.send(build_request("GET", "/slow?ms=1500"))
        wait_until(lambda: upstream.stats()["requests_in_flight"] == 1, 5, "the slow request at the upstream")

        rewrite(relay, routes=[marked(upstream, "new", "/b/")])  # /slow is gone from the new file
        started = time.monotonic()
        admin.reload_applied()
        assert time.monotonic() - started < scaled(1.0), "POST /reload waited for the request in flight"
        assert upstream.stats()["requests_in_flight"] == 1, "the request in flight ended at the reload"

        resp = conn.read_final_response(timeout=10)
        assert routed_by(resp) == "old"
        assert resp.json()["target"] == "/slow?ms=1500"
        # The next request on that connection meets the new routes.
        assert_problem(conn.request("GET", "/slow?ms=0"), 404)
        assert routed_by(conn.request("GET", "/b/1")) == "new"


def test_a_request_whose_body_is_still_arriving_at_the_reload_completes_through_the_old_route(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "old", "/a/")])
    body = b"x" * 200_000
    with relay.connect(timeout=15) as conn:
        conn.send(build_request("POST", "/a/upload", headers=[("Content-Length", str(len(body)))]))
        conn.send(body[:1000])
        wait_until(lambda: upstream.stats()["requests_started"] == 1, 5, "the upload's head at the upstream")

        rewrite(relay, routes=[marked(upstream, "new", "/")])
        admin.reload_applied()
        conn.send(body[1000:])

        resp = conn.read_final_response(timeout=10)
        assert routed_by(resp) == "old"
        assert resp.json()["body_length"] == len(body)
        assert routed_by(conn.request("GET", "/a/next")) == "new"


def test_header_limits_follow_a_reload(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/")], limits={"maxHeaderBytes": 16384})
    big = [("X-Big", "a" * 6000)]
    assert routed_by(relay.request("GET", "/1", headers=big)) == "a"
    rewrite(relay, limits={**relay.config["limits"], "maxHeaderBytes": 4096})
    admin.reload_applied()
    assert_problem(relay.request("GET", "/2", headers=big), 431)
    assert routed_by(relay.request("GET", "/3", headers=[("X-Small", "a" * 1000)])) == "a"
    rewrite(relay, limits={**relay.config["limits"], "maxHeaderBytes": 16384})
    admin.reload_applied()
    assert routed_by(relay.request("GET", "/4", headers=big)) == "a"


def test_the_access_log_follows_a_reload(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/")])  # accessLog: true, one worker

    def logged_paths() -> list[str]:
        return [r["path"] for r in log_records(relay, "access")]

    assert routed_by(relay.request("GET", "/logged-1")) == "a"
    wait_until(lambda: "/logged-1" in logged_paths(), 5, "the access line of /logged-1")
    rewrite(relay, accessLog=False)
    admin.reload_applied()
    assert routed_by(relay.request("GET", "/not-logged")) == "a"
    rewrite(relay, accessLog=True)
    admin.reload_applied()
    assert routed_by(relay.request("GET", "/logged-2")) == "a"
    # One worker logs in order: once /logged-2 shows, a line for /not-logged would have too.
    wait_until(lambda: "/logged-2" in logged_paths(), 5, "the access line of /logged-2")
    assert "/not-logged" not in logged_paths()


# ---------------------------------------------------------------------------------------------
# A file that does not load changes nothing.

INVALID_FILES = {
    # name: (the file's text, given the relay's config and the upstream; the error's path)
    "invalid-json": (lambda config, up: json.dumps(config, indent=2)[:-2], "$"),  # cut short
    "unknown-key": (lambda config, up: json.dumps({**config, "routes": [
        {**marked(up, "a", "/a/"), "stripPrefx": True}, marked(up, "b", "/b/")]}), "$.routes[0].stripPrefx"),
    "bad-upstream": (lambda config, up: json.dumps({**config, "routes": [
        marked(up, "a", "/a/"), {**marked(up, "b", "/b/"), "upstream": "ftp://127.0.0.1:21/"}]}),
        "$.routes[1].upstream"),
}


@pytest.mark.parametrize("case", sorted(INVALID_FILES))
def test_an_invalid_file_is_refused_with_json_paths_and_changes_nothing(start_relay, upstream, case):
    make_text, path = INVALID_FILES[case]
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/a/")])
    relay.config_path.write_text(make_text(relay.config, upstream))

    errors = admin.reload_rejected()
    assert any(e.startswith(path + ": ") for e in errors), f"no error at {path}: {errors}"
    [record] = log_records(relay, NOT_RELOADED)
    assert record["trigger"] == "POST /reload", record
    assert record["errors"] == errors, record
    assert record["level"] == "error", record
    assert not log_records(relay, RELOADED)

    assert routed_by(relay.request("GET", "/a/1")) == "a"
    assert_problem(relay.request("GET", "/b/1"), 404)
    assert admin.reloads() == {"applied": 0, "rejected": 1}

    # Fixed, the same file reloads.
    rewrite(relay, routes=[marked(upstream, "a", "/a/"), marked(upstream, "b", "/b/")])
    assert admin.reload_applied()["routes"] == 2
    assert routed_by(relay.request("GET", "/b/1")) == "b"
    assert admin.reloads() == {"applied": 1, "rejected": 1}


def test_every_error_of_a_file_is_reported(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/a/")])
    rewrite(relay, routes=[{**marked(upstream, "a", "/a/"), "upstream": "ftp://x"},
                           {**marked(upstream, "b", "/b/"), "bogus": 1}])
    errors = admin.reload_rejected()
    assert any(e.startswith("$.routes[0].upstream: ") for e in errors), errors
    assert any(e.startswith("$.routes[1].bogus: ") for e in errors), errors
    assert routed_by(relay.request("GET", "/a/1")) == "a"


def test_sighup_with_an_invalid_file_logs_the_errors_and_changes_nothing(start_relay, upstream):
    relay = start_relay([marked(upstream, "a", "/a/")])
    rewrite(relay, routes=[marked(upstream, "a", "/a/"), {**marked(upstream, "b", "/b/"), "upstream": "nope"}])
    sighup(relay)
    record = wait_for_log(relay, NOT_RELOADED, 1)
    assert record["trigger"] == "SIGHUP", record
    assert record["errors"] and all(ERROR_WITH_PATH.match(e) for e in record["errors"]), record
    assert any(e.startswith("$.routes[1].upstream: ") for e in record["errors"]), record
    assert routed_by(relay.request("GET", "/a/1")) == "a"
    assert_problem(relay.request("GET", "/b/1"), 404)

    rewrite(relay, routes=[marked(upstream, "a", "/a/"), marked(upstream, "b", "/b/")])
    sighup(relay)
    assert wait_for_log(relay, RELOADED, 1)["trigger"] == "SIGHUP"
    assert routed_by(relay.request("GET", "/b/1")) == "b"
    assert relay.running()


def test_a_missing_file_is_refused_and_changes_nothing(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/a/")])
    relay.config_path.unlink()
    admin.reload_rejected()
    assert routed_by(relay.request("GET", "/a/1")) == "a"
    rewrite(relay)  # written again
    admin.reload_applied()


# ---------------------------------------------------------------------------------------------
# What only a restart can change.

@pytest.mark.parametrize("key", ["listen", "workers", "admin"])
def test_a_restart_only_change_is_refused_and_the_relay_keeps_serving(start_relay, upstream, key):
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/a/")])
    other_port = free_port()
    change = {"listen": f"{LOOPBACK}:{other_port}", "workers": 2, "admin": f"{LOOPBACK}:{other_port}"}[key]
    # The same file also adds a route: it must not apply either.
    rewrite(relay, **{key: change}, routes=[marked(upstream, "a", "/a/"), marked(upstream, "b", "/b/")])

    errors = admin.reload_rejected()
    [error] = errors
    assert error.startswith(f"$.{key}: ") and "restart" in error, error
    [record] = log_records(relay, NOT_RELOADED)
    assert record["errors"] == errors, record

    assert routed_by(relay.request("GET", "/a/1")) == "a"  # the old port
    assert_problem(relay.request("GET", "/b/1"), 404)
    assert connection_refused(LOOPBACK, other_port), f"something listens on {other_port} after the refused reload"
    assert admin.reloads() == {"applied": 0, "rejected": 1}  # the old admin port


def test_a_listen_tls_address_change_is_refused(start_relay, upstream, tmp_path):
    from test_listen_tls import make_certificate
    ca, cert, key = make_certificate(tmp_path)
    tls_port, other_port = free_port(), free_port()
    tls = {"address": f"{LOOPBACK}:{tls_port}", "certFile": str(cert), "keyFile": str(key)}
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/")], listenTls=tls)
    rewrite(relay, listenTls={**tls, "address": f"{LOOPBACK}:{other_port}"})
    [error] = admin.reload_rejected()
    assert error.startswith("$.listenTls.address: ") and "restart" in error, error
    resp = curl(f"https://localhost:{tls_port}/over/tls", "--cacert", str(ca))
    assert resp.status == 200, resp.stderr
    assert connection_refused(LOOPBACK, other_port)


def test_a_rotated_listen_tls_certificate_applies_to_new_connections(start_relay, upstream, tmp_path):
    from test_listen_tls import make_certificate

    def served_certificate(port: int) -> bytes:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with socket.create_connection((LOOPBACK, port), timeout=scaled(5)) as sock:
            with context.wrap_socket(sock, server_hostname="localhost") as tls:
                return tls.getpeercert(binary_form=True)

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    _, cert_one, key_one = make_certificate(tmp_path / "one")
    ca_two, cert_two, key_two = make_certificate(tmp_path / "two")
    live_cert, live_key = tmp_path / "live.pem", tmp_path / "live.key"
    shutil.copyfile(cert_one, live_cert)
    shutil.copyfile(key_one, live_key)
    tls_port = free_port()
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/")], listenTls={
        "address": f"{LOOPBACK}:{tls_port}", "certFile": str(live_cert), "keyFile": str(live_key)})
    assert served_certificate(tls_port) == ssl.PEM_cert_to_DER_cert(cert_one.read_text())

    # The file names stay; their content is the new certificate and key.
    shutil.copyfile(cert_two, live_cert)
    shutil.copyfile(key_two, live_key)
    admin.reload_applied()
    assert served_certificate(tls_port) == ssl.PEM_cert_to_DER_cert(cert_two.read_text()), \
        "a new connection after the reload still got the old certificate"
    resp = curl(f"https://localhost:{tls_port}/after", "--cacert", str(ca_two))
    assert resp.status == 200, resp.stderr


# ---------------------------------------------------------------------------------------------
# Under load.

def test_reloads_under_load_lose_no_request(start_relay, upstream):
    reloads = 10
    relay, admin = start_with_admin(start_relay, [marked(upstream, "gen-0", "/load/")], workers=2, accessLog=False)

    def reload_once(i: int) -> None:
        rewrite(relay, routes=[marked(upstream, f"gen-{i % 2}", "/load/")])
        assert admin.reload_applied()["routes"] == 1

    reload_under_wrk(f"{relay.url}/load/x", connections=16, seconds=5, reloads=reloads,
                     answered=lambda: upstream.stats()["requests_served"], reload_once=reload_once)
    assert len(log_records(relay, RELOADED)) == reloads
    assert admin.reloads() == {"applied": reloads, "rejected": 0}
    assert routed_by(relay.request("GET", "/load/after")) == f"gen-{reloads % 2}"


# ---------------------------------------------------------------------------------------------
# Stopping after a reload.

def test_sigterm_with_the_admin_connection_that_reloaded_still_open_exits_0(start_relay, upstream):
    # An operator's client (or a sidecar) that POSTs /reload on a keep-alive connection and is
    # still connected when the relay is told to stop: the relay must drain and exit 0.
    relay, admin = start_with_admin(start_relay, [marked(upstream, "a", "/")])
    with RawConnection(LOOPBACK, admin.port) as conn:
        resp = conn.request("POST", "/reload", host=f"{LOOPBACK}:{admin.port}")
        assert resp.status == 200, resp.body
        relay.send_signal(signal.SIGTERM)
        code = relay.wait_exit()
    assert code == 0, f"relay exited with {code} on SIGTERM; log tail:\n{relay.log()[-1500:]}"
