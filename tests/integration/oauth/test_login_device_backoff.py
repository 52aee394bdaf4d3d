"""A device login that ends without a token (the person refused, the code expired) is not
followed at once by another: requests that keep coming get the login-required problem with a
`Retry-After` (30 s after the first such login, doubling up to 10 minutes), and no new device
authorization reaches the IdP, until the wait is over or an operator starts a login (the admin
API here, as `oauth-relay login` does). With the scripted IdP (idp_stub.py, its device endpoints
in idp_stub_login.py), which records every device authorization."""

from __future__ import annotations

import pytest

from deadlines import wait_until
from http_client import assert_problem
from idp_processes import DEVICE_GRANT
from login_relay import get, identity_view, start_login_relay, wait_for_state

pytestmark = pytest.mark.oauth


def device_authorizations(stub) -> int:
    return len(stub.endpoint_requests(endpoint="device"))


@pytest.mark.parametrize("error", ["expired_token", "access_denied"])
def test_a_device_login_ended_without_a_token_is_not_followed_at_once_by_another(stub_idp, upstream, start_relay, error):
    stub_idp.script(by_grant={DEVICE_GRANT: {"kind": "oauth_error", "error": error}}, device={"kind": "device", "interval": 1})
    relay, admin = start_login_relay(start_relay, upstream, {"me": stub_idp.login_identity("device_code")})
    wait_for_state(admin, "me", "needs-login")
    assert assert_problem(get(relay, "/x"), 401)["userCode"]
    wait_until(lambda: identity_view(admin, "me").get("lastLoginFailure"), 10, "the login's end")
    assert device_authorizations(stub_idp) == 1
    # Requests keep coming: each is told to log in, and when a request may start the next login.
    for _ in range(5):
        resp = get(relay, "/x")
        problem = assert_problem(resp, 401)
        assert problem["type"].endswith("login-required"), problem
        assert "userCode" not in problem, "a new device login started at once"
        retry_after = int(resp.header("Retry-After"))
        assert 1 <= retry_after <= 30, retry_after
        assert "starts the next one in" in problem["detail"], problem
    assert device_authorizations(stub_idp) == 1, "a request started another device authorization"
    # An operator does not wait.
    assert admin.request("POST", "/identities/me/login").status == 202
    wait_until(lambda: device_authorizations(stub_idp) == 2, 10, "the operator's device authorization")
