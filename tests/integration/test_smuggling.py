"""Request smuggling and response splitting, as tables: malformed or ambiguous messages in both
directions, each row stating what the relay answers, whether the connection closes, and exactly
what crosses to the other side.

Requests (`REQUEST_ROWS`): raw bytes from a client. Each row states the answers the client gets
in order (an int: a problem document from the relay with that status; a str: the upstream's
answer to that target), whether the relay then closes the client connection, and what the
upstream received: the complete requests (request line, framing, decoded body) and, for a body
found malformed after its head went on, the request line of a message that may reach the
upstream in part but never completes (the relay must close that upstream connection). Every
forwarded message must parse under a strict parser (raw_upstream.parse_requests): one framing,
canonical chunks, no obs-fold, no stray CR/LF/NUL. A connection that stays open must serve a
next request in step (`/probe`).

Responses (`RESPONSE_ROWS`): bytes a scripted upstream sends for one request. Each row states
what the client gets: a 502 problem, an exact answer, or a response that cannot look complete
(the connection closes before its framing ends); and whether that upstream connection must be
closed by the relay (never reused) or stays pooled.

Every row runs against its own relay and raw upstream (raw_upstream.py), and the upstream's
pool is warmed first (`/warm`), so that any byte the relay forwards would arrive. Once the
relay has exited, the upstream's record is complete (`RawUpstream.drain`).

Rows marked xfail(strict=True) are relay defects: the row states the correct behaviour. Two
tests after the tables follow rows across connections: bytes past a Content-Length never answer
a later request, and the `cl-named-in-connection` defect smuggles into another client's request.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from deadlines import scaled, wait_until
from http_client import ConnectionClosed, RawConnection, assert_closed, assert_problem
from processes import route
from raw_upstream import RawUpstream

HOST = b"relay.test"
LIMITS = {"headerTimeoutSeconds": 3, "requestBodyTimeoutSeconds": 3, "upstreamResponseTimeoutSeconds": 5}
IO_TIMEOUT = 5


# ---------------------------------------------------------------------------------------------
# Row vocabulary.

@dataclass(frozen=True)
class Fwd:
    """One complete request as the upstream must receive it."""
    line: str
    body: bytes = b""
    framing: str = "none"           # none | length | chunked
    headers: tuple = ()             # (name, (value, ...)): exact values of these fields
    trailers: tuple | None = None   # names of the trailer fields, in order (None: not checked)


@dataclass(frozen=True)
class Up:
    """What reaches the upstream: these complete requests, in order; and, if `partial` is a
    request line, possibly the head (and part of the body) of that request, never completed,
    on a connection the relay then closes."""
    requests: tuple = ()
    partial: str | None = None


NOTHING = Up()


def fwd(*requests: Fwd) -> Up:
    return Up(tuple(requests))


def partial(line: str, *before: Fwd) -> Up:
    return Up(tuple(before), line)


@dataclass(frozen=True)
class Case:
    raw: bytes
    answers: tuple          # int: a relay problem with that status; str: upstream answer to that target
    close: bool             # the relay closes the client connection after the answers
    up: Up
    half_close: bool = False  # the client shuts down its sending side after the bytes


def _b(x) -> bytes:
    return x if isinstance(x, bytes) else x.encode("latin-1")


def rq(start, *fields, body: bytes = b"", host: bytes | None = HOST) -> bytes:
    """A request head: the start line, `Host: relay.test` (unless host=None), the given field
    lines exactly as written, the blank line, then `body` as is."""
    lines = [_b(start)]
    if host is not None:
        lines.append(b"Host: " + host)
    lines += [_b(f) for f in fields]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


CH_HELLO = b"5\r\nhello\r\n0\r\n\r\n"
GET_B = rq("GET /b HTTP/1.1")
POST_A = "POST /a HTTP/1.1"
GET_A = "GET /a HTTP/1.1"
HELLO_CHUNKED = Fwd(POST_A, b"hello", "chunked")
HELLO_LENGTH = Fwd(POST_A, b"hello", "length")
SMUGGLING_BODY = b"0\r\n\r\n" + rq("GET /smuggled HTTP/1.1")


def row(id_: str, case: Case, defect: str | None = None):
    marks = [pytest.mark.xfail(strict=True, reason=f"relay defect: {defect}")] if defect else []
    return pytest.param(case, id=id_, marks=marks)


def rejected(raw: bytes, status: int = 400, up: Up = NOTHING, **kw) -> Case:
    return Case(raw, (status,), True, up, **kw)


def forwarded(raw: bytes, *requests: Fwd, answers: tuple | None = None) -> Case:
    targets = answers if answers is not None else tuple(r.line.split(" ")[1] for r in requests)
    return Case(raw, targets, False, fwd(*requests))


# ---------------------------------------------------------------------------------------------
# Request rows.

CL_TE_ROWS = [
    row("te-before-cl", rejected(rq(POST_A, "Transfer-Encoding: chunked", "Content-Length: 5", body=CH_HELLO))),
    row("cl-0-with-te", rejected(rq(POST_A, "Content-Length: 0", "Transfer-Encoding: chunked", body=CH_HELLO))),
    row("cl-with-te-identity", rejected(rq(POST_A, "Content-Length: 5", "Transfer-Encoding: identity", body=b"hello"))),
    row("cl-with-te-xchunked", rejected(rq(POST_A, "Content-Length: 5", "Transfer-Encoding: xchunked", body=b"hello"))),
    row("cl-with-te-on-two-lines", rejected(rq(POST_A, "Transfer-Encoding: identity", "Content-Length: 5",
                                                  "Transfer-Encoding: chunked", body=CH_HELLO))),
    row("cl-te-with-smuggled-request-after-last-chunk", rejected(rq(
        POST_A, f"Content-Length: {len(SMUGGLING_BODY)}", "Transfer-Encoding: chunked", body=SMUGGLING_BODY))),
    row("te-cl-http10", rejected(rq("POST /a HTTP/1.0", "Transfer-Encoding: chunked", "Content-Length: 5", body=CH_HELLO))),
    row("cl-duplicate-identical", rejected(rq(POST_A, "Content-Length: 5", "Content-Length: 5", body=b"hello"))),
    row("cl-list-identical", rejected(rq(POST_A, "Content-Length: 5, 5", body=b"hello"))),
    row("cl-plus-sign", rejected(rq(POST_A, "Content-Length: +5", body=b"hello"))),
    row("cl-negative", rejected(rq(POST_A, "Content-Length: -5", body=b"hello"))),
    row("cl-hex", rejected(rq(POST_A, "Content-Length: 0x5", body=b"hello"))),
    row("cl-overflow-2^64", rejected(rq(POST_A, "Content-Length: 18446744073709551616", body=b"hello"))),
    row("cl-inner-space", rejected(rq(POST_A, "Content-Length: 5 5", body=b"hello"))),
    row("cl-vtab-before-value", rejected(rq(POST_A, b"Content-Length: \x0b5", body=b"hello"))),
    row("cl-empty", rejected(rq(POST_A, "Content-Length:", body=b"hello"))),
    row("cl-obs-fold", rejected(rq(POST_A, "Content-Length:", " 5", body=b"hello"))),
    row("cl-trailing-space", forwarded(rq(POST_A, "Content-Length: 5 ", body=b"hello"), HELLO_LENGTH)),
    # Stricter than RFC 9110's OWS (SP / HTAB), and safe: a tab around the length is refused.
    row("cl-tab-ows", rejected(rq(POST_A, "Content-Length:\t5\t", body=b"hello"))),
    # A Connection header naming a framing field would make it hop-by-hop: refused, never dropped.
    row("cl-named-in-connection", rejected(rq(POST_A, "Connection: Content-Length", "Content-Length: 5", body=b"hello"))),
    row("te-named-in-connection", rejected(rq(POST_A, "Connection: Transfer-Encoding", "Transfer-Encoding: chunked",
                                              body=b"5\r\nhello\r\n0\r\n\r\n"))),
    row("host-named-in-connection", rejected(rq("GET /a HTTP/1.1", "Connection: Host"))),
    # Framing fields in trailers (RFC 9110 §6.5.1) are refused, after the head went on.
    row("cl-in-trailers", rejected(
        rq(POST_A, "Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\nContent-Length: 5\r\nX-Ok: 1\r\n\r\n"),
        up=partial(POST_A))),
    row("cl-0-in-trailers", rejected(
        rq(POST_A, "Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\nContent-Length: 0\r\nX-Ok: 1\r\n\r\n"),
        up=partial(POST_A))),
    # llhttp judges a Transfer-Encoding trailer like a header: refused, after the head went on.
    row("te-in-trailers", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                      body=b"5\r\nhello\r\n0\r\nTransfer-Encoding: chunked\r\nX-Ok: 1\r\n\r\n"),
                                   up=partial(POST_A))),
]

TE_ROWS = [
    row("te-value-capitalised", forwarded(rq(POST_A, "Transfer-Encoding: Chunked", body=CH_HELLO), HELLO_CHUNKED)),
    row("te-name-and-value-upper-case", forwarded(rq(POST_A, "TRANSFER-ENCODING: CHUNKED", body=CH_HELLO), HELLO_CHUNKED)),
    row("te-no-space-after-colon", forwarded(rq(POST_A, "Transfer-Encoding:chunked", body=CH_HELLO), HELLO_CHUNKED)),
    row("te-leading-tab", forwarded(rq(POST_A, "Transfer-Encoding:\tchunked", body=CH_HELLO), HELLO_CHUNKED)),
    row("te-trailing-space", forwarded(rq(POST_A, "Transfer-Encoding: chunked ", body=CH_HELLO), HELLO_CHUNKED)),
    # Stricter than OWS allows, and safe.
    row("te-trailing-tab", rejected(rq(POST_A, "Transfer-Encoding: chunked\t", body=CH_HELLO))),
    row("te-vtab-before-value", rejected(rq(POST_A, b"Transfer-Encoding: \x0bchunked", body=CH_HELLO))),
    row("te-vtab-after-value", rejected(rq(POST_A, b"Transfer-Encoding: chunked\x0b", body=CH_HELLO))),
    row("te-formfeed-before-value", rejected(rq(POST_A, b"Transfer-Encoding: \x0cchunked", body=CH_HELLO))),
    row("te-space-before-colon", rejected(rq(POST_A, "Transfer-Encoding : chunked", body=CH_HELLO))),
    row("te-vtab-in-name", rejected(rq(POST_A, b"Transfer-Encoding\x0b: chunked", body=CH_HELLO))),
    row("te-as-folded-line", rejected(rq(POST_A, " Transfer-Encoding: chunked", body=CH_HELLO))),
    row("te-xchunked", rejected(rq(POST_A, "Transfer-Encoding: xchunked", body=CH_HELLO))),
    row("te-chunked-twice-in-a-list", rejected(rq(POST_A, "Transfer-Encoding: chunked, chunked", body=CH_HELLO))),
    row("te-chunked-on-two-lines", rejected(rq(POST_A, "Transfer-Encoding: chunked", "Transfer-Encoding: chunked",
                                               body=CH_HELLO))),
    row("te-chunked-not-last", rejected(rq(POST_A, "Transfer-Encoding: chunked, identity", body=CH_HELLO))),
    row("te-identity-then-chunked", rejected(rq(POST_A, "Transfer-Encoding: identity, chunked", body=CH_HELLO), 501)),
    row("te-gzip-alone", rejected(rq(POST_A, "Transfer-Encoding: gzip", body=b"hello"))),
    row("te-quoted", rejected(rq(POST_A, 'Transfer-Encoding: "chunked"', body=CH_HELLO))),
    row("te-with-parameter", rejected(rq(POST_A, "Transfer-Encoding: chunked;q=1", body=CH_HELLO))),
    row("te-empty-value", rejected(rq(POST_A, "Transfer-Encoding:", body=CH_HELLO))),
    row("te-http10", rejected(rq("POST /a HTTP/1.0", "Transfer-Encoding: chunked", body=CH_HELLO))),
]

CHUNK_ROWS = [
    row("chunk-size-leading-zeros", forwarded(rq(POST_A, "Transfer-Encoding: chunked",
                                                 body=b"0005\r\nhello\r\n0000\r\n\r\n"), HELLO_CHUNKED)),
    row("chunk-size-upper-case-hex", forwarded(rq(POST_A, "Transfer-Encoding: chunked",
                                                  body=b"A\r\n0123456789\r\n0\r\n\r\n"),
                                               Fwd(POST_A, b"0123456789", "chunked"))),
    row("chunk-extension", forwarded(rq(POST_A, "Transfer-Encoding: chunked", body=b"5;name=value\r\nhello\r\n0\r\n\r\n"),
                                     HELLO_CHUNKED)),
    row("chunk-extension-quoted", forwarded(rq(POST_A, "Transfer-Encoding: chunked",
                                               body=b'5;a="b;c"\r\nhello\r\n0;e\r\n\r\n'), HELLO_CHUNKED)),
    # A quoted-pair is valid (RFC 9112 §7.1.1) but llhttp 8 refuses it: stricter, and safe.
    row("chunk-extension-quoted-pair", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                                   body=b'5;a="b\\"c"\r\nhello\r\n0\r\n\r\n'), up=partial(POST_A))),
    row("chunk-size-0x", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"0x5\r\nhello\r\n0\r\n\r\n"),
                                  up=partial(POST_A))),
    row("chunk-size-overflow-2^64", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                                body=b"10000000000000000\r\nhello\r\n0\r\n\r\n"), up=partial(POST_A))),
    row("chunk-size-overflow-then-small", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                                      body=b"100000000000000005\r\nhello\r\n0\r\n\r\n"), up=partial(POST_A))),
    row("chunk-size-negative", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"-5\r\nhello\r\n0\r\n\r\n"),
                                        up=partial(POST_A))),
    row("chunk-size-leading-space", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b" 5\r\nhello\r\n0\r\n\r\n"),
                                             up=partial(POST_A))),
    row("chunk-size-trailing-space", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"5 \r\nhello\r\n0\r\n\r\n"),
                                              up=partial(POST_A))),
    row("chunk-size-bare-lf", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"5\nhello\r\n0\r\n\r\n"),
                                       up=partial(POST_A))),
    row("chunk-size-bare-cr", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"5\rhello\r\n0\r\n\r\n"),
                                       up=partial(POST_A))),
    row("chunk-extension-bare-lf", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                               body=b"5;a=b\nhello\r\n0\r\n\r\n"), up=partial(POST_A))),
    row("chunk-extension-bare-cr", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                               body=b"5;a\rb\r\nhello\r\n0\r\n\r\n"), up=partial(POST_A))),
    row("chunk-extension-nul", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                           body=b"5;a=\x00\r\nhello\r\n0\r\n\r\n"), up=partial(POST_A))),
    row("chunk-data-then-bare-lf", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"5\r\nhello\n0\r\n\r\n"),
                                            up=partial(POST_A))),
    row("chunk-data-without-crlf", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"5\r\nhello0\r\n\r\n"),
                                            up=partial(POST_A))),
    row("chunk-data-longer-than-size", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                                   body=b"5\r\nhelloXX\r\n0\r\n\r\n"), up=partial(POST_A))),
    row("last-chunk-bare-lf", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\n\r\n"),
                                       up=partial(POST_A))),
    row("final-crlf-bare-lf", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\n\n"),
                                       up=partial(POST_A))),
    row("trailers-end-bare-lf", rejected(rq(POST_A, "Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\nX-T: 1\r\n\n"),
                                         up=partial(POST_A))),
    row("head-ends-bare-lf", rejected(b"GET /a HTTP/1.1\r\nHost: relay.test\r\n\n")),
    row("request-line-ends-bare-lf", rejected(b"GET /a HTTP/1.1\nHost: relay.test\r\n\r\n")),
    row("request-line-two-spaces-after-target", rejected(rq("POST /a  HTTP/1.1", "Content-Length: 5", body=b"hello"))),
    row("unknown-method-is-501", rejected(rq("BREW /a HTTP/1.1"), status=501)),
    row("chunk-extensions-over-16-kib", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                                    body=b"5;" + b"x" * 17000 + b"\r\nhello\r\n0\r\n\r\n"),
                                                 up=partial(POST_A))),
    row("head-ends-bare-lf-after-empty-value", rejected(b"GET /a HTTP/1.1\r\nHost: relay.test\r\nX-E:\r\n\n")),
    row("http10-head-without-fields-ends-bare-lf", rejected(b"GET /a HTTP/1.0\r\n\n")),
    row("request-line-in-place-of-trailers", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                                         body=b"5\r\nhello\r\n0\r\n" + GET_B), up=partial(POST_A))),
    row("trailer-obs-fold", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                        body=b"5\r\nhello\r\n0\r\nX-T: a\r\n b\r\n\r\n"), up=partial(POST_A))),
    row("trailer-nul", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                   body=b"5\r\nhello\r\n0\r\nX-T: a\x00b\r\n\r\n"), up=partial(POST_A))),
    row("trailer-bare-lf", rejected(rq(POST_A, "Transfer-Encoding: chunked",
                                       body=b"5\r\nhello\r\n0\r\nX-T: a\nX-U: b\r\n\r\n"), up=partial(POST_A))),
]

FIELD_ROWS = [
    row("obs-fold-with-tab", rejected(rq(GET_A, "X-A: a", "\tb"))),
    row("te-value-on-a-folded-line", rejected(rq(POST_A, "Transfer-Encoding:", " chunked", body=CH_HELLO))),
    row("obs-fold-after-empty-value", rejected(rq(GET_A, "X-A:", " folded"))),
    row("nul-in-name", rejected(rq(GET_A, b"X-\x00A: b"))),
    row("bare-cr-in-name", rejected(rq(GET_A, b"X-\rA: b"))),
    row("vtab-in-name", rejected(rq(GET_A, b"X\x0bA: b"))),
    row("space-in-name", rejected(rq(GET_A, "X A: b"))),
    row("line-without-colon", rejected(rq(GET_A, "XA b"))),
    row("bare-cr-ending-a-value", rejected(rq(GET_A, b"X-A: b\r"))),
    row("ctl-in-value", rejected(rq(GET_A, b"X-A: a\x01b"))),
    row("del-in-value", rejected(rq(GET_A, b"X-A: a\x7fb"))),
    row("nul-in-host", rejected(rq(GET_A, b"Host: relay\x00.test", host=None))),
    row("space-before-first-field", rejected(rq(GET_A, " Host: relay.test", host=None))),
    row("nul-in-target", rejected(rq(b"GET /a\x00b HTTP/1.1"))),
    row("bare-cr-in-target", rejected(rq(b"GET /a\rb HTTP/1.1"))),
    row("nul-in-method", rejected(rq(b"G\x00ET /a HTTP/1.1"))),
    row("obs-text-value-is-forwarded-byte-for-byte", forwarded(
        rq(GET_A, b"X-A: caf\xe9"), Fwd(GET_A, headers=(("x-a", (b"caf\xe9",)),)))),
]

ABS_A = "GET /x HTTP/1.1"
HOST_DEFECT = ("the Host value is not validated (RFC 9112 §3.2: 400 for an invalid Host): it is routed as "
               "a host name (falling through to the host-less route) and sent upstream verbatim as "
               "X-Forwarded-Host")

TARGET_ROWS = [
    row("absolute-form-overrides-host", forwarded(
        rq("GET http://a.test/x HTTP/1.1", host=b"b.test"),
        Fwd(ABS_A, headers=(("x-route", (b"a",)), ("x-forwarded-host", (b"a.test",)))))),
    row("absolute-form-matching-host", forwarded(
        rq("GET http://a.test/x HTTP/1.1", host=b"a.test"),
        Fwd(ABS_A, headers=(("x-route", (b"a",)), ("x-forwarded-host", (b"a.test",)))))),
    row("absolute-form-with-userinfo", rejected(rq("GET http://user@b.test/x HTTP/1.1", host=b"a.test"))),
    row("absolute-form-without-host", rejected(rq("GET http://a.test/x HTTP/1.1", host=None))),
    # Refused after parsing, framing intact: the connection stays usable.
    row("absolute-form-ftp-scheme", rejected(rq("GET ftp://a.test/x HTTP/1.1"))),
    row("absolute-form-empty-authority", rejected(rq("GET http:///x HTTP/1.1"))),
    row("authority-form-with-get", rejected(rq("GET a.test:80 HTTP/1.1"))),
    row("asterisk-form-with-get", Case(rq("GET * HTTP/1.1"), (400,), False, NOTHING)),
    row("fragment-in-target", Case(rq("GET /a#frag HTTP/1.1"), (400,), False, NOTHING)),
    row("space-in-target", rejected(rq("GET /a b HTTP/1.1"))),
    # RFC 9112 §3 lets a recipient split the request line on whitespace; it is forwarded normalised.
    row("two-spaces-after-method", rejected(rq("GET  /a HTTP/1.1"))),
    row("lower-case-version", rejected(rq("GET /a http/1.1"))),
    # RFC 9110 §2.5 suggests serving 1.2 as 1.1; refusing it is stricter, and safe.
    row("version-1.2", rejected(rq("GET /a HTTP/1.2"))),
    row("version-2.0", rejected(rq("GET /a HTTP/2.0"), 505)),
    row("http09-request-line", rejected(b"GET /a\r\n\r\n")),
    row("host-list", rejected(rq(GET_A, host=b"a.test, b.test"))),
    row("host-with-userinfo", rejected(rq(GET_A, host=b"user@a.test"))),
    row("host-with-path", rejected(rq(GET_A, host=b"a.test/evil"))),
    # A well-formed method the relay does not know: 501 (RFC 9110 §9.1), not forwarded.
    row("lower-case-method", rejected(rq("get /a HTTP/1.1"), status=501)),
]

PIPELINE_ROWS = [
    row("empty-line-before-request-line", forwarded(b"\r\n" + rq(GET_A), Fwd(GET_A))),
    row("garbage-after-get", Case(rq(GET_A) + b"GARBAGE\r\n\r\n", ("/a", 400), True, fwd(Fwd(GET_A)))),
    row("nul-bytes-after-get", Case(rq(GET_A) + b"\x00\x00\x00\x00", ("/a", 400), True, fwd(Fwd(GET_A)))),
    row("body-of-a-get-without-length", Case(rq(GET_A) + b"hello", ("/a", 400), True, fwd(Fwd(GET_A)))),
    row("response-bytes-after-get", Case(rq(GET_A) + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
                                         ("/a", 400), True, fwd(Fwd(GET_A)))),
    row("garbage-after-chunked-post", Case(rq(POST_A, "Transfer-Encoding: chunked", body=CH_HELLO) + b"XYZ\r\n\r\n",
                                           ("/a", 400), True, fwd(HELLO_CHUNKED))),
    row("request-after-content-length-body-is-its-own", forwarded(
        rq(POST_A, "Content-Length: 5", body=b"hello") + GET_B, HELLO_LENGTH, Fwd("GET /b HTTP/1.1"))),
    row("request-after-chunked-body-is-its-own", forwarded(
        rq(POST_A, "Transfer-Encoding: chunked", body=CH_HELLO) + GET_B, HELLO_CHUNKED, Fwd("GET /b HTTP/1.1"))),
    row("http10-keep-alive-then-te", Case(rq("GET /a HTTP/1.0", "Connection: keep-alive", host=None)
                                          + rq("POST /b HTTP/1.0", "Transfer-Encoding: chunked", body=CH_HELLO, host=None),
                                          ("/a", 400), True, fwd(Fwd(GET_A)))),
    row("head-cut-short-by-half-close", Case(b"GET /a HTTP/1.1\r\nHost: relay.test\r\n", (), True, NOTHING,
                                             half_close=True)),
]

EXPECT_ROWS = [
    row("expect-100-continue-without-body", forwarded(rq(GET_A, "Expect: 100-continue"), Fwd(GET_A))),
    row("expect-100-continue-case", forwarded(rq(POST_A, "Expect: 100-Continue", "Content-Length: 5", body=b"hello"),
                                              HELLO_LENGTH)),
    row("expect-twice", forwarded(rq(POST_A, "Expect: 100-continue", "Expect: 100-continue", "Content-Length: 5",
                                     body=b"hello"), HELLO_LENGTH)),
    row("expect-with-chunked-body", forwarded(rq(POST_A, "Expect: 100-continue", "Transfer-Encoding: chunked",
                                                 body=CH_HELLO), HELLO_CHUNKED)),
    # RFC 9110 §10.1.1: a server MAY answer 417; a proxy may as well pass the expectation on.
    row("expect-unknown-expectation", forwarded(rq(POST_A, "Expect: 200-ok", "Content-Length: 5", body=b"hello"),
                                                Fwd(POST_A, b"hello", "length", headers=(("expect", (b"200-ok",)),)))),
    # The relay relays no 1xx to an HTTP/1.0 client, so passing the expectation on does no harm.
    row("expect-in-http10", Case(rq("POST /a HTTP/1.0", "Expect: 100-continue", "Content-Length: 5", body=b"hello",
                                    host=None), ("/a",), True,
                                 fwd(Fwd(POST_A, b"hello", "length", headers=(("expect", (b"100-continue",)),))))),
]

WS_HEADERS = ("Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
              "Sec-WebSocket-Version: 13")
WS_FRAME = b"\x81\x85\x01\x02\x03\x04" + bytes(b ^ m for b, m in zip(b"hello", b"\x01\x02\x03\x04\x01"))

UPGRADE_ROWS = [
    row("upgrade-declined-then-request", forwarded(
        rq(GET_A, *WS_HEADERS) + GET_B,
        Fwd(GET_A, headers=(("upgrade", (b"websocket",)),)), Fwd("GET /b HTTP/1.1", headers=(("upgrade", ()),)))),
    row("upgrade-declined-then-websocket-frame", Case(rq(GET_A, *WS_HEADERS) + WS_FRAME, ("/a", 400), True,
                                                      fwd(Fwd(GET_A)))),
    row("upgrade-without-connection-token", forwarded(
        rq(GET_A, "Upgrade: websocket") + GET_B,
        Fwd(GET_A, headers=(("upgrade", ()),)), Fwd("GET /b HTTP/1.1"))),
    row("connection-upgrade-without-upgrade", forwarded(
        rq(GET_A, "Connection: Upgrade") + GET_B, Fwd(GET_A, headers=(("connection", ()),)), Fwd("GET /b HTTP/1.1"))),
    row("upgrade-with-content-length-body", forwarded(
        rq(POST_A, *WS_HEADERS, "Content-Length: 5", body=b"hello") + GET_B, HELLO_LENGTH, Fwd("GET /b HTTP/1.1"))),
    row("upgrade-with-chunked-body", forwarded(
        rq(POST_A, *WS_HEADERS, "Transfer-Encoding: chunked", body=CH_HELLO) + GET_B,
        HELLO_CHUNKED, Fwd("GET /b HTTP/1.1"))),
]

REQUEST_AREAS = {
    "cl-te": CL_TE_ROWS, "te-te": TE_ROWS, "chunks": CHUNK_ROWS, "fields": FIELD_ROWS,
    "target-and-host": TARGET_ROWS, "pipelining": PIPELINE_ROWS, "expect": EXPECT_ROWS, "upgrade": UPGRADE_ROWS,
}
REQUEST_ROWS = [r for rows in REQUEST_AREAS.values() for r in rows]


# ---------------------------------------------------------------------------------------------
# Running a request row.

def request_routes(upstream: RawUpstream) -> list[dict]:
    return [route(upstream.url, "/", host="a.test", name="a", setHeaders={"X-Route": "a"}),
            route(upstream.url, "/", host="b.test", name="b", setHeaders={"X-Route": "b"}),
            route(upstream.url, "/", name="any", setHeaders={"X-Route": "any"})]


@pytest.fixture
def raw_upstream():
    started: list[RawUpstream] = []

    def start(**kw) -> RawUpstream:
        up = RawUpstream(**kw).start()
        started.append(up)
        return up

    yield start
    for up in started:
        up.stop()


CONTROL_TARGETS = (b"/warm", b"/probe")


def warm(relay) -> None:
    """One request on its own connection, so the relay holds a pooled upstream connection."""
    with relay.connect() as conn:
        resp = conn.request("GET", "/warm")
        assert (resp.status, resp.body) == (200, b"/warm"), resp


def probe(conn: RawConnection) -> None:
    """The connection is still open and in step: a next request gets its own answer."""
    resp = conn.request("GET", "/probe")
    assert (resp.status, resp.body) == (200, b"/probe"), f"the next request got {resp.status} {resp.body[:200]!r}"


def check_answer(resp, expected) -> None:
    if isinstance(expected, int):
        assert_problem(resp, expected)
    else:
        assert (resp.status, resp.body) == (200, expected.encode()), \
            f"expected the upstream's answer to {expected}, got {resp.status} {resp.body[:200]!r}"


def incomplete_connections_closed(upstream: RawUpstream) -> bool:
    for c in upstream.snapshot():
        messages = c.requests()
        if messages and not messages[-1].complete and not c.eof:
            return False
    return True


def stop_relay_and_drain(relay, upstream: RawUpstream) -> None:
    code = relay.stop()
    assert code == 0, f"relay exited with {code} on SIGTERM"
    upstream.drain(scaled(IO_TIMEOUT))


def judge_upstream(upstream: RawUpstream, expected: Up) -> None:
    complete, incomplete = [], []
    for c in upstream.snapshot():
        for m in c.requests():
            if m.complete and m.target in CONTROL_TARGETS:
                continue
            (complete if m.complete else incomplete).append(m)
    received = "\n".join(f"  connection {c.index}: {bytes(c.data)!r}" for c in upstream.snapshot())
    for m in complete:
        assert not m.problems, f"the upstream received an ambiguous or malformed message: {m.problems}\n{received}"
    got = [(m.start_line.decode("latin-1"), m.framing, m.body) for m in complete]
    want = [(f.line, f.framing, f.body) for f in expected.requests]
    assert got == want, f"the upstream received other complete requests than expected\n{received}"
    for m, f in zip(complete, expected.requests):
        for name, values in f.headers:
            assert tuple(m.values(name)) == tuple(values), f"{name}: {m.values(name)} in {m.start_line!r}\n{received}"
        if f.trailers is not None:
            assert tuple(k for k, _ in m.trailers) == f.trailers, f"trailers {m.trailers}\n{received}"
    if expected.partial is None:
        assert not incomplete, f"the upstream received the start of a request that never completed\n{received}"
    for m in incomplete:
        assert m.start_line.decode("latin-1") == expected.partial, f"unexpected partial request\n{received}"
        assert set(m.problems) <= {"incomplete head"}, f"{m.problems}\n{received}"


@pytest.mark.parametrize("case", REQUEST_ROWS)
def test_request(start_relay, raw_upstream, case: Case):
    upstream = raw_upstream()
    relay = start_relay(request_routes(upstream), limits=LIMITS)
    warm(relay)
    with relay.connect(timeout=IO_TIMEOUT) as conn:
        play_request_row(case, conn, relay, upstream)


def play_request_row(case: Case, conn, relay, upstream) -> None:
    """Sends `case`'s bytes on `conn` (a connection to `relay`, plain or through the forward
    proxy's interception), checks the answers and whether the connection stays usable, then
    what reached `upstream` once the relay has stopped."""
    conn.send(case.raw)
    if case.half_close:
        conn.sock.shutdown(1)  # SHUT_WR
    for expected in case.answers:
        check_answer(conn.read_final_response(), expected)
    if case.close:
        assert_closed(conn)
    else:
        probe(conn)
    if case.up.partial is not None:
        # The relay closes an upstream connection that carries part of a request it rejected.
        wait_until(lambda: incomplete_connections_closed(upstream), IO_TIMEOUT,
                   "the relay to close the upstream connection holding the incomplete request")
    stop_relay_and_drain(relay, upstream)
    judge_upstream(upstream, case.up)


# ---------------------------------------------------------------------------------------------
# Response rows.

@dataclass(frozen=True)
class Problem502:
    pass


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes = b""
    trailers: tuple | None = None    # names, in order
    interim: tuple = ()              # statuses of the 1xx responses relayed before it
    headers: tuple = ()              # (name, (value, ...))


@dataclass(frozen=True)
class Truncated:
    """Part of a response, then the close: the client cannot take it for complete."""


@dataclass(frozen=True)
class RCase:
    script: bytes
    client: object                 # Problem502 | Answer | Truncated
    upstream_closed: bool = True   # the relay closes (never reuses) the scripted upstream connection
    method: str = "GET"
    close_after_script: bool = False
    limits: dict = field(default_factory=dict)


def rrow(id_: str, case: RCase, defect: str | None = None):
    return row(id_, case, defect)


def resp(*lines, body: bytes = b"", status: bytes = b"HTTP/1.1 200 OK") -> bytes:
    return b"\r\n".join([status] + [_b(x) for x in lines]) + b"\r\n\r\n" + body


BAD = Problem502()
SMUGGLED_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled"

RESPONSE_ROWS = [
    # Content-Length.
    rrow("cl-duplicate-identical", RCase(resp("Content-Length: 5", "Content-Length: 5", body=b"hello"), BAD)),
    rrow("cl-conflicting", RCase(resp("Content-Length: 5", "Content-Length: 6", body=b"hello!"), BAD)),
    rrow("cl-list", RCase(resp("Content-Length: 5, 5", body=b"hello"), BAD)),
    rrow("cl-plus-sign", RCase(resp("Content-Length: +5", body=b"hello"), BAD)),
    rrow("cl-hex", RCase(resp("Content-Length: 0x5", body=b"hello"), BAD)),
    rrow("cl-negative", RCase(resp("Content-Length: -1", body=b"hello"), BAD)),
    rrow("cl-overflow", RCase(resp("Content-Length: 99999999999999999999", body=b"hello"), BAD)),
    rrow("cl-inner-space", RCase(resp("Content-Length: 5 5", body=b"hello"), BAD)),
    rrow("cl-space-before-colon", RCase(resp("Content-Length : 5", body=b"hello"), BAD)),
    rrow("te-before-cl", RCase(resp("Transfer-Encoding: chunked", "Content-Length: 5", body=CH_HELLO), BAD)),
    rrow("cl-named-in-connection", RCase(resp("Connection: Content-Length", "Content-Length: 5", body=b"hello"), BAD)),
    rrow("body-short-of-cl-then-close", RCase(resp("Content-Length: 10", body=b"hello"), Truncated(),
                                              close_after_script=True)),
    # In the read that carried the response: it is still held, so a 502 (when the extra bytes
    # come in a later read, the response is out; that upstream connection is dropped, see
    # test_bytes_past_content_length_never_answer_a_later_request).
    rrow("body-past-cl", RCase(resp("Content-Length: 5", body=b"hello world"), BAD)),
    # Transfer-Encoding.
    rrow("te-chunked-then-gzip", RCase(resp("Transfer-Encoding: chunked, gzip", body=b"\x1f\x8b not really gzip"), BAD,
                                       close_after_script=True)),
    rrow("te-gzip-then-chunked", RCase(resp("Transfer-Encoding: gzip, chunked", body=CH_HELLO), BAD)),
    rrow("te-xchunked-with-cl", RCase(resp("Transfer-Encoding: xchunked", "Content-Length: 5", body=b"hello"), BAD)),
    rrow("te-vtab-before-chunked", RCase(resp(b"Transfer-Encoding: \x0bchunked", body=CH_HELLO), BAD,
                                         close_after_script=True)),
    rrow("te-empty-with-cl", RCase(resp("Transfer-Encoding:", "Content-Length: 5", body=b"hello"), BAD)),
    # An empty Transfer-Encoding lists no coding at all (RFC 9112 §6.1 needs one): refused rather
    # than guessed at.
    rrow("te-empty-is-refused", RCase(resp("Transfer-Encoding:", body=CH_HELLO), BAD, close_after_script=True)),
    rrow("cl-on-a-folded-line", RCase(resp("Content-Length:", " 5", body=b"hello"), BAD)),
    rrow("te-chunked-twice", RCase(resp("Transfer-Encoding: chunked, chunked", body=CH_HELLO), BAD)),
    rrow("te-in-http10-response", RCase(resp("Transfer-Encoding: chunked", body=CH_HELLO, status=b"HTTP/1.0 200 OK"), BAD)),
    # Chunks.
    rrow("chunk-size-overflow", RCase(resp("Transfer-Encoding: chunked", body=b"10000000000000000\r\nhello\r\n0\r\n\r\n"), BAD)),
    rrow("chunk-size-0x", RCase(resp("Transfer-Encoding: chunked", body=b"0x5\r\nhello\r\n0\r\n\r\n"), BAD)),
    rrow("chunk-size-bare-lf", RCase(resp("Transfer-Encoding: chunked", body=b"5\nhello\r\n0\r\n\r\n"), BAD)),
    rrow("chunk-data-without-crlf", RCase(resp("Transfer-Encoding: chunked", body=b"5\r\nhello0\r\n\r\n"), BAD)),
    rrow("chunked-cut-before-last-chunk", RCase(resp("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n"), Truncated(),
                                                close_after_script=True)),
    rrow("chunked-with-trailers", RCase(
        resp("Transfer-Encoding: chunked", "Trailer: X-Checksum",
             body=b"5\r\nhello\r\n0\r\nX-Checksum: abc\r\nConnection: close\r\nX-Other: 1\r\n\r\n"),
        Answer(200, b"hello", trailers=("X-Checksum", "X-Other")), upstream_closed=False)),
    # A framing field among the trailers ends the response cut off (its body already went out).
    rrow("te-in-trailers", RCase(
        resp("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\nX-Checksum: abc\r\nTransfer-Encoding: chunked\r\n\r\n"),
        BAD)),
    rrow("content-length-trailer", RCase(
        resp("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\nX-Checksum: abc\r\nContent-Length: 99\r\n\r\n"),
        BAD)),
    rrow("trailer-obs-fold", RCase(resp("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\nX-T: a\r\n b\r\n\r\n"),
                                   BAD)),
    rrow("trailer-nul", RCase(resp("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\nX-T: a\x00b\r\n\r\n"),
                              BAD)),
    # Responses without a body that come with one.
    # In the read that carried the head they are bytes past its end: the held response becomes a
    # 502 (had they come later, the head would be out and the connection dropped).
    rrow("head-answered-with-a-body", RCase(resp("Content-Length: 5", body=SMUGGLED_RESPONSE), BAD, method="HEAD")),
    rrow("204-with-a-body", RCase(resp("Content-Length: 5", body=b"hello", status=b"HTTP/1.1 204 No Content"), BAD)),
    rrow("304-with-a-chunked-body", RCase(resp("Transfer-Encoding: chunked", body=CH_HELLO,
                                               status=b"HTTP/1.1 304 Not Modified"), BAD)),
    # Interim responses.
    rrow("two-interim-responses", RCase(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
                                        b"HTTP/1.1 100 Continue\r\n\r\n" + resp("Content-Length: 5", body=b"hello"),
                                        Answer(200, b"hello", interim=(103, 100)), upstream_closed=False)),
    rrow("interim-flood", RCase(b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" * 1000
                                + resp("Content-Length: 5", body=b"hello"), BAD)),
    rrow("interim-with-a-body", RCase(resp("Content-Length: 5", body=b"hello", status=b"HTTP/1.1 100 Continue")
                                      + resp("Content-Length: 2", body=b"ok"), BAD)),
    # Heads.
    rrow("head-over-max-response-header-bytes", RCase(resp("X-Big: " + "a" * 8000, "Content-Length: 5", body=b"hello"), BAD,
                                                      limits={"maxResponseHeaderBytes": 4096})),
    # The request limit does not apply to responses: a large Set-Cookie block is fine.
    rrow("response-head-over-the-request-limit", RCase(resp("X-Big: " + "a" * 8000, "Content-Length: 5", body=b"hello"),
                                                       Answer(200, b"hello"), upstream_closed=False,
                                                       limits={"maxHeaderBytes": 4096})),
    rrow("more-fields-than-max-header-count", RCase(resp(*[f"X-F{i}: v" for i in range(101)], "Content-Length: 5",
                                                         body=b"hello"), BAD)),
    rrow("bare-lf-in-head", RCase(b"HTTP/1.1 200 OK\nContent-Length: 5\n\nhello", BAD)),
    rrow("head-ends-bare-lf", RCase(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\nhello", BAD)),
    rrow("chunked-body-ends-bare-lf", RCase(resp("Transfer-Encoding: chunked", body=b"5\r\nhello\r\n0\r\n\n"), BAD)),
    rrow("obs-fold", RCase(resp("X-A: a", " b", "Content-Length: 5", body=b"hello"), BAD)),
    rrow("nul-in-value", RCase(resp(b"X-A: a\x00b", "Content-Length: 5", body=b"hello"), BAD)),
    rrow("bare-cr-in-value", RCase(resp(b"X-A: a\rb", "Content-Length: 5", body=b"hello"), BAD)),
    rrow("two-digit-status", RCase(resp("Content-Length: 5", body=b"hello", status=b"HTTP/1.1 20 OK"), BAD)),
    rrow("status-below-100", RCase(resp("Content-Length: 5", body=b"hello", status=b"HTTP/1.1 099 X"), BAD)),
    rrow("four-digit-status", RCase(resp("Content-Length: 5", body=b"hello", status=b"HTTP/1.1 2000 OK"), BAD)),
    rrow("no-status-line", RCase(b"hello world\r\n\r\n", BAD, close_after_script=True)),
]


# ---------------------------------------------------------------------------------------------
# Running a response row.

def read_relayed_response(conn: RawConnection, method: str):
    """The next response, after checking that the client can find its end from the head alone:
    a response that may have a body carries exactly one Content-Length or `chunked`."""
    head = conn.read_until(b"\r\n\r\n")
    conn.buf[:0] = head
    lines = head[:-4].split(b"\r\n")
    status = int(lines[0].split(b" ")[1])
    fields = [line.partition(b":") for line in lines[1:]]
    lengths = [v.strip() for k, _, v in fields if k.strip().lower() == b"content-length"]
    codings = [v.strip().lower() for k, _, v in fields if k.strip().lower() == b"transfer-encoding"]
    if not (100 <= status < 200 or status in (204, 304) or method == "HEAD"):
        assert (len(lengths), codings) in ((1, []), (0, [b"chunked"])), f"a response the client cannot delimit: {head!r}"
    try:
        return conn.read_response(method)
    except ValueError as e:  # a chunk-size line that is not hexadecimal
        raise AssertionError(f"the client got malformed chunked framing ({e}); so far: {head!r}") from None


@pytest.mark.parametrize("case", RESPONSE_ROWS)
def test_response(start_relay, raw_upstream, case: RCase):
    upstream = raw_upstream(script=case.script, close_after_script=case.close_after_script)
    relay = start_relay([route(upstream.url, "/", name="raw")], limits={**LIMITS, **case.limits})
    with relay.connect(timeout=IO_TIMEOUT) as conn:
        conn.send(rq(f"{case.method} /scripted HTTP/1.1"))
        if isinstance(case.client, Truncated):
            with pytest.raises(ConnectionClosed):
                got = conn.read_final_response(case.method)
                pytest.fail(f"a truncated upstream response reached the client looking complete: "
                            f"{got.status} {got.headers} {got.body[:200]!r} {got.trailers}")
        else:
            interim = []
            while True:
                got = read_relayed_response(conn, case.method)
                if not 100 <= got.status < 200:
                    break
                interim.append(got.status)
            if isinstance(case.client, Problem502) and case.method == "HEAD":
                # The problem's head alone: a response to HEAD has no body.
                assert (got.status, got.body) == (502, b""), f"{got.status} {got.body[:200]!r}"
            elif isinstance(case.client, Problem502):
                assert_problem(got, 502)
            else:
                assert (got.status, got.body) == (case.client.status, case.client.body), \
                    f"{got.status} {got.headers} {got.body[:200]!r}"
                assert tuple(interim) == case.client.interim, interim
                if case.client.trailers is not None:
                    assert tuple(k for k, _ in got.trailers) == case.client.trailers, got.trailers
                for name, values in case.client.headers:
                    assert tuple(got.header_all(name)) == values, got.headers
            probe(conn)
    scripted = upstream.snapshot()[0]
    if case.upstream_closed:
        wait_until(lambda: scripted.eof, IO_TIMEOUT, "the relay to close the upstream connection that misbehaved")
    elif not isinstance(case.client, Truncated):
        assert not scripted.eof and scripted.answered == 2, \
            f"a well-framed response should leave its connection pooled: answered {scripted.answered}, eof {scripted.eof}"
    stop_relay_and_drain(relay, upstream)
    assert [m.target for m in scripted.requests()] == [b"/scripted"] + ([] if case.upstream_closed else [b"/probe"]), \
        f"requests on the scripted connection: {bytes(scripted.data)!r}"
    requests = [m for c in upstream.snapshot() for m in c.requests()]
    assert all(m.complete and not m.problems for m in requests), [(m.start_line, m.problems) for m in requests]


def test_bytes_past_content_length_never_answer_a_later_request(start_relay, raw_upstream):
    """Whatever the client is told about a response with bytes past its Content-Length (the
    `body-past-cl` row), those bytes, here a complete response, must not become the answer to
    the client's next request: that upstream connection is closed, never pooled."""
    upstream = raw_upstream(script=resp("Content-Length: 5", body=b"hello" + SMUGGLED_RESPONSE))
    relay = start_relay([route(upstream.url, "/", name="raw")], limits=LIMITS)
    with relay.connect(timeout=IO_TIMEOUT) as conn:
        conn.send(rq("GET /scripted HTTP/1.1"))
        first = read_relayed_response(conn, "GET")
        assert first.body != b"hello" + SMUGGLED_RESPONSE
        probe(conn)
    scripted = upstream.snapshot()[0]
    wait_until(lambda: scripted.eof, IO_TIMEOUT, "the relay to close the upstream connection that sent too much")
    stop_relay_and_drain(relay, upstream)
    assert [m.target for m in scripted.requests()] == [b"/scripted"]


def test_connection_listed_content_length_cannot_smuggle_into_another_clients_request(start_relay, raw_upstream):
    """The attack behind the `cl-named-in-connection` row: had the relay dropped Content-Length as
    hop-by-hop and forwarded the body, it would stay on the pooled upstream connection and prefix
    the next client's request, which would get the answer to the attacker's request (and lend it
    its own headers, the injected token among them). The attacker gets a 400; nothing of its
    request reaches the upstream, and the victim gets its own answer."""
    upstream = raw_upstream()
    relay = start_relay([route(upstream.url, "/", name="any")], limits=LIMITS)
    smuggled = b"GET /smuggled HTTP/1.1\r\nX-Ignore: "
    with relay.connect(timeout=IO_TIMEOUT) as attacker:
        attacker.send(rq("POST /attacker HTTP/1.1", "Connection: Content-Length", f"Content-Length: {len(smuggled)}",
                         body=smuggled))
        assert_problem(attacker.read_final_response(), 400)
    with relay.connect(timeout=IO_TIMEOUT) as victim:
        victim.send(rq("GET /victim HTTP/1.1"))
        check_answer(victim.read_final_response(), "/victim")
    stop_relay_and_drain(relay, upstream)
    judge_upstream(upstream, fwd(Fwd("GET /victim HTTP/1.1")))
