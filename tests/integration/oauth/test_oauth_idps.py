"""The test IdPs alone, without the relay (like test_echo_upstream.py): django-oauth-toolkit issues
tokens for each grant to curl and accepts them at /api/whoami, its counters count; the stub
answers as scripted and records what it was sent; the log scan finds what it must."""

import base64
import json
import time
from urllib.parse import quote_plus

import pytest

from http_client import curl
from idp_processes import form, header_values, sha256
from idp_relay import find_leaks

pytestmark = pytest.mark.oauth


def token(idp, *args: str):
    """POSTs a form to the IdP's token endpoint with curl; returns (status, parsed JSON or None)."""
    resp = curl(idp.token_url, *args)
    assert resp.returncode == 0, resp.stderr
    try:
        return resp.status, json.loads(resp.body)
    except ValueError:
        return resp.status, None


def basic(client_id: str, secret: str, encode: bool = True) -> str:
    if encode:
        client_id, secret = quote_plus(client_id), quote_plus(secret)
    return "Authorization: Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def data(**fields) -> list[str]:
    return [arg for k, v in fields.items() for arg in ("--data-urlencode", f"{k}={v}")]


def test_django_client_credentials_with_basic_gives_a_token_whoami_accepts(django_idp):
    c = django_idp.clients["orders-cc"]
    status, answer = token(django_idp, "-H", basic(c.client_id, c.client_secret),
                           *data(grant_type="client_credentials", scope="orders.read"))
    assert status == 200 and answer["token_type"] == "Bearer" and answer["scope"] == "orders.read"
    who = django_idp.whoami(answer["access_token"])
    assert who.status == 200
    assert who.json()["application"] == "orders-cc" and who.json()["scope"] == "orders.read"
    [record] = django_idp.token_requests()
    assert record["client_auth"] == "basic" and record["client_id"] == c.client_id
    assert record["access_token_sha256"] == who.json()["token_sha256"]


def test_django_refuses_basic_credentials_that_are_not_form_urlencoded(django_idp):
    c = django_idp.clients["orders-cc"]
    status, answer = token(django_idp, "-H", basic(c.client_id, c.client_secret, encode=False),
                           *data(grant_type="client_credentials"))
    assert (status, answer) == (401, {"error": "invalid_client"})


def test_django_client_credentials_with_post(django_idp):
    c = django_idp.clients["billing-cc"]
    status, answer = token(django_idp, *data(grant_type="client_credentials", client_id=c.client_id,
                                             client_secret=c.client_secret))
    assert status == 200
    assert django_idp.whoami(answer["access_token"]).json()["application"] == "billing-cc"
    assert django_idp.token_requests()[0]["client_auth"] == "post"


def test_django_password_grant_and_rotating_refresh(django_idp):
    c = django_idp.clients["legacy-pw"]
    auth = basic(c.client_id, c.client_secret)
    status, first = token(django_idp, "-H", auth, *data(grant_type="password", username=django_idp.username,
                                                        password=django_idp.password))
    assert status == 200 and first["refresh_token"]
    assert django_idp.whoami(first["access_token"]).json()["user"] == django_idp.username
    status, second = token(django_idp, "-H", auth, *data(grant_type="refresh_token",
                                                         refresh_token=first["refresh_token"]))
    assert status == 200 and second["refresh_token"] != first["refresh_token"]
    assert django_idp.whoami(second["access_token"]).status == 200
    status, reused = token(django_idp, "-H", auth, *data(grant_type="refresh_token",
                                                         refresh_token=first["refresh_token"]))
    assert (status, reused["error"]) == (400, "invalid_grant")
    grants = [(r["grant_type"], r["status"]) for r in django_idp.token_requests()]
    assert grants == [("password", 200), ("refresh_token", 200), ("refresh_token", 400)]
    records = django_idp.token_requests(grant_type="refresh_token")
    assert records[0]["refresh_token_sha256"] == sha256(first["refresh_token"])


def test_django_public_client_password_grant(django_idp):
    c = django_idp.clients["mobile-pw"]
    status, answer = token(django_idp, *data(grant_type="password", client_id=c.client_id,
                                             username=django_idp.username, password=django_idp.password))
    assert status == 200
    assert django_idp.token_requests()[0]["client_auth"] == "none"


def test_django_tokens_expire_and_the_hold_delays_token_requests(start_django_idp):
    idp = start_django_idp(access_token_seconds=1)
    c = idp.clients["orders-cc"]
    idp.hold(400)
    started = time.monotonic()
    status, answer = token(idp, "-H", basic(c.client_id, c.client_secret), *data(grant_type="client_credentials"))
    assert status == 200 and answer["expires_in"] == 1
    assert time.monotonic() - started >= 0.4
    assert idp.whoami(answer["access_token"]).status == 200
    time.sleep(1.1)  # about expiry: wait it out
    refused = idp.whoami(answer["access_token"])
    assert refused.status == 401 and 'error="invalid_token"' in refused.header("www-authenticate")


def test_django_revocation(django_idp):
    c = django_idp.clients["orders-cc"]
    _, answer = token(django_idp, "-H", basic(c.client_id, c.client_secret), *data(grant_type="client_credentials"))
    django_idp.revoke(answer["access_token"], "orders-cc")
    assert django_idp.whoami(answer["access_token"]).status == 401


def test_django_issued_tokens_are_read_from_its_database(django_idp):
    c = django_idp.clients["legacy-pw"]
    _, answer = token(django_idp, "-H", basic(c.client_id, c.client_secret),
                      *data(grant_type="password", username=django_idp.username, password=django_idp.password))
    issued = set(django_idp.issued_tokens())
    assert answer["access_token"] in issued and answer["refresh_token"] in issued


@pytest.mark.parametrize("spec, status, content_type", [
    ({"kind": "raw", "status": 429, "retry_after": 7, "content_type": "text/plain", "body": "slow down"}, 429, "text/plain"),
    ({"kind": "raw", "status": 500, "body": "boom", "content_type": "text/plain"}, 500, "text/plain"),
    ({"kind": "raw", "status": 403, "content_type": "text/html", "body": "<html></html>"}, 403, "text/html"),
    ({"kind": "raw", "status": 400, "body": ""}, 400, None),
    ({"kind": "oauth_error", "status": 401, "error": "invalid_client"}, 401, "application/json"),
    ({"kind": "token"}, 200, "application/json"),
])
def test_stub_answers_as_scripted(stub_idp, spec, status, content_type):
    stub_idp.script(default=spec)
    resp = curl(stub_idp.token_url, *data(grant_type="client_credentials"))
    assert resp.status == status
    assert resp.header("content-type") == content_type
    if "retry_after" in spec:
        assert resp.header("retry-after") == "7"


def test_stub_token_variants(stub_idp):
    stub_idp.script({"kind": "token", "expires_in": "2", "token_type": "bearer"},
                    {"kind": "token", "expires_in": 5, "fields": {"token": "accessToken", "expiry": "expiresIn",
                                                                   "type": "tokenType"}},
                    {"kind": "token", "jwt_exp_in": 30, "refresh_token": "new"})
    answers = [token(stub_idp, *data(grant_type="client_credentials"))[1] for _ in range(3)]
    assert answers[0]["expires_in"] == "2" and answers[0]["token_type"] == "bearer"
    assert set(answers[1]) == {"accessToken", "expiresIn", "tokenType"}
    assert "expires_in" not in answers[2] and answers[2]["refresh_token"]
    claims = answers[2]["access_token"].split(".")[1]
    assert json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))["exp"] > time.time()


def test_stub_delay_and_queue_order(stub_idp):
    stub_idp.script({"kind": "oauth_error", "error": "invalid_grant"}, by_grant={"password": {"kind": "raw",
                    "status": 503, "body": ""}}, default={"kind": "token", "delay_ms": 300})
    assert token(stub_idp, *data(grant_type="password"))[0] == 400      # the queue first
    assert token(stub_idp, *data(grant_type="password"))[0] == 503      # then by grant
    started = time.monotonic()
    assert token(stub_idp, *data(grant_type="client_credentials"))[0] == 200   # then the default
    assert time.monotonic() - started >= 0.3


def test_stub_records_form_fields_and_headers(stub_idp):
    token(stub_idp, "-H", "X-Request-Source: oauth-relay", "-H", basic("relay client", "s e+c"),
          *data(grant_type="client_credentials", resource="https://a/"), *data(resource="https://b/"))
    [record] = stub_idp.token_requests()
    assert form(record)["resource"] == ["https://a/", "https://b/"]
    assert header_values(record, "X-Request-Source") == ["oauth-relay"]
    assert record["issued"]["access_token"] and record["status"] == 200
    assert stub_idp.sensitive_values()["Basic client secret sent to the stub (request 1)"] == "s e+c"


def test_the_log_scan_finds_whole_secrets_and_pieces_but_not_the_last_four_characters():
    secret = "Zq8vK2mN5pR7tX1wY4bC6dF9"
    values = {"the secret": secret}
    assert find_leaks({"log": f'{{"msg":"token request","secret":"{secret}"}}'}, values)
    assert find_leaks({"log": f"prefix {secret[3:11]} suffix"}, values)
    assert not find_leaks({"log": f"redacted …{secret[-4:]}\n"}, values)
    [report] = find_leaks({"relay.stderr": f"line one\nline {secret}"}, values)
    assert "relay.stderr, line 2" in report and secret not in report
