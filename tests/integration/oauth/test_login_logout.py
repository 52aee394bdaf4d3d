"""Logging out and restarting (issue 11) with the real relay and django-oauth-toolkit: `DELETE
/identities/NAME/token` and `oauth-relay logout` (through a running relay, or alone on the token
store) forget the person's tokens in memory and in the store and revoke the refresh token at DOT
(RFC 7009), after which DOT refuses the person's token; a restarted relay keeps the login (the
default store or a configured one) and asks DOT nothing while the token is valid.
"""

from __future__ import annotations

import base64

import pytest

from admin_client import wait_for_log
from browser import start_chromium
from deadlines import wait_until
from idp_processes import sha256
from idp_relay import bearer, oauth_route
from http_client import assert_problem
from login_relay import (DOT_LOGIN_CLIENTS, LOGIN_REQUIRED, approved_token, callback_url, echoed_bearer, get,
                         identity_view, log_in_at_dot, start_login_relay, store_entries)
from processes import run_cli

pytestmark = pytest.mark.oauth

STORE_KEY = base64.b64encode(bytes(range(32, 64))).decode()


def login_relay(start_relay, upstream, idp, name: str, **top):
    routes = [oauth_route(upstream, "/", name), oauth_route(idp, "/api/", name)]
    relay, admin = start_login_relay(start_relay, upstream, {name: idp.identity(DOT_LOGIN_CLIENTS[name])}, routes=routes, **top)
    if name == "me":
        idp.set_redirect_uris(DOT_LOGIN_CLIENTS[name], [callback_url(relay)])
    return relay, admin


def log_in(relay, idp, name: str, tmp_path, sensitive) -> str:
    """The person logs in (a device code approved at DOT, or a browser login at DOT's form);
    returns the token the route then carries."""
    if name == "tv":
        code = assert_problem(get(relay, "/x"), 401)["userCode"]
        assert idp.approve_device(code) == "authorized"
        return approved_token(relay)
    driver = start_chromium(tmp_path / f"chromium-{len(list(tmp_path.glob('chromium-*')))}")
    try:
        driver.get(relay.url + "/x")
        log_in_at_dot(driver, idp, sensitive, relay.url)
        return echoed_bearer(driver)
    finally:
        driver.quit()


def last_refresh_token_sha(idp) -> str:
    return [r for r in idp.token_requests() if r["status"] == 200][-1]["issued_refresh_token_sha256"]


def assert_logged_out(idp, admin, name: str, token: str, refresh_sha: str, tmp_path) -> None:
    [revocation] = idp.revocations()
    assert (revocation["token_sha256"], revocation["token_type_hint"], revocation["status"]) == (
        refresh_sha, "refresh_token", 200)
    assert revocation["client_id"] == idp.clients[DOT_LOGIN_CLIENTS[name]].client_id
    assert idp.whoami(token).status == 401, "DOT still accepts the person's token after the revocation"
    view = identity_view(admin, name)
    assert view["state"] == "needs-login" and "loggedInAs" not in view and not view["hasRefreshToken"], view
    assert store_entries(tmp_path) == [], "the store still holds the login"


@pytest.mark.parametrize("name", ["tv", "me"])
def test_delete_token_forgets_the_login_and_revokes_the_refresh_token(django_idp, upstream, start_relay, tmp_path,
                                                                      sensitive, name):
    relay, admin = login_relay(start_relay, upstream, django_idp, name)
    token = log_in(relay, django_idp, name, tmp_path, sensitive)
    assert store_entries(tmp_path) == [f"identity-{name}.token"]
    refresh_sha = last_refresh_token_sha(django_idp)
    assert admin.request("DELETE", f"/identities/{name}/token").status == 204
    wait_until(lambda: django_idp.revocations(), 5, "the revocation at DOT")
    assert_logged_out(django_idp, admin, name, token, refresh_sha, tmp_path)
    after = get(relay, "/x")
    doc = assert_problem(after, 401)
    assert doc["type"] == LOGIN_REQUIRED
    if name == "tv":  # a new device login starts, with a new code
        assert len(django_idp.device_authorizations()) == 2 and doc["userCode"] != django_idp.device_authorizations()[0]["user_code"]
    # The relay logs the revocation once DOT's answer reached it, which may be after DOT recorded it.
    wait_for_log(relay, "refresh token revoked", 1)


def test_logout_command_through_the_running_relay(django_idp, upstream, start_relay, tmp_path, sensitive):
    relay, admin = login_relay(start_relay, upstream, django_idp, "tv")
    token = log_in(relay, django_idp, "tv", tmp_path, sensitive)
    refresh_sha = last_refresh_token_sha(django_idp)
    done = run_cli("logout", "--config", str(relay.config_path), "tv")
    sensitive.add_output("oauth-relay logout", done.stdout + done.stderr)
    assert done.returncode == 0, done.stderr
    assert "Logged out of identity tv." in done.stderr
    wait_until(lambda: django_idp.revocations(), 5, "the revocation at DOT")
    assert_logged_out(django_idp, admin, "tv", token, refresh_sha, tmp_path)


def test_logout_command_without_a_running_relay_revokes_from_the_store(django_idp, upstream, start_relay, tmp_path, sensitive):
    relay, admin = login_relay(start_relay, upstream, django_idp, "tv")
    token = log_in(relay, django_idp, "tv", tmp_path, sensitive)
    refresh_sha = last_refresh_token_sha(django_idp)
    assert relay.stop() == 0
    done = run_cli("logout", "--config", str(relay.config_path), "tv")
    sensitive.add_output("oauth-relay logout", done.stdout + done.stderr)
    assert done.returncode == 0, done.stderr
    assert "Logged out of identity tv (refresh token revoked)." in done.stderr
    [revocation] = django_idp.revocations()
    assert (revocation["token_sha256"], revocation["status"]) == (refresh_sha, 200)
    assert django_idp.whoami(token).status == 401
    assert store_entries(tmp_path) == []
    # A relay started afterwards knows no login and asks DOT for nothing.
    asked = len(django_idp.token_requests())
    again, admin = login_relay(start_relay, upstream, django_idp, "tv")
    assert identity_view(admin, "tv")["state"] == "needs-login"
    assert len(django_idp.token_requests()) == asked


@pytest.mark.parametrize("store", ["default", "configured"])
def test_a_restart_keeps_a_device_login_and_asks_dot_nothing(django_idp, upstream, start_relay, tmp_path, sensitive, store):
    top = {} if store == "default" else {"store": {"path": str(tmp_path / "token-store"), "key": STORE_KEY}}
    relay, _ = login_relay(start_relay, upstream, django_idp, "tv", **top)
    token = log_in(relay, django_idp, "tv", tmp_path, sensitive)
    assert store_entries(tmp_path, store) == ["identity-tv.token"]
    assert relay.stop() == 0
    asked = (len(django_idp.token_requests()), len(django_idp.device_authorizations()))
    again, admin = login_relay(start_relay, upstream, django_idp, "tv", **top)
    assert sha256(bearer(get(again, "/x"))) == sha256(token)
    assert get(again, "/api/whoami").json()["user"] == django_idp.person.username
    assert identity_view(admin, "tv")["state"] == "valid"
    assert (len(django_idp.token_requests()), len(django_idp.device_authorizations())) == asked, "the restarted relay asked DOT"


def test_a_restart_keeps_a_browser_login_and_who_logged_in(django_idp, upstream, start_relay, tmp_path, sensitive):
    relay, _ = login_relay(start_relay, upstream, django_idp, "me")
    token = log_in(relay, django_idp, "me", tmp_path, sensitive)
    assert relay.stop() == 0
    asked = (len(django_idp.token_requests()), len(django_idp.authorizations()))
    again, admin = login_relay(start_relay, upstream, django_idp, "me")
    assert sha256(bearer(get(again, "/x"))) == sha256(token)
    view = identity_view(admin, "me")
    assert (view["state"], view["loggedInAs"]) == ("valid", django_idp.person.username)
    assert (len(django_idp.token_requests()), len(django_idp.authorizations())) == asked, "the restarted relay asked DOT"
