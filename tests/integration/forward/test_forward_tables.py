"""The smuggling, limits and browser-safety tables run inside an intercepted connection (issue 26:
"all of today's rules and limits" apply to what a `CONNECT` carries). Each row's bytes are written
to a raw TLS connection over a `CONNECT` tunnel (the client trusts only the relay's CA, SNI is the
route's host), so they reach the relay's parser after its TLS termination, and the row's
expectations are checked as the reverse listener's tests check them.

The rows are imported from ../test_smuggling.py, ../test_limits.py and
../oauth/test_browser_safety.py, by id: a renamed or removed row fails here at import. Left out:
rows whose point is the reverse listener's Host and target rules (the forward listener routes on
the CONNECT target), and the half-close row (a TLS client cannot half-close without closing).
"""

from __future__ import annotations

import pytest

from forward_relay import intercepted_connection, start_forward_relay
from http_client import assert_problem, build_request
from idp_relay import oauth_route
from processes import route
from test_browser_safety import CROSS_SITE, FRONT_END, REFUSED, refusing_idp, served
from test_limits import LIMITS as HEAD_LIMITS
from test_smuggling import LIMITS as SMUGGLING_LIMITS
from test_smuggling import HOST, IO_TIMEOUT, REQUEST_ROWS, play_request_row, raw_upstream


__all__ = ["raw_upstream"]  # the fixture of test_smuggling.py, used here

INTERCEPTED = HOST.decode()  # relay.test: the Host every smuggling row carries


@pytest.fixture(scope="module")
def tables_ca_directory(tmp_path_factory):
    """One CA for the module's relays (all intercept the same host): made by the first."""
    return tmp_path_factory.mktemp("tables") / "forward-ca"


# ---------------------------------------------------------------------------------------------
# Smuggling: a representative subset of every request area but target-and-host and upgrade.

SMUGGLING_IDS = [
    # cl-te
    "te-before-cl", "cl-0-with-te", "cl-te-with-smuggled-request-after-last-chunk", "cl-duplicate-identical",
    "cl-plus-sign", "cl-obs-fold", "cl-named-in-connection", "cl-in-trailers",
    # te-te
    "te-xchunked", "te-chunked-not-last", "te-as-folded-line", "te-http10",
    # chunks
    "chunk-extension", "chunk-size-overflow-2^64", "chunk-size-bare-lf", "chunk-data-longer-than-size",
    # fields
    "obs-fold-with-tab", "nul-in-name", "bare-cr-ending-a-value",
    # pipelining
    "request-after-chunked-body-is-its-own", "response-bytes-after-get",
    # expect
    "expect-100-continue-without-body", "expect-with-chunked-body",
]
_ROWS_BY_ID = {row.id: row for row in REQUEST_ROWS}
SMUGGLING_ROWS = [_ROWS_BY_ID[i] for i in SMUGGLING_IDS]


def warm_intercepted(fwd) -> None:
    """One request in its own intercepted connection, so the relay holds a pooled upstream
    connection (any byte a row made it forward would arrive)."""
    with intercepted_connection(fwd.port, INTERCEPTED, fwd.ca_pem, timeout=IO_TIMEOUT) as conn:
        resp = conn.request("GET", "/warm", host=INTERCEPTED)
        assert (resp.status, resp.body) == (200, b"/warm"), resp


@pytest.mark.parametrize("case", SMUGGLING_ROWS)
def test_smuggling_row_inside_an_intercepted_connection(start_relay, raw_upstream, tables_ca_directory, case):
    assert not case.half_close
    upstream = raw_upstream()
    fwd = start_forward_relay(start_relay, [route(upstream.url, "/", host=INTERCEPTED, name="intercepted",
                                                  setHeaders={"X-Route": "intercepted"})],
                              tables_ca_directory, limits=SMUGGLING_LIMITS)
    warm_intercepted(fwd)
    with intercepted_connection(fwd.port, INTERCEPTED, fwd.ca_pem, timeout=IO_TIMEOUT) as conn:
        play_request_row(case, conn, fwd.relay, upstream)


# ---------------------------------------------------------------------------------------------
# Limits (test_limits.py's LIMITS: maxHeaderBytes 4096, maxHeaderCount 10).

LIMIT_ROWS = [
    # (id, request fields besides Host, status)
    ("header-block-over-max-header-bytes", [("X-Big", "a" * 6000)], 431),
    ("more-fields-than-max-header-count", [(f"X-H{i}", "1") for i in range(20)], 431),
    ("exactly-max-header-count-fields", [(f"X-H{i}", "1") for i in range(HEAD_LIMITS["maxHeaderCount"] - 1)], 200),
    ("header-block-well-under-max-header-bytes", [("X-Big", "a" * 2000)], 200),
]


@pytest.mark.parametrize("fields,status", [r[1:] for r in LIMIT_ROWS], ids=[r[0] for r in LIMIT_ROWS])
def test_head_limit_row_inside_an_intercepted_connection(start_relay, upstream, tables_ca_directory, fields, status):
    fwd = start_forward_relay(start_relay, [route(upstream, "/", host=INTERCEPTED)], tables_ca_directory,
                              limits=HEAD_LIMITS)
    with intercepted_connection(fwd.port, INTERCEPTED, fwd.ca_pem) as conn:
        resp = conn.request("GET", "/limits", fields, host=INTERCEPTED)
    if status == 200:
        assert resp.status == 200, resp.body[:300]
        name, value = fields[-1]
        assert resp.echo_headers(name) == [value]
    else:
        assert_problem(resp, status)
        assert upstream.stats()["requests_started"] == 0


def test_431_comes_before_an_oversized_head_ends_inside_an_intercepted_connection(start_relay, upstream,
                                                                                 tables_ca_directory):
    fwd = start_forward_relay(start_relay, [route(upstream, "/", host=INTERCEPTED)], tables_ca_directory,
                              limits=HEAD_LIMITS)
    with intercepted_connection(fwd.port, INTERCEPTED, fwd.ca_pem) as conn:
        conn.send(build_request("GET", "/", host=INTERCEPTED).rstrip(b"\r\n") + b"\r\nX-Big: " + b"a" * 8192)
        assert_problem(conn.read_response(), 431)


# ---------------------------------------------------------------------------------------------
# Browser safety: the cross-site rows (the misdirected-Host rows are the reverse listener's).

BROWSER_HOST = "api.test"
CROSS_SITE_ROWS = [r for r in REFUSED if r[5] == CROSS_SITE]


def browser_relay(start_relay, upstream, identity: dict, ca_directory):
    """test_browser_safety.py's dev proxy on the intercepted host: /api/ with the identity,
    /front/ too and open to FRONT_END, /pub/ without a credential."""
    routes = [oauth_route(upstream, "/api/", "svc", name="api", host=BROWSER_HOST),
              oauth_route(upstream, "/front/", "svc", name="front", host=BROWSER_HOST,
                          browser={"allowOrigins": [FRONT_END], "maxAgeSeconds": 120}),
              oauth_route(upstream, "/pub/", name="pub", host=BROWSER_HOST)]
    return start_forward_relay(start_relay, routes, ca_directory, identities={"svc": identity})


def intercepted_request(fwd, method: str, path: str, fields):
    with intercepted_connection(fwd.port, BROWSER_HOST, fwd.ca_pem) as conn:
        return conn.request(method, path, [*fields, ("Connection", "close")], host=BROWSER_HOST)


@pytest.mark.parametrize("path,method,headers,status,kind", [r[1:] for r in CROSS_SITE_ROWS],
                         ids=[r[0] for r in CROSS_SITE_ROWS])
def test_cross_site_row_inside_an_intercepted_connection(stub_idp, upstream, start_relay, tmp_path, path, method,
                                                         headers, status, kind):
    fwd = browser_relay(start_relay, upstream, refusing_idp(stub_idp), tmp_path / "forward-ca")
    resp = intercepted_request(fwd, method, path, [(k, v.format(port=443)) for k, v in headers])
    doc = assert_problem(resp, status)
    assert doc["type"] == kind, doc
    assert not any(k.lower().startswith("access-control-") for k, _ in resp.headers), resp.headers
    assert served(upstream) == 0


def test_same_origin_requests_and_a_listed_front_ends_preflight_pass_the_policy_inside(stub_idp, upstream, start_relay,
                                                                                       tmp_path):
    """The control of the rows above: what a page of the intercepted host itself sends reaches
    the token (the refusing IdP's 502, not the policy's 403), and a listed front-end's preflight
    is answered by the relay alone."""
    fwd = browser_relay(start_relay, upstream, refusing_idp(stub_idp), tmp_path / "forward-ca")
    same_origin = [("Origin", f"https://{BROWSER_HOST}"), ("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Mode", "cors")]
    doc = assert_problem(intercepted_request(fwd, "POST", "/api/x", same_origin), 502)
    assert doc["type"] == "urn:oauth-relay:problem:token-refused", doc
    preflight = intercepted_request(fwd, "OPTIONS", "/front/x", [("Origin", FRONT_END),
                                                                ("Access-Control-Request-Method", "PUT"),
                                                                ("Sec-Fetch-Mode", "cors"), ("Sec-Fetch-Site", "cross-site")])
    assert preflight.status == 204, preflight.body[:300]
    assert preflight.header("access-control-allow-origin") == FRONT_END
    assert served(upstream) == 0
