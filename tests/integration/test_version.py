"""What the binary says it is: `oauth-relay --version`, the admin listener's `GET /version` and the
start-up log line name the same version (RelayVersion.swift's `number`, the one place it is written)
and the same commit (set at build time; "unknown" for a build that was not told). That the Makefile's
build names `git rev-parse HEAD` is proved by tests/dist/test_build_commit.py (`make test-dist`)."""

import re

from admin_client import log_records, start_with_admin
from processes import REPO, route, run_cli

VERSION_LINE = re.compile(r"oauth-relay (?P<version>\S+) \(commit (?P<commit>[0-9a-f]{7,64}|unknown)\)\n")


def source_version() -> str:
    text = (REPO / "Sources" / "OAuth2" / "RelayVersion.swift").read_text()
    [number] = re.findall(r'static let number = "([^"]+)"', text)
    return number


def version_flag() -> dict:
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    match = VERSION_LINE.fullmatch(result.stdout)
    assert match, f"--version printed {result.stdout!r}"
    return match.groupdict()


def test_version_flag_prints_the_source_version_and_the_build_commit():
    assert version_flag()["version"] == source_version()


def test_admin_version_answers_the_version_and_commit_as_json(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream)])
    resp = admin.request("GET", "/version")
    assert resp.status == 200, resp.body
    assert (resp.header("content-type") or "").split(";")[0].strip() == "application/json", resp.headers
    assert resp.json() == version_flag()


def test_admin_version_is_read_only(start_relay, upstream):
    relay, admin = start_with_admin(start_relay, [route(upstream)])
    resp = admin.request("POST", "/version")
    assert resp.status == 405, resp.body
    assert resp.header("allow") == "GET", resp.headers


def test_start_up_log_line_names_the_version_and_commit(start_relay, upstream):
    relay = start_relay([route(upstream)], args=("--log-format", "json", "--log-level", "info"))
    [listening] = log_records(relay, "listening")
    assert {"version": listening.get("version"), "commit": listening.get("commit")} == version_flag(), listening
