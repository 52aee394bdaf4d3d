"""Strict parsing: each malformed request gets a 400 problem, the connection is closed, and nothing
reaches the upstream (no request smuggling past the relay)."""

from http_client import assert_closed, assert_problem, build_request


def assert_rejected(relay, upstream, raw: bytes, head_may_reach_upstream: bool = False, status: int = 400) -> dict:
    with relay.connect() as conn:
        conn.send(raw)
        problem = assert_problem(conn.read_response(), status)
        assert_closed(conn)
    stats = upstream.stats()
    assert stats["requests_served"] == 0, f"the upstream answered a malformed request: {stats}"
    if not head_may_reach_upstream:
        assert stats["requests_started"] == 0, f"the upstream saw a malformed request: {stats}"
    return problem


def test_content_length_with_transfer_encoding_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, build_request("POST", "/", headers=[
        ("Content-Length", "5"), ("Transfer-Encoding", "chunked")]) + b"0\r\n\r\n")


def test_two_different_content_lengths_are_rejected(relay, upstream):
    assert_rejected(relay, upstream, build_request("POST", "/", headers=[
        ("Content-Length", "5"), ("Content-Length", "6")]) + b"hello!")


def test_invalid_content_length_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, build_request("POST", "/", headers=[("Content-Length", "5x")]) + b"hello")


def test_transfer_encoding_not_ending_in_chunked_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, build_request("POST", "/", headers=[
        ("Transfer-Encoding", "chunked, gzip")]) + b"0\r\n\r\n")


def test_transfer_coding_other_than_chunked_is_not_implemented(relay, upstream):
    # gzip would reach the upstream relabelled as plain if the relay re-framed the body.
    assert_rejected(relay, upstream, build_request("POST", "/", headers=[
        ("Transfer-Encoding", "gzip, chunked")]) + b"0\r\n\r\n", status=501)


def test_invalid_chunk_size_is_rejected(relay, upstream):
    # The head is valid, so a streaming relay may already have passed it on; the body never is.
    assert_rejected(relay, upstream, build_request("POST", "/", headers=[("Transfer-Encoding", "chunked")])
                    + b"zz\r\nhello\r\n0\r\n\r\n", head_may_reach_upstream=True)


def test_bare_lf_line_endings_are_rejected(relay, upstream):
    assert_rejected(relay, upstream, b"GET / HTTP/1.1\nHost: relay.test\n\n")


def test_bare_lf_after_one_header_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, b"GET / HTTP/1.1\r\nHost: relay.test\nX-A: b\r\n\r\n")


def test_bare_cr_line_ending_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, b"GET / HTTP/1.1\rHost: relay.test\r\n\r\n")


def test_nul_in_header_value_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, b"GET / HTTP/1.1\r\nHost: relay.test\r\nX-A: a\x00b\r\n\r\n")


def test_cr_in_header_value_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, b"GET / HTTP/1.1\r\nHost: relay.test\r\nX-A: a\rb\r\n\r\n")


def test_lf_in_header_value_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, b"GET / HTTP/1.1\r\nHost: relay.test\r\nX-A: a\nb: c\r\n\r\n")


def test_obs_fold_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, b"GET / HTTP/1.1\r\nHost: relay.test\r\nX-A: a\r\n folded\r\n\r\n")


def test_whitespace_before_the_header_colon_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, b"GET / HTTP/1.1\r\nHost: relay.test\r\nContent-Length : 5\r\n\r\nhello")


def test_missing_host_in_http11_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, build_request("GET", "/", host=None))


def test_duplicate_host_is_rejected(relay, upstream):
    assert_rejected(relay, upstream, build_request("GET", "/", headers=[("Host", "other.test")]))


def test_malformed_request_after_a_valid_one_is_rejected_after_answering_the_first(relay, upstream):
    with relay.connect() as conn:
        conn.send(build_request("GET", "/first")
                  + build_request("POST", "/second", headers=[("Content-Length", "1"), ("Transfer-Encoding", "chunked")])
                  + b"0\r\n\r\n")
        assert conn.read_response().json()["target"] == "/first"
        assert_problem(conn.read_response(), 400)
        assert_closed(conn)
    assert upstream.stats()["requests_started"] == 1
