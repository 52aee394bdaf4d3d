"""How the relay reads token answers (scripted by the stub): expiry from `expires_in` as a number
or a numeric string, from a JWT's `exp`, or `defaultExpiresInSeconds`; non-standard field names;
refresh tokens rotated, kept, or refused (`invalid_grant` -> back to the original grant); lifetimes
that are absurd (negative, zero, no number, beyond a year, milliseconds) bounded with one warning.

The lifetime a relay took from an answer shows in when it fetches the next token: before expiry,
at most half the lifetime early, so a 2 s token is replaced 1-2 s after it arrived."""

import pytest

from admin_client import log_records
from deadlines import wait_until
from idp_processes import sha256
from idp_relay import bearer, oauth_route

pytestmark = pytest.mark.oauth


def start(start_relay, stub, upstream, **identity_options):
    return start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": stub.identity(**identity_options)})


def token_requests(stub, n: int, timeout: float) -> list[dict]:
    """Waits until the stub has answered n token requests; returns them."""
    return wait_until(lambda: (r := [x for x in stub.token_requests() if x["answered"]])[n - 1:] and r, timeout,
                      f"{n} token requests at the stub")


def assert_lifetime_taken_as(stub, seconds: float, up_to: float | None = None) -> None:
    """The second token request came before the first token expired, and not before half its life
    (a lifetime of `seconds`, or between `seconds` and `up_to`)."""
    up_to = seconds if up_to is None else up_to
    first, second = token_requests(stub, 2, up_to + 4)[:2]
    gap = second["time"] - first["answered"]
    assert seconds / 2 - 0.3 <= gap <= up_to + 0.3, f"next token request {gap:.2f}s after a {seconds}-{up_to}s token"


def test_a_missing_expires_in_means_default_expires_in_seconds(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token"})
    relay = start(start_relay, stub_idp, upstream, defaultExpiresInSeconds=2)
    assert relay.request("GET", "/x").status == 200
    assert_lifetime_taken_as(stub_idp, 2)


def test_expires_in_as_a_numeric_string_is_understood(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "expires_in": "2"})
    relay = start(start_relay, stub_idp, upstream)
    assert relay.request("GET", "/x").status == 200
    assert_lifetime_taken_as(stub_idp, 2)


def test_the_jwt_exp_is_used_when_expires_in_is_missing(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "jwt_exp_in": 3})
    relay = start(start_relay, stub_idp, upstream)
    assert relay.request("GET", "/x").status == 200
    assert_lifetime_taken_as(stub_idp, 3, up_to=4)


def test_non_standard_field_names_are_read_with_response_fields(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "expires_in": 2, "token_type": "bearer",
                             "fields": {"token": "accessToken", "expiry": "expiresIn", "type": "tokenType"}})
    relay = start(start_relay, stub_idp, upstream,
                  responseFields={"token": "accessToken", "expiry": "expiresIn", "type": "tokenType"})
    injected = sha256(bearer(relay.request("GET", "/x")))
    first = stub_idp.token_requests()[0]
    assert injected == sha256(first["issued"]["access_token"])
    assert_lifetime_taken_as(stub_idp, 2)


def test_a_lowercase_token_type_is_accepted(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "expires_in": 3600, "token_type": "bearer"})
    relay = start(start_relay, stub_idp, upstream)
    bearer(relay.request("GET", "/x"))  # "Bearer <token>", whatever the IdP's spelling


def password_identity(stub) -> dict:
    return {"grant": "password", "username": "svc-legacy", "password": "pw-" + stub.client_secret}


def test_a_rotated_refresh_token_replaces_the_old_one(stub_idp, upstream, start_relay):
    token = {"kind": "token", "expires_in": 2, "refresh_token": "new"}
    stub_idp.script(by_grant={"password": token, "refresh_token": token})
    relay = start(start_relay, stub_idp, upstream, **password_identity(stub_idp))
    assert relay.request("GET", "/x").status == 200
    grant, refresh1, refresh2 = token_requests(stub_idp, 3, 8)[:3]
    assert [grant["grant_type"], refresh1["grant_type"], refresh2["grant_type"]] == ["password", "refresh_token",
                                                                                     "refresh_token"]
    presented = [sha256(dict(r["form"])["refresh_token"]) for r in (refresh1, refresh2)]
    issued = [sha256(r["issued"]["refresh_token"]) for r in (grant, refresh1)]
    assert presented == issued


def test_a_refresh_answer_without_refresh_token_keeps_the_old_one(stub_idp, upstream, start_relay):
    stub_idp.script(by_grant={"password": {"kind": "token", "expires_in": 2, "refresh_token": "new"},
                              "refresh_token": {"kind": "token", "expires_in": 2}})
    relay = start(start_relay, stub_idp, upstream, **password_identity(stub_idp))
    assert relay.request("GET", "/x").status == 200
    grant, refresh1, refresh2 = token_requests(stub_idp, 3, 8)[:3]
    assert [r["grant_type"] for r in (refresh1, refresh2)] == ["refresh_token", "refresh_token"]
    original = sha256(grant["issued"]["refresh_token"])
    presented = [sha256(dict(r["form"])["refresh_token"]) for r in (refresh1, refresh2)]
    assert presented == [original, original]


def test_invalid_grant_on_refresh_falls_back_to_the_original_grant(stub_idp, upstream, start_relay):
    stub_idp.script(by_grant={"password": {"kind": "token", "expires_in": 2, "refresh_token": "new"},
                              "refresh_token": {"kind": "oauth_error", "status": 400, "error": "invalid_grant",
                                                "error_description": "refresh token revoked"}})
    relay = start(start_relay, stub_idp, upstream, **password_identity(stub_idp))
    assert relay.request("GET", "/x").status == 200
    records = token_requests(stub_idp, 3, 8)[:3]
    assert [r["grant_type"] for r in records] == ["password", "refresh_token", "password"]
    renewed = sha256(records[2]["issued"]["access_token"])
    wait_until(lambda: sha256(bearer(relay.request("GET", "/x"))) == renewed, 3, "the token of the new password grant")


# ---------------------------------------------------------------------------------------------
# Lifetimes no relay should take as given (OAuth2/TokenLifetime.swift): ignored or cut, with one
# warning line naming the identity and the field, and never a refresh loop.

ADJUSTED = "token lifetime adjusted"


def lifetime_warnings(relay) -> list[dict]:
    return log_records(relay, ADJUSTED)


def wait_for_tokens_obtained(relay, n: int, timeout: float) -> list[dict]:
    return wait_until(lambda: (r := log_records(relay, "token obtained"))[n - 1:] and r, timeout,
                      f"{n} 'token obtained' log lines")


@pytest.mark.parametrize("expires_in", [-1, 0, "soon", "NaN", True], ids=lambda v: repr(v))
def test_an_absurd_expires_in_is_ignored_with_one_warning(stub_idp, upstream, start_relay, expires_in):
    stub_idp.script(default={"kind": "token", "expires_in": expires_in})
    relay = start(start_relay, stub_idp, upstream, defaultExpiresInSeconds=2)
    assert relay.request("GET", "/x").status == 200
    assert_lifetime_taken_as(stub_idp, 2)
    wait_for_tokens_obtained(relay, 3, 8)
    [warning] = lifetime_warnings(relay)  # one line, not one per refresh
    assert warning["identity"] == "orders" and warning["field"] == "expires_in", warning


def test_an_expires_in_beyond_a_year_is_cut_to_a_year(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "expires_in": 1e300})
    relay = start(start_relay, stub_idp, upstream)
    assert relay.request("GET", "/x").status == 200
    [obtained] = wait_for_tokens_obtained(relay, 1, 5)
    assert int(obtained["expires_in"]) == 365 * 24 * 3600, obtained
    [warning] = wait_until(lambda: lifetime_warnings(relay), 5, "the lifetime warning")
    assert warning["identity"] == "orders" and warning["field"] == "expires_in", warning


def test_tokens_living_milliseconds_are_fetched_at_most_once_a_second(stub_idp, upstream, start_relay):
    stub_idp.script(default={"kind": "token", "expires_in": 0.2})
    relay = start(start_relay, stub_idp, upstream)
    records = token_requests(stub_idp, 4, 8)[:4]
    gaps = [later["time"] - earlier["time"] for earlier, later in zip(records, records[1:])]
    assert min(gaps) >= 0.9, f"token requests {[round(g, 2) for g in gaps]} s apart: a refresh loop"
    assert relay.request("GET", "/x").status == 200  # waits for the next token at most a second
    [warning] = lifetime_warnings(relay)
    assert warning["identity"] == "orders" and warning["field"] == "expires_in", warning
