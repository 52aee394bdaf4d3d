"""`oauth-relay login` and `oauth-relay token` for a person's identity (issue 11), with the real
binary, django-oauth-toolkit and headless Chromium: through a running relay (its admin listener)
and alone (the command serves the configuration until the login ends, and the token store keeps
the result for the relay started afterwards, which then asks DOT nothing); a device login prints
the code, a browser login the URL; a login nobody completes times out with exit 1; `token`
prints the person's token from the store, or names the login to run.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

from browser import chromium  # noqa: F401 (a fixture)
from deadlines import scaled, wait_until
from idp_django_recorder import RECORDED_PATHS, TOKEN_PATH
from idp_processes import sha256
from idp_relay import bearer, oauth_route
from login_relay import CALLBACK_PATH, DOT_LOGIN_CLIENTS, get, identity_view, log_in_at_dot, start_login_relay
from processes import LOOPBACK, free_port, relay_config, require_relay_bin, run_cli

pytestmark = pytest.mark.oauth


class LoginCommand:
    """`oauth-relay login` running, its stderr read line by line as it comes."""

    def __init__(self, config_path, name: str, *args: str) -> None:
        self.proc = subprocess.Popen([str(require_relay_bin()), "login", "--config", str(config_path), "--no-browser", *args, name],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)

    def line_after(self, marker: str, timeout: float = 15) -> str:
        """The first non-empty line after the line containing `marker`."""
        def found():
            lines = list(self.lines)
            for i, line in enumerate(lines):
                if marker in line:
                    return next((later.strip() for later in lines[i + 1:] if later.strip()), None)
            return None
        try:
            return wait_until(found, timeout, f"{marker!r} and the line after it from oauth-relay login")
        except pytest.fail.Exception:
            self.proc.kill()
            pytest.fail(f"oauth-relay login printed no {marker!r}:\n{self.stderr}", pytrace=False)

    def exit_code(self, timeout: float = 20) -> int:
        try:
            code = self.proc.wait(timeout=scaled(timeout))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"oauth-relay login still running after {scaled(timeout):.0f}s:\n{self.stderr}", pytrace=False)
        self.reader.join(timeout=5)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def logins(sensitive):
    """Starts `oauth-relay login` commands; their output goes to the leak scan, and any still
    running at the end is killed."""
    started: list[LoginCommand] = []

    def start(config_path, name: str, *args: str) -> LoginCommand:
        command = LoginCommand(config_path, name, *args)
        started.append(command)
        return command

    yield start
    for i, command in enumerate(started):
        command.kill()
        sensitive.add_output(f"oauth-relay login #{i + 1}", command.stderr + (command.proc.stdout.read() or ""))


def standalone_config(tmp_path, idp, upstream, name: str, **identity) -> tuple:
    """A configuration whose relay is not running: its admin address answers nothing. Returns
    (path, config, listen URL)."""
    port = free_port()
    config = relay_config(f"{LOOPBACK}:{port}", [oauth_route(upstream, "/", name)],
                          identities={name: idp.identity(DOT_LOGIN_CLIENTS[name], **identity)}, admin=f"{LOOPBACK}:{free_port()}")
    path = tmp_path / "standalone.json"
    path.write_text(json.dumps(config, indent=2))
    return path, config, f"http://{LOOPBACK}:{port}"


def log_in_at_the_printed_url(command: LoginCommand, driver, idp, sensitive, relay_url: str) -> None:
    """The person opens the URL `oauth-relay login` printed (the login page on `relay_url`) and
    logs in at DOT; the browser ends on the relay's status page."""
    url = command.line_after("To log in for identity me, open:")
    assert url == f"{relay_url}/.oauth-relay/login/me"
    driver.get(url)
    log_in_at_dot(driver, idp, sensitive, relay_url)
    assert driver.current_url == f"{relay_url}/.oauth-relay/status/me"


def idp_log_lines(idp) -> list[str]:
    """What DOT was asked, by its access log, without the tests' own control and check requests."""
    return [line for line in idp.log().splitlines() if line.startswith(("GET ", "POST ")) and " /_test/" not in line
            and " /api/whoami" not in line]


def dot_requests(idp) -> list[str]:
    """`idp_log_lines` once the access log names every request DOT recorded at its token,
    authorization, device and revocation endpoints: DOT records a request before answering it but
    logs it after, so a client may have its answer (and exit) before the line is written."""
    recorded = {TOKEN_PATH: idp.token_requests, **{path: getattr(idp, name) for path, name in RECORDED_PATHS.items()}}

    def caught_up() -> bool:
        lines = idp_log_lines(idp)
        return all(sum(f" {path} " in line for line in lines) >= len(records()) for path, records in recorded.items())
    wait_until(caught_up, 5, "DOT's access log to name every request it recorded")
    return idp_log_lines(idp)


# ---------------------------------------------------------------------------------------------
# Through a running relay

def test_login_through_the_running_relay_prints_the_device_code_and_exits_0_once_approved(django_idp, upstream, start_relay,
                                                                                         logins):
    relay, admin = start_login_relay(start_relay, upstream, {"tv": django_idp.identity("tv-device")})
    command = logins(relay.config_path, "tv", "--timeout", "30")
    code = command.line_after("enter the code")
    [started] = django_idp.device_authorizations()
    assert code == started["user_code"]
    assert f"open {started['verification_uri']}" in command.stderr
    assert f"(or open {started['verification_uri_complete']})" in command.stderr
    assert django_idp.approve_device(code) == "authorized"
    assert command.exit_code() == 0, command.stderr
    assert "Logged in for identity tv." in command.stderr
    assert django_idp.whoami(bearer(get(relay, "/x"))).json()["user"] == django_idp.person.username


def test_login_through_the_running_relay_prints_the_url_and_exits_0_after_the_browser_login(django_idp, upstream, start_relay,
                                                                                           chromium, logins, sensitive):  # noqa: F811
    relay, admin = start_login_relay(start_relay, upstream, {"me": django_idp.identity("cli-code")})
    django_idp.set_redirect_uris("cli-code", [relay.url + CALLBACK_PATH])
    command = logins(relay.config_path, "me", "--timeout", "30")
    log_in_at_the_printed_url(command, chromium, django_idp, sensitive, relay.url)
    assert command.exit_code() == 0, command.stderr
    assert f"Logged in for identity me as {django_idp.person.username}." in command.stderr
    assert identity_view(admin, "me")["state"] == "valid"


def test_a_login_nobody_completes_times_out_with_exit_1(django_idp, upstream, start_relay, logins):
    relay, admin = start_login_relay(start_relay, upstream, {"tv": django_idp.identity("tv-device")})
    started = time.monotonic()
    command = logins(relay.config_path, "tv", "--timeout", "2")
    assert command.exit_code(timeout=10) == 1
    assert time.monotonic() - started < scaled(8)
    assert "the login did not complete in time" in command.stderr
    assert len(django_idp.device_authorizations()) == 1, "the login was not even started"


def test_login_of_an_identity_no_person_logs_in_to_is_refused(django_idp, upstream, start_relay, logins):
    relay, admin = start_login_relay(start_relay, upstream, {"orders": django_idp.identity("orders-cc")})
    command = logins(relay.config_path, "orders")
    assert command.exit_code() == 1
    assert 'identity "orders"' in command.stderr and "authorization_code or device_code" in command.stderr


# ---------------------------------------------------------------------------------------------
# Without a running relay

def test_login_without_a_relay_serves_the_device_login_and_the_relay_started_afterwards_asks_dot_nothing(
        django_idp, upstream, start_relay, tmp_path, logins):
    path, config, _ = standalone_config(tmp_path, django_idp, upstream, "tv", explicit_endpoints=True)
    command = logins(path, "tv", "--timeout", "30")
    code = command.line_after("enter the code")
    assert "no relay is running with this configuration" in command.stderr
    assert django_idp.approve_device(code) == "authorized"
    assert command.exit_code() == 0, command.stderr
    [issued] = django_idp.token_requests(status=200)
    asked = dot_requests(django_idp)

    relay, admin = start_login_relay(start_relay, upstream, config["identities"])
    token = bearer(get(relay, "/x"))
    assert sha256(token) == issued["access_token_sha256"]
    assert identity_view(admin, "tv")["state"] == "valid"
    assert dot_requests(django_idp) == asked, "the relay started after the login asked DOT"


def test_login_without_a_relay_serves_the_browser_login_then_token_prints_the_persons_token(
        django_idp, upstream, tmp_path, chromium, logins, sensitive):  # noqa: F811
    path, config, listen_url = standalone_config(tmp_path, django_idp, upstream, "me")
    django_idp.set_redirect_uris("cli-code", [listen_url + CALLBACK_PATH])
    before = run_cli("token", "--config", str(path), "me")
    sensitive.add_output("oauth-relay token before the login", before.stdout + before.stderr)
    assert (before.returncode, before.stdout) == (1, "")
    assert f"run oauth-relay login --config {path} me" in before.stderr
    assert f"open {listen_url}/.oauth-relay/login/me with the relay running" in before.stderr

    command = logins(path, "me", "--timeout", "30")
    log_in_at_the_printed_url(command, chromium, django_idp, sensitive, listen_url)
    assert command.exit_code() == 0, command.stderr

    printed = run_cli("token", "--config", str(path), "me")
    sensitive.add_output("stderr of oauth-relay token", printed.stderr)
    assert printed.returncode == 0, printed.stderr
    token = printed.stdout.strip()
    [exchange] = django_idp.token_requests(grant_type="authorization_code")
    assert sha256(token) == exchange["access_token_sha256"]
    assert django_idp.whoami(token).json()["user"] == django_idp.person.username
    assert len(django_idp.token_requests()) == 1, "oauth-relay token asked DOT although the stored token is valid"


def test_token_of_a_device_identity_not_logged_in_exits_1_and_starts_no_device_login(django_idp, upstream, tmp_path, sensitive):
    path, _, _ = standalone_config(tmp_path, django_idp, upstream, "tv")
    done = run_cli("token", "--config", str(path), "tv")
    sensitive.add_output("oauth-relay token", done.stdout + done.stderr)
    assert (done.returncode, done.stdout) == (1, "")
    assert f"identity tv needs a person to log in: run oauth-relay login --config {path} tv" in done.stderr
    assert django_idp.device_authorizations() == [], "oauth-relay token made DOT issue a device code nobody will enter"
