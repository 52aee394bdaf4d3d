"""Route selection: exact host > `*.wildcard` host > no host, then the longest pathPrefix; routing on
the normalized path; 404 when nothing matches; stripPrefix. Each route marks the requests it
forwards with `X-Route: <name>` (setHeaders), so the echo upstream tells which route matched."""

from http_client import assert_problem
from processes import route


def marked(upstream, name, prefix="/", host=None, **options):
    return route(upstream, prefix, host, name=name, setHeaders={"X-Route": name}, **options)


def routed_by(resp) -> str:
    assert resp.status == 200, f"{resp.status}: {resp.body[:300]!r}"
    routes = resp.echo_headers("X-Route")
    assert len(routes) == 1, routes
    return routes[0]


def test_no_matching_route_gets_404_problem(start_relay, upstream):
    relay = start_relay([marked(upstream, "api", "/api/")])
    assert_problem(relay.request("GET", "/other"), 404)
    assert upstream.stats()["requests_started"] == 0


def test_host_that_matches_no_route_gets_404(start_relay, upstream):
    relay = start_relay([marked(upstream, "api", host="api.example.test")])
    assert_problem(relay.request("GET", "/", host="other.example.test"), 404)


def test_longest_path_prefix_wins_regardless_of_order(start_relay, upstream):
    relay = start_relay([marked(upstream, "root", "/"), marked(upstream, "api", "/api/"),
                         marked(upstream, "v2", "/api/v2/")])
    assert routed_by(relay.request("GET", "/api/v2/orders")) == "v2"
    assert routed_by(relay.request("GET", "/api/v1/orders")) == "api"
    assert routed_by(relay.request("GET", "/elsewhere")) == "root"


def test_exact_host_beats_wildcard_host(start_relay, upstream):
    relay = start_relay([marked(upstream, "wildcard", host="*.example.test"),
                         marked(upstream, "exact", host="api.example.test")])
    assert routed_by(relay.request(host="api.example.test")) == "exact"
    assert routed_by(relay.request(host="www.example.test")) == "wildcard"


def test_wildcard_host_beats_route_without_host(start_relay, upstream):
    relay = start_relay([marked(upstream, "any"), marked(upstream, "wildcard", host="*.example.test")])
    assert routed_by(relay.request(host="www.example.test")) == "wildcard"
    assert routed_by(relay.request(host="elsewhere.test")) == "any"


def test_host_match_outranks_a_longer_path_prefix(start_relay, upstream):
    relay = start_relay([marked(upstream, "long-prefix", "/api/v2/"),
                         marked(upstream, "host", "/", host="api.example.test")])
    assert routed_by(relay.request("GET", "/api/v2/x", host="api.example.test")) == "host"
    assert routed_by(relay.request("GET", "/api/v2/x", host="other.test")) == "long-prefix"


def test_host_match_ignores_port_and_case(start_relay, upstream):
    relay = start_relay([marked(upstream, "any"), marked(upstream, "exact", host="api.example.test")])
    assert routed_by(relay.request(host="API.Example.Test:8180")) == "exact"


def test_wildcard_host_does_not_match_the_bare_domain(start_relay, upstream):
    relay = start_relay([marked(upstream, "any"), marked(upstream, "wildcard", host="*.example.test")])
    assert routed_by(relay.request(host="example.test")) == "any"


def test_routing_uses_the_path_with_dot_segments_removed(start_relay, upstream):
    relay = start_relay([marked(upstream, "root"), marked(upstream, "admin", "/admin/")])
    resp = relay.request("GET", "/public/../admin/panel")
    assert routed_by(resp) == "admin"
    assert routed_by(relay.request("GET", "/admin/../public/x")) == "root"


def test_routing_decodes_percent_encoded_unreserved_characters(start_relay, upstream):
    relay = start_relay([marked(upstream, "root"), marked(upstream, "admin", "/admin/")])
    assert routed_by(relay.request("GET", "/%61dmin/panel")) == "admin"
    assert routed_by(relay.request("GET", "/%61%64%6D%69%6E/panel")) == "admin"


def test_encoded_slash_does_not_split_path_segments(start_relay, upstream):
    relay = start_relay([marked(upstream, "root"), marked(upstream, "admin", "/admin/")])
    for target in ("/admin%2Fpanel", "/admin%2fpanel"):
        resp = relay.request("GET", target)
        assert routed_by(resp) == "root", target
        assert resp.json()["target"] == target


def test_strip_prefix_removes_the_matched_prefix(start_relay, upstream):
    relay = start_relay([marked(upstream, "svc", "/svc", stripPrefix=True)])
    assert relay.request("GET", "/svc/items?x=1").json()["target"] == "/items?x=1"


def test_strip_prefix_of_the_whole_path_forwards_root(start_relay, upstream):
    relay = start_relay([marked(upstream, "svc", "/svc", stripPrefix=True)])
    assert relay.request("GET", "/svc").json()["target"] == "/"
    assert relay.request("GET", "/svc?x=1").json()["target"] == "/?x=1"


def test_strip_prefix_keeps_the_rest_of_the_target_byte_for_byte(start_relay, upstream):
    relay = start_relay([marked(upstream, "svc", "/svc", stripPrefix=True)])
    assert relay.request("GET", "/svc/a%2Fb/%7E;p?q=%20+&r").json()["target"] == "/a%2Fb/%7E;p?q=%20+&r"


def test_strip_prefix_with_upstream_base_path(start_relay, upstream):
    relay = start_relay([marked(upstream, "svc", "/svc", stripPrefix=True, base="/base")])
    assert relay.request("GET", "/svc/items").json()["target"] == "/base/items"


def test_prefix_is_forwarded_when_strip_prefix_is_off(start_relay, upstream):
    relay = start_relay([marked(upstream, "svc", "/svc/")])
    assert relay.request("GET", "/svc/items").json()["target"] == "/svc/items"


def test_head_that_matches_no_route_gets_the_404_head_without_a_body(start_relay, upstream):
    # The next response on the connection must not be read out of a problem body.
    relay = start_relay([route(upstream, "/api/")])
    with relay.connect() as conn:
        conn.send(b"HEAD /elsewhere HTTP/1.1\r\nHost: x\r\n\r\nGET /api/after HTTP/1.1\r\nHost: x\r\n\r\n")
        head = conn.read_response(method="HEAD")
        assert head.status == 404 and head.body == b""
        assert head.header("Content-Type") == "application/problem+json"
        after = conn.read_response()
        assert after.status == 200 and after.json()["target"] == "/api/after"
