"""What the upstream receives and what comes back: hop-by-hop headers removed (both ways), Via and
X-Forwarded-* added, the request target byte for byte, header order and duplicates kept, route
setHeaders applied, an upstream basePath prepended."""

from urllib.parse import urlencode

import pytest

from http_client import assert_problem, build_request, curl
from processes import ipv6_loopback_available, route


def split_list(values):
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def test_request_reaches_upstream_with_method_target_and_body(relay):
    resp = curl(relay.url + "/hello?x=1", "-X", "PUT", "--data-binary", "payload")
    assert resp.status == 200, resp.stderr
    echo = resp.json()
    assert (echo["method"], echo["target"], echo["version"]) == ("PUT", "/hello?x=1", "HTTP/1.1")
    assert echo["body_length"] == 7


def test_upstream_status_is_passed_through(relay):
    assert relay.request("GET", "/status/418").status == 418
    assert relay.request("GET", "/status/503").status == 503


def test_hop_by_hop_request_headers_are_removed(relay):
    resp = relay.request("GET", "/", headers=[
        ("Connection", "keep-alive, X-Hop-One"), ("Connection", "X-Hop-Two"),
        ("X-Hop-One", "1"), ("X-Hop-Two", "2"),
        ("Keep-Alive", "timeout=5"), ("Proxy-Connection", "keep-alive"), ("TE", "deflate"),
        ("Proxy-Authorization", "Basic dXNlcjpwYXNz"), ("X-End-To-End", "kept")])
    assert resp.status == 200
    names = {name.lower() for name, _ in resp.json()["headers"]}
    for hop in ("x-hop-one", "x-hop-two", "keep-alive", "proxy-connection", "proxy-authorization"):
        assert hop not in names, f"{hop} reached the upstream"
    assert "deflate" not in split_list(resp.echo_headers("TE")), "the client's TE reached the upstream"
    assert not {"x-hop-one", "x-hop-two"} & {t.lower() for t in split_list(resp.echo_headers("Connection"))}
    assert resp.echo_headers("X-End-To-End") == ["kept"]


def test_upgrade_header_without_a_tunnel_is_removed(relay):
    # No `Connection: upgrade`, so this is no upgrade request: Upgrade is just a hop-by-hop header.
    resp = relay.request("GET", "/", headers=[("Upgrade", "h2c"), ("X-End-To-End", "kept")])
    assert resp.status == 200
    assert resp.echo_headers("Upgrade") == []
    assert resp.echo_headers("X-End-To-End") == ["kept"]


def test_hop_by_hop_response_headers_are_removed(relay):
    query = urlencode([("set-header", "Connection: X-Resp-Hop"), ("set-header", "X-Resp-Hop: 1"),
                       ("set-header", "Keep-Alive: timeout=99"), ("set-header", "Proxy-Connection: keep-alive"),
                       ("set-header", "X-Resp-Kept: yes")])
    resp = relay.request("GET", "/?" + query)
    assert resp.status == 200
    assert resp.header("X-Resp-Hop") is None
    assert resp.header("Proxy-Connection") is None
    assert "timeout=99" not in resp.header_all("Keep-Alive")
    assert "x-resp-hop" not in [t.lower() for t in split_list(resp.header_all("Connection"))]
    assert resp.header_all("X-Resp-Kept") == ["yes"]


def test_via_is_added_to_the_forwarded_request(relay):
    assert split_list(relay.request().echo_headers("Via")) == ["1.1 oauth-relay"]


def test_via_is_appended_after_an_existing_via(relay):
    resp = relay.request(headers=[("Via", "1.0 fred, 1.1 example.net")])
    assert split_list(resp.echo_headers("Via")) == ["1.0 fred", "1.1 example.net", "1.1 oauth-relay"]


def test_x_forwarded_for_is_the_client_address(relay):
    assert relay.request().echo_headers("X-Forwarded-For") == ["127.0.0.1"]


def test_client_x_forwarded_for_is_replaced_by_default(relay):
    resp = relay.request(headers=[("X-Forwarded-For", "203.0.113.9"), ("X-Forwarded-For", "198.51.100.1")])
    assert resp.echo_headers("X-Forwarded-For") == ["127.0.0.1"]


def test_client_x_forwarded_proto_and_host_are_replaced_by_default(relay):
    resp = relay.request(host="api.example.test",
                         headers=[("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "evil.example")])
    assert resp.echo_headers("X-Forwarded-Proto") == ["http"]
    assert resp.echo_headers("X-Forwarded-Host") == ["api.example.test"]


def test_trusted_x_forwarded_for_is_appended_to(start_relay, upstream):
    relay = start_relay([route(upstream)], trustForwardedHeaders=True)
    resp = relay.request(headers=[("X-Forwarded-For", "203.0.113.9")])
    assert split_list(resp.echo_headers("X-Forwarded-For")) == ["203.0.113.9", "127.0.0.1"]


def test_x_forwarded_proto_is_http(relay):
    assert relay.request().echo_headers("X-Forwarded-Proto") == ["http"]


def test_x_forwarded_host_is_the_client_host(relay):
    resp = relay.request(host="api.example.test:8443")
    assert resp.echo_headers("X-Forwarded-Host") == ["api.example.test:8443"]


def test_request_header_order_and_duplicates_are_preserved(relay):
    sent = [("X-Order-C", "1"), ("X-Order-A", "2"), ("X-Order-C", "3"), ("Cookie", "a=1"),
            ("X-Order-B", "4"), ("x-order-a", "5"), ("Cookie", "b=2")]
    resp = relay.request(headers=sent)
    interesting = {"x-order-a", "x-order-b", "x-order-c", "cookie"}
    got = [(k.lower(), v) for k, v in resp.json()["headers"] if k.lower() in interesting]
    assert got == [(k.lower(), v) for k, v in sent]


def test_response_header_order_and_duplicates_are_preserved(relay):
    sent = [("Set-Cookie", "a=1; Path=/"), ("X-Between", "x"), ("Set-Cookie", "b=2; Path=/"), ("X-After", "y")]
    resp = relay.request("GET", "/?" + urlencode([("set-header", f"{k}: {v}") for k, v in sent]))
    interesting = {"set-cookie", "x-between", "x-after"}
    got = [(k.lower(), v) for k, v in resp.headers if k.lower() in interesting]
    assert got == [(k.lower(), v) for k, v in sent]


def test_request_target_is_forwarded_byte_for_byte(relay):
    target = "/p/a%2Fb/%7Euser/%41;v=1,2/it's*@!$+:~/?q=a%20b&q=%2F&x=1+2&empty=&&flag&%41=%zz&u=%E2%9C%93"
    assert relay.request("GET", target).json()["target"] == target


def test_dot_segments_and_repeated_slashes_are_forwarded_unchanged(relay):
    # Routing looks at the normalized path; the upstream still gets the target as sent (RFC 9112 3.2).
    target = "/static/./a/../b//c?x=/../y"
    assert relay.request("GET", target).json()["target"] == target


def test_route_set_headers_replace_the_client_value(start_relay, upstream):
    relay = start_relay([route(upstream, setHeaders={"X-Api-Key": "from-relay"})])
    resp = relay.request(headers=[("x-api-key", "from-client"), ("X-Api-Key", "again")])
    assert resp.echo_headers("X-Api-Key") == ["from-relay"]


def test_route_set_headers_are_added_when_the_client_has_none(start_relay, upstream):
    relay = start_relay([route(upstream, setHeaders={"X-Api-Key": "from-relay", "X-Tenant": "acme"})])
    resp = relay.request()
    assert resp.echo_headers("X-Api-Key") == ["from-relay"]
    assert resp.echo_headers("X-Tenant") == ["acme"]


def test_upstream_base_path_is_prepended_to_the_target(start_relay, upstream):
    relay = start_relay([route(upstream, base="/base")])
    assert relay.request("GET", "/items?id=7").json()["target"] == "/base/items?id=7"


def test_connect_method_is_refused_with_405(relay, upstream):
    with relay.connect() as conn:
        conn.send(build_request("CONNECT", "example.com:443", host="example.com:443"))
        assert_problem(conn.read_response(), 405)
    assert upstream.stats()["requests_started"] == 0


@pytest.mark.skipif(not ipv6_loopback_available(), reason="no IPv6 loopback")
def test_relay_listens_on_ipv6_loopback_and_forwards_to_ipv6_upstream(start_relay, start_upstream):
    upstream6 = start_upstream("::1")
    relay = start_relay([route(upstream6)], host="::1")
    resp = curl(relay.url + "/six")
    assert resp.status == 200, resp.stderr
    assert resp.json()["target"] == "/six"
    assert resp.echo_headers("X-Forwarded-For") == ["::1"]
