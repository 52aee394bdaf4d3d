"""What the relay sends to the token endpoint, recorded by the scripted stub: client
authentication (basic with form-urlencoded id and secret, post, none), scope, audience, repeated
resource, extra params and headers, and the form of each grant."""

import base64
from urllib.parse import quote_plus, urlsplit

import pytest

from deadlines import wait_until
from idp_processes import form, header_values, tricky_secret
from idp_relay import oauth_route

pytestmark = pytest.mark.oauth


def first_token_request(stub, start_relay, upstream, identity: dict) -> dict:
    """Starts a relay with `identity` as `orders`, sends one request through it, and returns the
    first token request the stub received."""
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity})
    resp = relay.request("GET", "/x")
    assert resp.status == 200, f"{resp.status} {resp.body[:300]!r}"
    return stub.token_requests()[0]


def test_client_secret_basic_form_urlencodes_id_and_secret(stub_idp, upstream, start_relay):
    record = first_token_request(stub_idp, start_relay, upstream, stub_idp.identity(clientAuth="basic"))
    [auth] = header_values(record, "Authorization")
    expected = base64.b64encode(f"{quote_plus(stub_idp.client_id)}:{quote_plus(stub_idp.client_secret)}".encode())
    correct = auth == "Basic " + expected.decode()
    assert correct, "Authorization is not Basic base64(urlencode(id):urlencode(secret)) (RFC 6749 §2.3.1)"
    fields = form(record)
    assert fields["grant_type"] == ["client_credentials"]
    assert "client_secret" not in fields


def test_client_secret_basic_is_the_default_with_a_secret(stub_idp, upstream, start_relay):
    record = first_token_request(stub_idp, start_relay, upstream, stub_idp.identity())
    [auth] = header_values(record, "Authorization")
    assert auth[:6] == "Basic "
    assert "client_secret" not in form(record)


def test_client_secret_post_sends_id_and_secret_in_the_form(stub_idp, upstream, start_relay):
    record = first_token_request(stub_idp, start_relay, upstream, stub_idp.identity(clientAuth="post"))
    fields = form(record)
    assert fields["client_id"] == [stub_idp.client_id]
    same_secret = fields["client_secret"] == [stub_idp.client_secret]
    assert same_secret, "client_secret in the form differs from the configured secret"
    assert header_values(record, "Authorization") == []


def test_a_public_client_sends_its_id_and_no_secret(stub_idp, upstream, start_relay):
    record = first_token_request(stub_idp, start_relay, upstream,
                                 stub_idp.identity(clientAuth="none", clientSecret=None))
    fields = form(record)
    assert fields["client_id"] == [stub_idp.client_id]
    assert "client_secret" not in fields
    assert header_values(record, "Authorization") == []


def test_the_token_request_is_a_form_post_to_the_token_url(stub_idp, upstream, start_relay):
    identity = stub_idp.identity(tokenUrl=stub_idp.token_url + "?tenant=acme")
    record = first_token_request(stub_idp, start_relay, upstream, identity)
    assert record["method"] == "POST"
    target = urlsplit(record["target"])
    assert (target.path, target.query) == ("/o/token/", "tenant=acme")
    [content_type] = header_values(record, "Content-Type")
    assert content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded"


def test_scope_audience_resources_params_and_headers_are_sent(stub_idp, upstream, start_relay):
    identity = stub_idp.identity(scope="orders.read orders.write", audience="orders-api",
                                 resource=["https://orders.internal/", "https://billing.internal/v2"],
                                 params={"tenant": "acme corp", "x-mode": "a&b=c"},
                                 headers={"X-Request-Source": "oauth-relay"})
    record = first_token_request(stub_idp, start_relay, upstream, identity)
    fields = form(record)
    assert fields["scope"] == ["orders.read orders.write"]
    assert fields["audience"] == ["orders-api"]
    assert fields["resource"] == ["https://orders.internal/", "https://billing.internal/v2"]
    assert fields["tenant"] == ["acme corp"]
    assert fields["x-mode"] == ["a&b=c"]
    assert header_values(record, "X-Request-Source") == ["oauth-relay"]


def test_scope_may_be_given_as_an_array(stub_idp, upstream, start_relay):
    record = first_token_request(stub_idp, start_relay, upstream,
                                 stub_idp.identity(scope=["orders.read", "orders.write"]))
    assert form(record)["scope"] == ["orders.read orders.write"]


def test_the_password_grant_sends_username_and_password(stub_idp, upstream, start_relay, tmp_path, sensitive):
    password = sensitive.add("the password", tricky_secret("pw"))
    password_file = tmp_path / "password"
    password_file.write_text(password + "\n")
    identity = stub_idp.identity(grant="password", username="svc legacy", passwordFile=str(password_file))
    fields = form(first_token_request(stub_idp, start_relay, upstream, identity))
    assert fields["grant_type"] == ["password"]
    assert fields["username"] == ["svc legacy"]
    same = fields["password"] == [password]
    assert same, "the password sent differs from the file's content (trimmed)"


def test_the_refresh_token_grant_is_seeded_from_a_file(stub_idp, upstream, start_relay, tmp_path, sensitive):
    seed = sensitive.add("the seed refresh token", tricky_secret("rt"))
    seed_file = tmp_path / "refresh-token"
    seed_file.write_text(seed + "\n")
    identity = stub_idp.identity(grant="refresh_token", refreshTokenFile=str(seed_file))
    fields = form(first_token_request(stub_idp, start_relay, upstream, identity))
    assert fields["grant_type"] == ["refresh_token"]
    same = fields["refresh_token"] == [seed]
    assert same, "the refresh token sent differs from the seed"


def test_the_jwt_bearer_grant_sends_the_assertion_from_a_file(stub_idp, upstream, start_relay, tmp_path, sensitive):
    assertion = sensitive.add("the assertion", "eyJhbGciOiJub25lIn0." + tricky_secret("assert").replace(" ", "_") + ".")
    path = tmp_path / "assertion.jwt"
    path.write_text(assertion + "\n")
    identity = stub_idp.identity(grant="urn:ietf:params:oauth:grant-type:jwt-bearer", assertionFile=str(path))
    fields = form(first_token_request(stub_idp, start_relay, upstream, identity))
    assert fields["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]
    same = fields["assertion"] == [assertion]
    assert same, "the assertion sent differs from the file's content"


def test_token_exchange_sends_the_subject_token_and_params(stub_idp, upstream, start_relay, tmp_path, sensitive):
    subject = sensitive.add("the subject token", tricky_secret("subj"))
    path = tmp_path / "subject-token"
    path.write_text(subject)
    identity = stub_idp.identity(grant="urn:ietf:params:oauth:grant-type:token-exchange",
                                 subjectTokenFile=str(path),
                                 subjectTokenType="urn:ietf:params:oauth:token-type:access_token",
                                 params={"requested_token_type": "urn:ietf:params:oauth:token-type:access_token"},
                                 audience="orders-api")
    fields = form(first_token_request(stub_idp, start_relay, upstream, identity))
    assert fields["grant_type"] == ["urn:ietf:params:oauth:grant-type:token-exchange"]
    same = fields["subject_token"] == [subject]
    assert same, "the subject_token sent differs from the file's content"
    assert fields["subject_token_type"] == ["urn:ietf:params:oauth:token-type:access_token"]
    assert fields["requested_token_type"] == ["urn:ietf:params:oauth:token-type:access_token"]
    assert fields["audience"] == ["orders-api"]


def test_a_secret_from_the_environment_is_used(stub_idp, upstream, start_relay, monkeypatch):
    monkeypatch.setenv("OAUTH_RELAY_TEST_CLIENT_SECRET", stub_idp.client_secret)
    identity = stub_idp.identity(clientAuth="post", clientSecret="${OAUTH_RELAY_TEST_CLIENT_SECRET}")
    record = first_token_request(stub_idp, start_relay, upstream, identity)
    same = form(record)["client_secret"] == [stub_idp.client_secret]
    assert same, "the secret sent is not the environment variable's value"


def test_the_first_token_is_fetched_at_start_up_without_a_request(stub_idp, upstream, start_relay):
    start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": stub_idp.identity()})
    wait_until(lambda: stub_idp.token_requests(), 5, "a token request after start-up")
