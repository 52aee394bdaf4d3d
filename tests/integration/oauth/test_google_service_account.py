"""Google service-account key files (`serviceAccountKeyFile`), against a stand-in for Google's token
endpoint that checks every field Google documents (idp_google.py: the form, the assertion's RS256
signature with the key the test generated, its header and claims, the timeframe) and answers with
Google's own error texts:

- the contract's shape (`grant: client_credentials` + key file + scope) gets the token the endpoint
  issued, and domain-wide delegation names its user in `sub`;
- each way Google refuses a real deployment (a deleted key, another key under the same id, a
  deleted account, a scope that is no scope URL, a user the account may not act for, a clock two
  hours behind) leaves the identity failing with Google's reason, in the problem and `/identities`;
- a self-signed JWT (`audience`, or `scope` with `selfSignedJwt`) goes upstream as the Bearer token,
  its signature and claims checked here with the public key, and the token endpoint hears nothing;
- `check` refuses an unusable key file, naming the file and the member, never the key.
Every private key, assertion and token is in the leak scan of the relay's logs."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from admin_client import start_with_admin
from deadlines import wait_until
from idp_google import ACCOUNT_NOT_FOUND, BAD_TIMEFRAME, INVALID_SCOPE, INVALID_SIGNATURE, UNAUTHORIZED_CLIENT, JWT_BEARER
from idp_processes import GoogleTokenEndpoint
from idp_relay import assert_oauth_problem, bearer, oauth_route
from key_files import pem
from processes import LOOPBACK, free_port, relay_config, run_cli, write_config
from rotating_files import KubeletVolume

pytestmark = pytest.mark.oauth

EMAIL = "relay@orders-project.iam.gserviceaccount.com"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
PUBSUB_SCOPE = "https://www.googleapis.com/auth/pubsub"
PUBSUB_API = "https://pubsub.googleapis.com/"
KID = "3f2d8a9c41b7e06d5a1c9e8f7b6a5d4c3b2a1f0e"


@pytest.fixture
def google(tmp_path, sensitive):
    endpoint = GoogleTokenEndpoint(tmp_path / "google-token-endpoint.log")
    final: dict[str, str] = {}
    # Its records are read while it runs; after the kill, the last read stands.
    sensitive.add_source(lambda: endpoint.sensitive_values() if endpoint.running() else final)
    yield endpoint.start()
    if endpoint.running():
        final.update(endpoint.sensitive_values())
    endpoint.kill()


def new_key(size: int = 2048):
    return rsa.generate_private_key(public_exponent=65537, key_size=size)


def key_file(tmp_path, sensitive, key, token_uri: str, kid: str | None = KID, name: str = "sa.json", **changes) -> str:
    """A service-account key file as the Cloud console writes it (`changes` replace members, None
    removes one); the key's PEM body joins the leak scan. Returns its path."""
    private_pem = pem(key, True)
    sensitive.add(f"private key of {name}", "".join(private_pem.splitlines()[1:-1]))
    content = {
        "type": "service_account", "project_id": "orders-project", "private_key_id": kid, "private_key": private_pem,
        "client_email": EMAIL, "client_id": "113258942105700140798",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": token_uri,
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/relay%40orders-project.iam.gserviceaccount.com",
        "universe_domain": "googleapis.com", **changes,
    }
    path = tmp_path / name
    path.write_text(json.dumps({k: v for k, v in content.items() if v is not None}, indent=2))
    return str(path)


def knows(key, kid: str = KID, delegated_users=()) -> dict:
    """The accounts entry for the stand-in: EMAIL with `key`'s public half under `kid`."""
    return {EMAIL: {"keys": {kid: pem(key, False)}, "delegated_users": list(delegated_users)}}


def start(start_relay, upstream, **identity):
    """A relay with an admin listener whose route `/` carries identity `gsa`; (relay, admin)."""
    return start_with_admin(start_relay, [oauth_route(upstream, "/", "gsa")], identities={"gsa": identity})


def identity_view(admin) -> dict:
    [view] = admin.request("GET", "/identities").json()["identities"]
    return view


def b64url(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def verified_jwt(token: str, key) -> tuple[dict, dict]:
    """Header and claims of `token` once its RS256 signature verified with `key`'s public half."""
    header, claims, signature = token.split(".")
    key.public_key().verify(b64url(signature), f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return json.loads(b64url(header)), json.loads(b64url(claims))


# ---------------------------------------------------------------------------------------------
# The jwt-bearer grant at the token endpoint.

def test_the_contracts_shape_gets_the_token_google_issued(google, upstream, start_relay, tmp_path, sensitive):
    key = new_key()
    google.configure(knows(key))
    path = key_file(tmp_path, sensitive, key, google.token_url)
    relay, admin = start(start_relay, upstream, grant="client_credentials", serviceAccountKeyFile=path, scope=CLOUD_PLATFORM)
    token = bearer(relay.request("GET", "/x"))
    [record] = google.requests()
    assert record["status"] == 200, record["reason"]
    assert token == record["issued"]
    assert (record["method"], record["target"], record["content_type"]) == ("POST", "/token", "application/x-www-form-urlencoded")
    assert [name for name, _ in record["form"]] == ["grant_type", "assertion"]
    assert dict(record["form"])["grant_type"] == JWT_BEARER
    assert record["header"] == {"typ": "JWT", "alg": "RS256", "kid": KID}
    claims = record["claims"]
    assert set(claims) == {"iss", "scope", "aud", "iat", "exp"}
    assert (claims["iss"], claims["scope"], claims["aud"]) == (EMAIL, CLOUD_PLATFORM, google.token_url)
    assert claims["exp"] - claims["iat"] == 3600
    assert abs(claims["iat"] - time.time()) < 10
    view = identity_view(admin)
    assert (view["state"], view["grant"]) == ("valid", JWT_BEARER)
    assert 3500 < view["expiresInSeconds"] <= 3599
    assert admin.request("GET", "/readyz").status == 200
    assert bearer(relay.request("GET", "/y")) == token and len(google.requests()) == 1


def test_domain_wide_delegation_acts_for_the_user_with_every_scope(google, upstream, start_relay, tmp_path, sensitive):
    key = new_key()
    google.configure(knows(key, delegated_users=["admin@orders.example.com"]))
    relay, _ = start(start_relay, upstream, serviceAccountKeyFile=key_file(tmp_path, sensitive, key, google.token_url),
                     scope=[CLOUD_PLATFORM, PUBSUB_SCOPE], serviceAccountSubject="admin@orders.example.com")
    token = bearer(relay.request("GET", "/x"))
    [record] = google.requests()
    assert record["status"] == 200, record["reason"]
    assert token == record["issued"]
    assert set(record["claims"]) == {"iss", "sub", "scope", "aud", "iat", "exp"}
    assert record["claims"]["sub"] == "admin@orders.example.com"
    assert record["claims"]["scope"] == f"{CLOUD_PLATFORM} {PUBSUB_SCOPE}"


# ---------------------------------------------------------------------------------------------
# Google's refusals: the identity fails, saying why.

REFUSALS = {
    "a key deleted at Google (its kid is unknown)": (
        dict(known_kid="a-newer-key-id"), 400, "invalid_grant", INVALID_SIGNATURE),
    "another key in the file under the known kid": (
        dict(known_key="other"), 400, "invalid_grant", INVALID_SIGNATURE),
    "a deleted service account": (
        dict(accounts={}), 400, "invalid_grant", ACCOUNT_NOT_FOUND),
    "a scope that is no scope URL": (
        dict(scope="cloud-platform"), 400, "invalid_scope", INVALID_SCOPE),
    "a user the account may not act for": (
        dict(serviceAccountSubject="ceo@orders.example.com"), 401, "unauthorized_client", UNAUTHORIZED_CLIENT),
    "a relay clock two hours behind": (
        dict(clock_offset=7200), 400, "invalid_grant", BAD_TIMEFRAME),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refusal_leaves_the_identity_failing_with_googles_reason(case, google, upstream, start_relay, tmp_path, sensitive):
    setup, status, error, description = REFUSALS[case]
    key = new_key()
    known = new_key() if setup.get("known_key") == "other" else key
    accounts = setup.get("accounts", knows(known, kid=setup.get("known_kid", KID)))
    google.configure(accounts, clock_offset=setup.get("clock_offset", 0))
    options = {"scope": setup.get("scope", CLOUD_PLATFORM)}
    if "serviceAccountSubject" in setup:
        options["serviceAccountSubject"] = setup["serviceAccountSubject"]
    relay, admin = start(start_relay, upstream, serviceAccountKeyFile=key_file(tmp_path, sensitive, key, google.token_url), **options)
    resp = relay.request("GET", "/x")
    sensitive.add_output("problem body", resp.body)
    doc = assert_oauth_problem(resp, 502, identity="gsa", oauth_error=error)
    assert doc.get("oauthErrorDescription") == description, doc
    [record] = google.requests()
    assert (record["status"], record["error"]) == (status, error), record["reason"]
    view = identity_view(admin)
    assert view["state"] == "failing" and not view["hasValidToken"], view
    assert view["lastError"]["code"] == error, view
    assert view["lastError"]["description"] == f"the token endpoint answered HTTP {status} with OAuth error {error} ({description})"
    assert admin.request("GET", "/readyz").status == 503


# ---------------------------------------------------------------------------------------------
# Self-signed JWTs: no token endpoint at all.

def test_a_self_signed_jwt_for_an_api_goes_upstream_and_the_token_endpoint_hears_nothing(google, upstream, start_relay, tmp_path,
                                                                                        sensitive):
    key = new_key()
    google.configure(knows(key))
    relay, admin = start(start_relay, upstream, serviceAccountKeyFile=key_file(tmp_path, sensitive, key, google.token_url),
                         audience=PUBSUB_API)
    token = bearer(relay.request("GET", "/x"))
    sensitive.add("the self-signed token's signature", token.rpartition(".")[2])
    header, claims = verified_jwt(token, key)
    assert header == {"typ": "JWT", "alg": "RS256", "kid": KID}
    assert claims == {"iss": EMAIL, "sub": EMAIL, "aud": PUBSUB_API, "iat": claims["iat"], "exp": claims["iat"] + 3600}
    assert abs(claims["iat"] - time.time()) < 10
    assert google.requests() == []
    assert "gsa self-signed JWT (no token endpoint)" in relay.log()
    view = identity_view(admin)
    assert view["state"] == "valid" and 3500 < view["expiresInSeconds"] <= 3600, view
    assert admin.request("GET", "/readyz").status == 200
    assert admin.scrape().value("oauth_relay_token_requests_total", identity="gsa", outcome="success") == 1
    assert bearer(relay.request("GET", "/y")) == token


def test_a_self_signed_jwt_may_carry_a_scope_instead_of_an_audience(google, upstream, start_relay, tmp_path, sensitive):
    key = new_key()
    relay, _ = start(start_relay, upstream, serviceAccountKeyFile=key_file(tmp_path, sensitive, key, google.token_url),
                     scope=CLOUD_PLATFORM, selfSignedJwt=True)
    token = bearer(relay.request("GET", "/x"))
    sensitive.add("the self-signed token's signature", token.rpartition(".")[2])
    _, claims = verified_jwt(token, key)
    assert set(claims) == {"iss", "sub", "scope", "iat", "exp"}
    assert (claims["sub"], claims["scope"], claims["exp"] - claims["iat"]) == (EMAIL, CLOUD_PLATFORM, 3600)
    assert google.requests() == []


# ---------------------------------------------------------------------------------------------
# A key file rotated on disk (a Kubernetes Secret volume): the next token is signed with the new
# key, with no reload.

KID_2 = "9a8b7c6d5e4f30211203f4e5d6c7b8a9f0e1d2c3"


def rotated_key_volume(tmp_path, sensitive, token_uri: str):
    """A kubelet-style volume holding `sa.json` under key 1 (KID); returns (volume, key 1, key 2,
    key 2's file content under KID_2)."""
    first, second = new_key(), new_key()
    first_content = Path(key_file(tmp_path, sensitive, first, token_uri, name="sa-1.json")).read_text()
    second_content = Path(key_file(tmp_path, sensitive, second, token_uri, kid=KID_2, name="sa-2.json")).read_text()
    volume = KubeletVolume(tmp_path / "secret-volume", {"sa.json": first_content})
    return volume, first, second, second_content


def test_a_rotated_key_file_signs_the_next_grant_assertion(google, upstream, start_relay, tmp_path, sensitive):
    volume, first, second, second_content = rotated_key_volume(tmp_path, sensitive, google.token_url)
    google.configure({EMAIL: {"keys": {KID: pem(first, False), KID_2: pem(second, False)}, "delegated_users": []}})
    relay, admin = start(start_relay, upstream, serviceAccountKeyFile=volume.path("sa.json"), scope=CLOUD_PLATFORM)
    bearer(relay.request("GET", "/x"))
    [before] = google.requests()
    assert (before["status"], before["header"]["kid"]) == (200, KID)
    volume.update({"sa.json": second_content})
    assert admin.request("POST", "/identities/gsa/refresh").status == 202
    records = wait_until(lambda: len(r := google.requests()) == 2 and r, 10, "the token request the refresh caused")
    after = records[1]
    assert (after["status"], after["header"]["kid"]) == (200, KID_2), after["reason"]
    wait_until(lambda: bearer(relay.request("GET", "/y")) == after["issued"], 10, "the new token on requests")


def test_a_rotated_key_file_signs_the_next_self_signed_token(google, upstream, start_relay, tmp_path, sensitive):
    volume, first, second, second_content = rotated_key_volume(tmp_path, sensitive, google.token_url)
    relay, admin = start(start_relay, upstream, serviceAccountKeyFile=volume.path("sa.json"), audience=PUBSUB_API)
    token = bearer(relay.request("GET", "/x"))
    sensitive.add("the first self-signed token's signature", token.rpartition(".")[2])
    assert verified_jwt(token, first)[0]["kid"] == KID
    volume.update({"sa.json": second_content})
    assert admin.request("POST", "/identities/gsa/refresh").status == 202
    rotated = wait_until(lambda: (t := bearer(relay.request("GET", "/y"))) != token and t, 10, "a token signed after the rotation")
    sensitive.add("the second self-signed token's signature", rotated.rpartition(".")[2])
    header, claims = verified_jwt(rotated, second)
    assert (header["kid"], claims["iss"], claims["aud"]) == (KID_2, EMAIL, PUBSUB_API)
    assert google.requests() == []


# ---------------------------------------------------------------------------------------------
# `check` and unusable key files.

UNUSABLE_KEY_FILES = {
    "an EC key": (dict(key="ec"), "the service account key's private_key is not a usable RSA private key "
                                  "(it is an EC P-256 key, not RSA (RS256))"),
    "a 1024-bit RSA key": (dict(key="rsa1024"), "the service account key's private_key is not a usable RSA private key "
                                                "(unsupported key: RSA keys must have 2048 to 16384 bits, this one has 1024)"),
    "a user's credentials": (dict(type="authorized_user"),
                             'not a service account key: its type is "authorized_user", not "service_account"'),
    "no client_email": (dict(client_email=None), "the service account key has no client_email"),
    "plain http to Google": (dict(token_uri="http://oauth2.googleapis.com/token"),
                             "the service account key's token_uri http://oauth2.googleapis.com/token is plain http:// "
                             "to a host that is not loopback"),
}


@pytest.mark.parametrize("case", sorted(UNUSABLE_KEY_FILES))
def test_check_refuses_an_unusable_key_file_naming_the_member_never_the_key(case, tmp_path, sensitive):
    changes, message = UNUSABLE_KEY_FILES[case]
    kind = changes.pop("key", "rsa")
    key = {"rsa": new_key, "rsa1024": lambda: new_key(1024), "ec": lambda: ec.generate_private_key(ec.SECP256R1())}[kind]()
    changes.setdefault("token_uri", "https://oauth2.googleapis.com/token")
    path = key_file(tmp_path, sensitive, key, **changes)
    identity = {"serviceAccountKeyFile": path, "scope": CLOUD_PLATFORM}
    config = write_config(tmp_path / "relay.json", relay_config(f"{LOOPBACK}:{free_port()}", [], identities={"gsa": identity}))
    result = run_cli("check", "--config", str(config))
    sensitive.add_output("check output", result.stdout + result.stderr)
    assert result.returncode == 1, result.stdout + result.stderr
    expected = f"$.identities.gsa.serviceAccountKeyFile: {message}"
    assert expected in result.stdout + result.stderr, result.stdout + result.stderr
    assert path in result.stdout + result.stderr
