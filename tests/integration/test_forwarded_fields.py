"""What the relay never forwards as the client sent it, beyond hop-by-hop fields: found by
replaying public smuggling corpora (PortSwigger's permutations, HTTP Garden) through the relay.

- a name that spells a field the relay sets or reads with `_` for `-` (`X_Forwarded_For`): a
  CGI-style server reads both as one, so the client's would sit beside the relay's;
- the client's `Forwarded` (RFC 7239), unless `trustForwardedHeaders`;
- trailers that carry what a head decides (RFC 9110 §6.5.1): Host, Authorization, Cookie,
  Expect, X-Forwarded-*, the fields a route sets — an upstream that merges trailers into the
  head would take them for the relay's;
- `Max-Forwards` on OPTIONS counts down (RFC 9110 §7.6.2), and at 0 the relay answers itself;
- TRACE is refused (405) like CONNECT: an upstream echoing it would hand the injected token to
  the client."""

from http_client import assert_problem, build_request, chunked_body
from processes import route


def echoed(resp) -> dict:
    assert resp.status == 200, resp.body
    return resp.json()


def test_underscored_lookalikes_of_relay_fields_are_dropped(relay):
    saw = echoed(relay.request("GET", "/a", headers=[("X_Forwarded_For", "6.6.6.6"), ("Content_Length", "4"),
                                                    ("x_forwarded_host", "evil"), ("X_Custom_Name", "kept")]))
    names = [name.lower() for name, _ in saw["headers"]]
    assert "x_forwarded_for" not in names and "content_length" not in names and "x_forwarded_host" not in names
    assert ["X_Custom_Name", "kept"] in saw["headers"]
    assert [value for name, value in saw["headers"] if name.lower() == "x-forwarded-for"] == ["127.0.0.1"]


def test_the_clients_forwarded_field_is_dropped_unless_trusted(start_relay, upstream):
    spoof = [("Forwarded", "for=6.6.6.6;host=evil;proto=https")]
    untrusted = start_relay([route(upstream)])
    assert "forwarded" not in [n.lower() for n, _ in echoed(untrusted.request("GET", "/a", headers=spoof))["headers"]]
    trusted = start_relay([route(upstream)], trustForwardedHeaders=True)
    assert ["Forwarded", "for=6.6.6.6;host=evil;proto=https"] in echoed(trusted.request("GET", "/a", headers=spoof))["headers"]


def test_trailers_that_a_head_decides_are_dropped_and_others_kept(start_relay, upstream):
    relay = start_relay([route(upstream, setHeaders={"X-Team": "blue"})])
    with relay.connect() as conn:
        conn.send(build_request("POST", "/t", headers=[("Transfer-Encoding", "chunked"), ("Trailer", "Authorization")])
                  + chunked_body([b"hello"], trailers=[("Authorization", "Bearer client"), ("Host", "evil"),
                                                      ("Cookie", "a=1"), ("X-Forwarded-For", "6.6.6.6"),
                                                      ("Expect", "100-continue"), ("X-Team", "red"),
                                                      ("X-Checksum", "abc")]))
        saw = echoed(conn.read_response())
    assert saw["trailers"] == [["X-Checksum", "abc"]]
    assert saw["body_length"] == 5


def test_max_forwards_counts_down_on_options_only(relay):
    options = echoed(relay.request("OPTIONS", "/a", headers=[("Max-Forwards", "5")]))
    assert ["Max-Forwards", "4"] in options["headers"]
    get = echoed(relay.request("GET", "/a", headers=[("Max-Forwards", "5")]))
    assert ["Max-Forwards", "5"] in get["headers"]


def test_options_at_max_forwards_zero_is_answered_by_the_relay(relay, upstream):
    resp = relay.request("OPTIONS", "/a", headers=[("Max-Forwards", "0")])
    assert resp.status == 200 and resp.body == b""
    assert resp.header("Allow") == "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
    assert upstream.stats()["requests_served"] == 0


def test_trace_is_refused_and_never_reaches_the_upstream(relay, upstream):
    resp = relay.request("TRACE", "/a", headers=[("Max-Forwards", "5")])
    assert assert_problem(resp, 405)["detail"] == "TRACE is not supported by this reverse proxy"
    assert relay.request("GET", "/after").status == 200
    assert upstream.stats()["requests_served"] == 1

