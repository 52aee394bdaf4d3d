"""`oauth-relay login --force` switches the person of a device_code identity already logged in
(issue 25), with the real binary, a running relay and django-oauth-toolkit: without `--force` the
command says the identity is logged in and exits at once, starting nothing; with it a new device
login starts while requests keep carrying the previous person's token, a login the person refuses
ends with exit 1 and leaves that token in use, another forced login while one goes on is refused
at once, and one approved by someone else replaces it.
"""

from __future__ import annotations

import pytest

from idp_relay import oauth_route
from login_relay import get, identity_view, start_login_relay
from test_login_cli import logins  # noqa: F401 (a fixture)

pytestmark = pytest.mark.oauth


def whoami(relay) -> str:
    """Whose token the relay's requests carry, as DOT says."""
    resp = get(relay, "/api/whoami")
    assert resp.status == 200, resp.status
    return resp.json()["user"]


def approve_as(idp, user_code: str, username: str, action: str = "accept") -> str:
    """`username` enters `user_code` at DOT's device page and accepts (or "deny")."""
    return idp.control("POST", "/_test/approve-device", {"user_code": user_code, "username": username, "action": action})["status"]


def test_login_force_switches_the_person_and_a_refused_one_keeps_the_last(django_idp, upstream, start_relay, logins):  # noqa: F811
    routes = [oauth_route(upstream, "/", "tv"), oauth_route(django_idp, "/api/", "tv")]
    relay, admin = start_login_relay(start_relay, upstream, {"tv": django_idp.identity("tv-device")}, routes=routes)
    person_a, person_b = django_idp.person.username, django_idp.username

    first = logins(relay.config_path, "tv", "--timeout", "30")
    assert approve_as(django_idp, first.line_after("enter the code"), person_a) == "authorized"
    assert first.exit_code() == 0, first.stderr
    assert whoami(relay) == person_a

    # Logged in: without --force the command says so at once and starts nothing.
    again = logins(relay.config_path, "tv", "--timeout", "30")
    assert again.exit_code(timeout=10) == 0, again.stderr
    assert "Logged in for identity tv." in again.stderr
    assert "enter the code" not in again.stderr
    assert len(django_idp.device_authorizations()) == 1

    # A forced login the person refuses: the previous person's token stays in use throughout.
    refused = logins(relay.config_path, "tv", "--force", "--timeout", "30")
    code = refused.line_after("enter the code")
    assert len(django_idp.device_authorizations()) == 2
    assert whoami(relay) == person_a, "the login under way took the previous token away"
    assert approve_as(django_idp, code, person_b, "deny") == "denied"
    assert refused.exit_code() == 1, refused.stderr
    assert "the login failed" in refused.stderr
    assert whoami(relay) == person_a
    assert identity_view(admin, "tv")["state"] == "valid"

    # A forced login approved by someone else: their token replaces the previous one.
    switched = logins(relay.config_path, "tv", "--force", "--timeout", "30")
    code = switched.line_after("enter the code")
    assert len(django_idp.device_authorizations()) == 3
    assert whoami(relay) == person_a
    # Another forced login while this one goes on is refused at once (HTTP 409), saying why.
    second = logins(relay.config_path, "tv", "--force", "--timeout", "30")
    assert second.exit_code(timeout=10) == 1, second.stderr
    assert "one is already under way" in second.stderr, second.stderr
    assert len(django_idp.device_authorizations()) == 3
    assert approve_as(django_idp, code, person_b) == "authorized"
    assert switched.exit_code() == 0, switched.stderr
    assert "Logged in for identity tv." in switched.stderr
    assert whoami(relay) == person_b


def test_login_force_of_a_browser_identity_is_refused_naming_its_login_page(django_idp, upstream, start_relay, logins):  # noqa: F811
    relay, admin = start_login_relay(start_relay, upstream, {"me": django_idp.identity("cli-code")})
    command = logins(relay.config_path, "me", "--force")
    assert command.exit_code(timeout=10) == 1
    assert "--force starts a device login" in command.stderr and "/.oauth-relay/login/me" in command.stderr
