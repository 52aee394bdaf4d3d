"""The relay side of the OAuth tests: routes with identities, a burst of concurrent requests, the
checks on the relay's OAuth problems, `oauth-relay token` on a config of its own, and the scan of
logs for secrets.
"""

from __future__ import annotations

import email.utils
import re
import time
from pathlib import Path

import pytest

from deadlines import TIME_SCALE, scaled
from http_client import RawConnection, Response, assert_problem, build_request
from processes import LOOPBACK, free_port, relay_config, route, run_cli, write_config


def token_timeout_limits(seconds: float) -> dict:
    """The `limits` that bound one token request's answer. CONFIG.md names no key for it; the
    relay uses the upstream response timeout (capped at 30 s) for token endpoints too."""
    return {"upstreamResponseTimeoutSeconds": seconds}


def oauth_route(upstream, prefix: str = "/", identity: str | None = None, **options) -> dict:
    """A route to `upstream` (an EchoUpstream, an IdP or a URL) that injects `identity`'s token."""
    if identity is not None:
        options["identity"] = identity
    return route(upstream, prefix, **options)


def token_command_config(path: Path, upstream, identities: dict, **top) -> Path:
    """Writes a config for `oauth-relay token` to `path`: `identities` (a route to `upstream` for the
    first) and `top` (its `store`), listening on a free port it never binds; returns `path`."""
    routes = [oauth_route(upstream, "/", next(iter(identities)))]
    return write_config(path, relay_config(f"{LOOPBACK}:{free_port()}", routes, identities=identities, **top))


def run_token_command(config_path: Path, identity: str, sensitive):
    """`oauth-relay token --config PATH IDENTITY`, its stderr added to the leak scan; the completed
    process (the token on stdout)."""
    result = run_cli("token", "--config", str(config_path), identity)
    sensitive.add_output(f"stderr of oauth-relay token ({len(sensitive.outputs)})", result.stderr)
    return result


def received(resp: Response, name: str = "Authorization") -> list[str]:
    """The values of header `name` the echo upstream received (through the relay)."""
    assert resp.status == 200, f"expected the echo's 200, got {resp.status}: {resp.body[:400]!r}"
    return resp.echo_headers(name)


def bearer(resp: Response) -> str:
    """The token the relay injected into a request the echo upstream answered."""
    received(resp, "Authorization")  # the echo's 200
    return bearer_in_echo(resp.json())


def bearer_in_echo(echo: dict) -> str:
    """The token of the one `Authorization: Bearer` in what the echo upstream reports it received
    (its JSON answer, read by a test or by a page)."""
    values = [v for k, v in echo["headers"] if k.lower() == "authorization"]
    assert len(values) == 1, f"the upstream received {len(values)} Authorization headers for {echo['method']} {echo['target']}"
    scheme, _, token = values[0].partition(" ")
    assert scheme == "Bearer" and token, f"Authorization is not 'Bearer <token>': scheme {scheme!r}"
    return token


def burst(relay, n: int, target: str, headers=(), timeout: float = 20) -> list[Response]:
    """n requests on n connections, all sent before any answer is read (so all are in the relay
    at once); returns the answers in order. One deadline (`timeout`, scaled) for all of them."""
    deadline = time.monotonic() + scaled(timeout)
    conns: list[RawConnection] = []
    try:
        for _ in range(n):
            conns.append(RawConnection(relay.host, relay.port, timeout=timeout))
        payload = build_request("GET", target, [*headers, ("Connection", "close")])
        for conn in conns:
            conn.send(payload)
        answers = []
        for conn in conns:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"{len(answers)} of {n} answers within {scaled(timeout):.0f}s")
            answers.append(conn.read_final_response(timeout=remaining / TIME_SCALE))
        return answers
    finally:
        for conn in conns:
            conn.close()


def retry_after_seconds(resp: Response) -> float:
    """The Retry-After of a response in seconds (delta-seconds or an HTTP-date); fails without one."""
    value = resp.header("retry-after")
    assert value is not None, f"{resp.status} without Retry-After"
    if re.fullmatch(r"\d+", value.strip()):
        return float(value)
    date = email.utils.parsedate_to_datetime(value)
    assert date is not None, f"Retry-After {value!r} is neither delta-seconds nor an HTTP-date"
    return date.timestamp() - time.time()


def assert_oauth_problem(resp: Response, status: int, identity: str | None = None,
                         oauth_error: str | None = None) -> dict:
    """A problem+json from the relay about an identity's token; 503s carry Retry-After."""
    doc = assert_problem(resp, status)
    if identity is not None:
        assert doc.get("identity") == identity, f"problem identity {doc.get('identity')!r}, expected {identity!r}: {doc}"
    if oauth_error is not None:
        assert doc.get("oauthError") == oauth_error, f"problem oauthError {doc.get('oauthError')!r}: {doc}"
    if status == 503:
        assert retry_after_seconds(resp) >= 0, "Retry-After in the past"
    return doc


# ---------------------------------------------------------------------------------------------
# Secrets in logs.

LEAK_WINDOW = 8  # no 8 consecutive characters of a secret may show (redaction keeps at most 4)


class SensitiveValues:
    """What must never reach a relay log (or `check` output, or a problem body): the secrets a
    test configured, and the tokens its IdPs issued (asked from each source when checked)."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.sources: list = []
        self.outputs: dict[str, str] = {}

    def add(self, label: str, value: str) -> str:
        self.values[label] = value
        return value

    def add_source(self, source) -> None:
        """`source()` returns {label: value}; it is called when the logs are checked."""
        self.sources.append(source)

    def add_output(self, label: str, text: str | bytes) -> None:
        """Output besides the relay logs to check (CLI stderr, a problem body)."""
        self.outputs[label] = text.decode("utf-8", "replace") if isinstance(text, bytes) else text

    def collect(self) -> dict[str, str]:
        values = dict(self.values)
        for source in self.sources:
            values.update(source())
        return {k: v for k, v in values.items() if v and len(v) >= LEAK_WINDOW}


def find_leaks(texts: dict[str, str], values: dict[str, str]) -> list[str]:
    """Where a value, or LEAK_WINDOW consecutive characters of it, occur in the texts. The
    report names the value and the place, never the value itself."""
    leaks = []
    for label, value in values.items():
        pieces = {value}
        if "." not in value:  # JWTs share their header: only the whole token counts
            pieces |= {value[i:i + LEAK_WINDOW] for i in range(len(value) - LEAK_WINDOW + 1)}
        for where, text in texts.items():
            if value in text:
                hit, what = value, "the whole value"
            else:
                hit = next((p for p in pieces if p in text), None)
                what = f"{LEAK_WINDOW} consecutive characters"
            if hit is not None:
                line = text[:text.index(hit)].count("\n") + 1
                leaks.append(f"{label}: {what} in {where}, line {line}")
    return leaks


def relay_logs(tmp_path: Path) -> dict[str, str]:
    """The stderr of every relay a test started (start_relay writes tmp_path/relay-N/relay.stderr)."""
    return {str(p.relative_to(tmp_path)): p.read_text(errors="replace")
            for p in sorted(tmp_path.glob("relay-*/relay.stderr"))}
