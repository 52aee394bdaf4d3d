"""Logins in the metrics and the logs (issue 11): `oauth_relay_logins_total{identity,kind,outcome}`
counts browser and device logins started, completed and failed (with the reason), and a run of
logins at `--log-level trace` logs none of a login's secrets: the code, state, PKCE verifier,
nonce, login cookie, device code, ID token and tokens (the leak scan of conftest.py, whose values
are checked here to hold each of those kinds).
"""

from __future__ import annotations

import pytest

from deadlines import wait_until
from http_client import assert_problem
from idp_processes import DEVICE_GRANT
from idp_relay import oauth_route
from login_relay import (ID_TOKEN_OK, RawBrowser, approved_token, at_stub, browse, get, identity_view, start_login_relay,
                         wait_for_state)

pytestmark = pytest.mark.oauth

TRACE = ("--log-level", "trace")
DEVICE_TOKEN = {"kind": "token", "expires_in": 3600, "refresh_token": "new"}


def script(stub, id_token: dict | None = None, device_poll: dict | None = None, **login) -> None:
    stub.script(default={**ID_TOKEN_OK, "id_token": id_token or {}}, by_grant={DEVICE_GRANT: device_poll or DEVICE_TOKEN},
                device={"kind": "device", "interval": 1}, **login)


def browser_login(relay, stub, sensitive) -> int:
    """A browser login through the stub; the status of the callback's answer."""
    browser = RawBrowser(relay, sensitive)
    resp = browser.callback(at_stub(stub, browser.start_login("me", returns="/me/page")))
    sensitive.add_output(f"the callback's answer {len(sensitive.outputs)}", resp.body)
    if resp.status == 302:
        page = browse(relay, "/me/page", browser.cookies)
        if page.status != 200:  # the relay's page (a 200 is the echo of the token it injected)
            sensitive.add_output(f"the page after a login {len(sensitive.outputs)}", page.body)
    return resp.status


def logins(admin, identity: str) -> dict[str, float]:
    return admin.scrape().by("oauth_relay_logins_total", "outcome", identity=identity)


def test_logins_are_counted_by_kind_and_outcome_and_no_secret_of_theirs_is_logged(stub_idp, upstream, start_relay, sensitive):
    script(stub_idp)
    identities = {"me": stub_idp.login_identity("authorization_code"), "tv": stub_idp.login_identity("device_code")}
    relay, admin = start_login_relay(start_relay, upstream, identities, args=TRACE,
                                     routes=[oauth_route(upstream, "/me/", "me"), oauth_route(upstream, "/tv/", "tv")])
    admin.on_scrape = lambda body: sensitive.add_output(f"metrics scrape {len(sensitive.outputs)}", body)
    for name in identities:  # discovery answered: a login can start
        wait_for_state(admin, name, "needs-login")

    # Browser: one completes, one the person declines, one with an ID token that fails its check.
    assert browser_login(relay, stub_idp, sensitive) == 302
    assert identity_view(admin, "me")["state"] == "valid"
    script(stub_idp, authorize={"kind": "redirect", "error": "access_denied"})
    assert browser_login(relay, stub_idp, sensitive) == 403
    script(stub_idp, id_token={"key": "attacker"})
    assert browser_login(relay, stub_idp, sensitive) == 302
    wait_until(lambda: logins(admin, "me").get("failed_invalid_id_token"), 5, "the failed login counted")
    assert logins(admin, "me") == {"started": 3, "completed": 1, "failed_access_denied": 1, "failed_invalid_id_token": 1}
    assert admin.scrape().by("oauth_relay_logins_total", "kind", identity="me") == {"browser": 6}

    # Device: one approved at once, then (after a logout) one whose code expires.
    doc = assert_problem(get(relay, "/tv/1"), 401)
    sensitive.add_output("a device login's 401", doc["detail"])
    approved_token(relay, "/tv/1")
    assert admin.request("DELETE", "/identities/tv/token").status == 204
    script(stub_idp, device_poll={"kind": "oauth_error", "error": "expired_token"})
    assert assert_problem(get(relay, "/tv/2"), 401)["userCode"]
    wait_until(lambda: logins(admin, "tv").get("failed_expired_token"), 10, "the expired device login counted")
    assert logins(admin, "tv") == {"started": 2, "completed": 1, "failed_expired_token": 1}
    assert admin.scrape().by("oauth_relay_logins_total", "kind", identity="tv") == {"device": 4}

    # The leak scan (conftest.py, after the test) knows every secret of these logins.
    labels = " ".join(sensitive.collect())
    for kind in ("state", "nonce", "code_verifier", "login cookie", "code issued", "device_code issued",
                 "id_token issued", "access_token issued", "refresh_token issued"):
        assert kind in labels, f"the leak scan has no {kind}"
    # The relay has no message below debug (none is logged at trace), so a run at trace writes what
    # one at debug does: the scan covered the most the relay logs only if debug lines are there.
    assert '"level":"debug"' in relay.log(), "the relay logged no debug line: it did not run at trace level"


def test_an_error_code_no_rfc_defines_is_counted_as_idp_error(stub_idp, upstream, start_relay, sensitive):
    """An IdP's own error text never becomes a label value: the code exchange's, the callback's and
    a device poll's unknown `error` are all `failed_idp_error`; an RFC's code keeps its name."""
    unknown = {"kind": "oauth_error", "error": "tenant_4711_suspended"}
    stub_idp.script(by_grant={"authorization_code": unknown, DEVICE_GRANT: unknown},
                    device={"kind": "device", "interval": 1})
    identities = {"me": stub_idp.login_identity("authorization_code"), "tv": stub_idp.login_identity("device_code")}
    relay, admin = start_login_relay(start_relay, upstream, identities,
                                     routes=[oauth_route(upstream, "/me/", "me"), oauth_route(upstream, "/tv/", "tv")])
    for name in identities:
        wait_for_state(admin, name, "needs-login")

    # The code exchange answered with an unknown error.
    assert browser_login(relay, stub_idp, sensitive) == 302
    wait_until(lambda: logins(admin, "me").get("failed_idp_error"), 5, "the failed code exchange counted")
    # The authorization endpoint's redirect back carrying an unknown error.
    stub_idp.script(by_grant={DEVICE_GRANT: unknown}, device={"kind": "device", "interval": 1},
                    authorize={"kind": "redirect", "error": "vendor_said_no"})
    assert browser_login(relay, stub_idp, sensitive) == 403
    wait_until(lambda: logins(admin, "me").get("failed_idp_error") == 2, 5, "the failed callback counted")
    # A device poll answered with an unknown error ends the device login.
    assert assert_problem(get(relay, "/tv/1"), 401)
    wait_until(lambda: logins(admin, "tv").get("failed_idp_error"), 10, "the failed device login counted")

    counted = {**{f"me {k}": v for k, v in logins(admin, "me").items()}, **{f"tv {k}": v for k, v in logins(admin, "tv").items()}}
    assert counted == {"me started": 2, "me failed_idp_error": 2, "tv started": 1, "tv failed_idp_error": 1}
    scrape = admin.scrape()
    assert "tenant_4711" not in scrape.text and "vendor_said_no" not in scrape.text
