"""The relay side of the TLS tests: https routes to the nginx fixture, what nginx saw, and the
checks on the relay's 502 for a refused TLS connection.

Keywords a problem's `detail` must contain (case-insensitive, any one of them) per cause, as the
relay's contract states them.
"""

from __future__ import annotations

import re

from http_client import Response, assert_problem
from processes import route

UNKNOWN_CA = ("unknown ca", "self-signed", "self signed", "unable to get local issuer", "certificate verify")
WRONG_NAME = ("name", "hostname")
EXPIRED = ("expired",)
PIN = ("pin",)
TIMEOUT = ("timeout", "timed out")

# Text that only a leak of key material would put in a problem body.
_KEY_MARKERS = re.compile(r"PRIVATE KEY|BEGIN CERTIFICATE|-----BEGIN", re.IGNORECASE)


def tls_route(upstream, prefix: str = "/", name: str = "tls", host: str | None = None,
              base: str = "", **tls) -> dict:
    """A route named `name` to `upstream` (an NginxTLS, whose 127.0.0.1 URL is used, or a URL),
    with the given `tls` block (none when no option is given)."""
    url = upstream if isinstance(upstream, str) else upstream.url()
    options = {"name": name}
    if tls:
        options["tls"] = {k: (str(v) if hasattr(v, "__fspath__") else v) for k, v in tls.items()}
    return route(url, prefix, host=host, base=base, **options)


def nginx_saw(resp: Response) -> dict:
    """What nginx reported about the request the relay forwarded (its JSON answer)."""
    assert resp.status == 200, f"expected nginx's 200, got {resp.status}: {resp.body[:600]!r}"
    assert (resp.header("content-type") or "").startswith("application/json"), resp.headers
    doc = resp.json()
    assert "ssl_protocol" in doc, f"not nginx's report: {doc}"
    return doc


def assert_tls_problem(resp: Response, keywords: tuple[str, ...], route_name: str = "tls") -> dict:
    """The relay's problem+json for a TLS failure: 502, the route, a `detail` naming the cause
    (one of `keywords`), and no key material."""
    doc = assert_problem(resp, 502, route=route_name)
    detail = doc["detail"].lower()
    assert any(k in detail for k in keywords), f"detail {doc['detail']!r} names none of {keywords}"
    assert not _KEY_MARKERS.search(resp.body.decode("utf-8", "replace")), f"key material in the problem: {doc}"
    return doc
