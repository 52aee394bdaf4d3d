"""Provider quirks as configuration (issue 23), end to end against the scripted stub IdP:

- `authorizationParams` reach the authorization request a login sends the browser to (the 302's
  Location, and the stub's authorization endpoint receives them), after the standard parameters,
  beside a query the configured `authorizationUrl` already has (a parameter of that query named
  like one of them gives way); the code exchange at the token endpoint carries none of them.
- A Slack-shaped token endpoint (oauth.v2.access): the code exchange answers the user token under
  `authed_user` with `token_type: "user"` beside a bot token at the top level, and a refresh
  answers at the top level. With `responseFields` naming the nested members first and
  `typeValues` mapping `user` to Bearer, the upstream receives `Authorization: Bearer <the user
  token>`, the refresh presents the user's refresh token (never the bot's), and the refreshed
  token goes upstream next.
The stub answers Slack's bodies as written here ("raw" specs) and records every request; the test
checks every field of the requests it received.
"""

from __future__ import annotations

import json
import secrets

import pytest

from deadlines import wait_until
from idp_processes import form
from idp_relay import bearer
from login_relay import RawBrowser, at_stub, get, start_login_relay, wait_for_state

pytestmark = pytest.mark.oauth

STANDARD = ["response_type", "client_id", "redirect_uri", "scope", "state", "nonce", "code_challenge", "code_challenge_method"]


def raw_json(payload: dict) -> dict:
    return {"kind": "raw", "status": 200, "content_type": "application/json; charset=utf-8", "body": json.dumps(payload)}


def test_authorization_params_reach_the_authorization_request_and_not_the_token_endpoint(stub_idp, upstream, start_relay,
                                                                                          sensitive):
    stub_idp.script(default={"kind": "token", "expires_in": 3600, "refresh_token": "new", "id_token": {}})
    identity = stub_idp.login_identity(authorizationParams={"access_type": "offline", "prompt": "consent"})
    relay, admin = start_login_relay(start_relay, upstream, {"me": identity})
    wait_for_state(admin, "me", "needs-login")
    browser = RawBrowser(relay, sensitive)
    login = browser.start_login("me")
    names = [name for name in login if name != "authorization_endpoint"]
    assert names == STANDARD + ["access_type", "prompt"], names
    assert (login["access_type"], login["prompt"], login["scope"]) == ("offline", "consent", "openid profile")

    done = browser.callback(at_stub(stub_idp, login))
    assert done.status == 302, done.body[:300]
    wait_for_state(admin, "me", "valid")
    [authorize] = stub_idp.endpoint_requests(endpoint="authorize")
    received = dict(authorize["form"])
    assert (received["access_type"], received["prompt"]) == ("offline", "consent")
    [exchange] = stub_idp.token_requests(grant_type="authorization_code")
    assert sorted(form(exchange)) == ["code", "code_verifier", "grant_type", "redirect_uri"]
    assert exchange["code_binding"]["pkce_ok"] and exchange["code_binding"]["redirect_uri_ok"]


def test_a_slack_user_token_nested_in_the_answer_goes_upstream_as_bearer_and_its_refresh_is_the_users(stub_idp, upstream,
                                                                                                        start_relay, sensitive):
    user_token, user_refresh = (sensitive.add(f"Slack user {kind}", f"xoxp-{secrets.token_urlsafe(24)}") for kind in ("token",
                                                                                                                     "refresh"))
    bot_token, bot_refresh = (sensitive.add(f"Slack bot {kind}", f"xoxb-{secrets.token_urlsafe(24)}") for kind in ("token",
                                                                                                                   "refresh"))
    rotated, rotated_refresh = (sensitive.add(f"Slack rotated user {kind}", f"xoxe-{secrets.token_urlsafe(24)}")
                                for kind in ("token", "refresh"))
    # oauth.v2.access: the code exchange (bot scopes and user scopes asked for), then a refresh of
    # the user token, which Slack answers at the top level.
    exchange = raw_json({
        "ok": True, "app_id": "A0TEST", "access_token": bot_token, "token_type": "bot", "scope": "chat:write",
        "refresh_token": bot_refresh, "expires_in": 43200, "bot_user_id": "U0BOT",
        "authed_user": {"id": "U0PERSON", "scope": "search:read", "access_token": user_token, "token_type": "user",
                        "refresh_token": user_refresh, "expires_in": 43200},
        "team": {"id": "T0TEAM", "name": "Acme"}, "enterprise": None, "is_enterprise_install": False})
    refresh = raw_json({"ok": True, "app_id": "A0TEST", "access_token": rotated, "token_type": "user",
                        "refresh_token": rotated_refresh, "expires_in": 43200, "scope": "search:read",
                        "team": {"id": "T0TEAM", "name": "Acme"}})
    stub_idp.script(by_grant={"authorization_code": exchange, "refresh_token": refresh},
                    default={"kind": "oauth_error", "error": "invalid_grant"})
    slack = {
        "grant": "authorization_code", "authorizationUrl": f"{stub_idp.url}/authorize?tenant=acme&team=T0OTHER",
        "tokenUrl": stub_idp.token_url, "clientId": stub_idp.client_id, "clientSecret": stub_idp.client_secret,
        "authorizationParams": {"user_scope": "search:read", "team": "T0TEAM"},
        "responseFields": {"token": ["authed_user.access_token", "access_token"],
                           "expiry": ["authed_user.expires_in", "expires_in"],
                           "type": ["authed_user.token_type", "token_type"],
                           "refreshToken": ["authed_user.refresh_token", "refresh_token"],
                           "typeValues": {"user": "Bearer"}},
    }
    relay, admin = start_login_relay(start_relay, upstream, {"slack": slack})
    wait_for_state(admin, "slack", "needs-login")

    browser = RawBrowser(relay, sensitive)
    login = browser.start_login("slack")
    # The configured query first (its `team` gave way), then the standard parameters (no scope:
    # the identity asks for user scopes only), then authorizationParams.
    names = [name for name in login if name != "authorization_endpoint"]
    assert names == ["tenant", "response_type", "client_id", "redirect_uri", "state", "code_challenge",
                     "code_challenge_method", "team", "user_scope"], names
    assert (login["tenant"], login["team"], login["user_scope"]) == ("acme", "T0TEAM", "search:read")
    assert browser.callback(at_stub(stub_idp, login)).status == 302
    wait_for_state(admin, "slack", "valid")

    assert bearer(get(relay, "/conversations.list")) == user_token
    [code_exchange] = stub_idp.token_requests(grant_type="authorization_code")
    assert sorted(form(code_exchange)) == ["code", "code_verifier", "grant_type", "redirect_uri"]
    assert code_exchange["code_binding"]["pkce_ok"] and code_exchange["code_binding"]["redirect_uri_ok"]

    # The upstream refuses the token: the relay refreshes it with the user's refresh token.
    assert get(relay, "/status/401").status == 401
    [refreshed] = wait_until(lambda: stub_idp.token_requests(grant_type="refresh_token"), 10, "the refresh of the user token")
    assert form(refreshed) == {"grant_type": ["refresh_token"], "refresh_token": [user_refresh]}
    assert refreshed["status"] == 200
    assert bearer(get(relay, "/conversations.list")) == rotated
