"""Workload identity federation (issue 23): the relay sends a JWT the platform wrote to a file.

- `clientAuth: "client_assertion_file"` against the stub made a federating IdP
  (workload_identity.py): the test plays the cluster's OIDC issuer (its key, discovery and JWKS on
  loopback) and mints projected-token-like JWTs; the stub fetches the issuer's JWKS and checks each
  client assertion's signature, iss, sub, aud, exp, client_assertion_type, client_id, and that it is
  the current token (its jti). The file is rotated as kubelet does, and the next token request
  carries the new JWT, while traffic flows. A JWT past its exp is never sent: the identity fails
  naming the key, the file and the exp, and `check` warns of it.
- The token exchange of Google's workload identity federation: the platform token as
  `subject_token` from `subjectTokenFile`, every field of the exchange checked, re-read on rotation.
- Glewlwyd, a real server, given the client's JWK Set: an assertion the test signed with a key in
  it, read from `clientAssertionFile`, gets a token; after a rotation the next one does too.
Every relay logs at trace level; the leak scan finds no JWT (whole, or its signature) in its log."""

from __future__ import annotations

import base64
import json
import secrets
import time
from datetime import datetime, timezone

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwcrypto import jwk, jwt

from admin_client import log_records, start_with_admin
from deadlines import wait_until
from http_client import assert_problem
from idp_processes import form
from idp_relay import bearer, oauth_route
from processes import free_port, relay_config, run_cli, write_config
from rotating_files import KubeletVolume
from rotation_support import CHANGED, RELAY_ARGS, Traffic, force_token_request
from workload_identity import WorkloadIssuer

pytestmark = pytest.mark.oauth

SUBJECT = "system:serviceaccount:orders:relay"
AUDIENCE = "api://AzureADTokenExchange"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
GOOGLE_AUDIENCE = "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/pool/providers/cluster"


@pytest.fixture
def cluster():
    issuer = WorkloadIssuer()
    yield issuer
    issuer.close()


def claims(token: str) -> dict:
    """The claims of a JWT the test minted (read without checking: the stub checks)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def sensitive_jwt(sensitive, label: str, token: str) -> str:
    """Registers a JWT for the leak scan: whole, and its signature alone (no dots: 8 characters of it
    anywhere count)."""
    sensitive.add(label, token)
    sensitive.add(f"{label} (signature)", token.rsplit(".", 1)[1])
    return token


def workload_policy(cluster, stub, token: str) -> dict:
    return {"issuer": cluster.url, "subject": SUBJECT, "audience": AUDIENCE, "client_id": stub.client_id,
            "jti": claims(token)["jti"]}


def utc(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_projected_token_is_the_client_assertion_and_its_rotation_goes_with_the_next_request(
        cluster, stub_idp, upstream, start_relay, tmp_path, sensitive):
    tokens = [sensitive_jwt(sensitive, f"workload token {n}", cluster.token(SUBJECT, AUDIENCE)) for n in range(3)]
    volume = KubeletVolume(tmp_path / "tokens", {"idp-token": tokens[0]})
    stub_idp.script(workload_assertion=workload_policy(cluster, stub_idp, tokens[0]))
    identity = stub_idp.identity(clientSecret=None, clientAuth="client_assertion_file",
                                 clientAssertionFile=volume.path("idp-token"), scope="api://orders/.default")
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "orders")], identities={"orders": identity},
                                    args=RELAY_ARGS)
    bearer(relay.request("GET", "/first"))
    with Traffic(relay) as traffic:
        for token in tokens[1:]:
            volume.update({"idp-token": token})
            stub_idp.script(workload_assertion=workload_policy(cluster, stub_idp, token))
            record = force_token_request(admin, stub_idp)
            assert record["status"] == 200, record.get("workload")
            assert record["workload"]["claims"]["jti"] == claims(token)["jti"]
    traffic.assert_all_answered_200(at_least=20)
    records = stub_idp.token_requests()
    assert [r["status"] for r in records] == [200] * 3, [r.get("workload") for r in records]
    for record, token in zip(records, tokens):
        fields = form(record)
        assert fields == {"grant_type": ["client_credentials"], "client_id": [stub_idp.client_id],
                          "client_assertion_type": [ASSERTION_TYPE], "client_assertion": [token],
                          "scope": ["api://orders/.default"]}
        assert record["workload"]["header"]["kid"] == cluster.kid
        assert not any(k.lower() == "authorization" for k, _ in record["headers"])
    assert [(c["key"], c["file"]) for c in log_records(relay, CHANGED)] == [("clientAssertionFile", volume.path("idp-token"))] * 2


def test_an_expired_projected_token_fails_the_identity_naming_file_and_exp_and_sends_nothing(
        cluster, stub_idp, upstream, start_relay, tmp_path, sensitive):
    issued = int(time.time()) - 7200
    expired = sensitive_jwt(sensitive, "expired workload token", cluster.token(SUBJECT, AUDIENCE, lifetime=3600, issued=issued))
    volume = KubeletVolume(tmp_path / "tokens", {"idp-token": expired})
    path = volume.path("idp-token")
    reason = f"clientAssertionFile {path} holds a JWT that expired at {utc(issued + 3600)}"
    stub_idp.script(workload_assertion=workload_policy(cluster, stub_idp, expired))
    identity = stub_idp.identity(clientSecret=None, clientAuth="client_assertion_file", clientAssertionFile=path)

    config = write_config(tmp_path / "check.json", relay_config(f"127.0.0.1:{free_port()}", [oauth_route(upstream, "/", "orders")],
                                                                identities={"orders": identity}))
    checked = run_cli("check", "--config", str(config))
    sensitive.add_output("stderr of oauth-relay check", checked.stderr)
    assert checked.returncode == 0, checked.stderr
    assert f"WARNING: $.identities.orders.clientAssertionFile: {reason}" in checked.stderr

    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "orders")], identities={"orders": identity},
                                    args=RELAY_ARGS)
    resp = relay.request("GET", "/x")
    sensitive.add_output("problem body", resp.body)
    problem = assert_problem(resp, 503)
    assert reason in problem["detail"], problem
    status = next(i for i in admin.request("GET", "/identities").json()["identities"] if i["name"] == "orders")
    assert status["state"] == "failing", status
    assert status["lastError"] == {"code": "credential_expired",
                                   "description": f"{reason}, so no request was sent to the token endpoint"}
    failed = log_records(relay, "token request failed")
    assert failed and reason in failed[0]["error"], failed
    assert stub_idp.token_requests() == [], "an expired assertion must not be sent"

    # The platform writes the next token: the identity recovers without a reload.
    fresh = sensitive_jwt(sensitive, "fresh workload token", cluster.token(SUBJECT, AUDIENCE))
    volume.update({"idp-token": fresh})
    stub_idp.script(workload_assertion=workload_policy(cluster, stub_idp, fresh))
    assert admin.request("POST", "/identities/orders/refresh").status == 202  # not waiting for the backoff
    wait_until(lambda: relay.request("GET", "/y").status == 200, 10, "a token from the rotated assertion")
    [record] = stub_idp.token_requests()
    assert record["status"] == 200 and form(record)["client_assertion"] == [fresh]


def test_check_warns_when_an_assertion_file_goes_without_a_client_id(cluster, stub_idp, upstream, tmp_path, sensitive):
    """Entra refuses a client assertion without `client_id` (AADSTS900144); other platforms name
    the client in the assertion's `sub`, so it is a warning, not an error."""
    token = sensitive_jwt(sensitive, "workload token", cluster.token(SUBJECT, AUDIENCE))
    path = tmp_path / "idp-token"
    path.write_text(token)
    identity = stub_idp.identity(clientSecret=None, clientId=None, clientAuth="client_assertion_file", clientAssertionFile=str(path))
    config = write_config(tmp_path / "check.json", relay_config(f"127.0.0.1:{free_port()}", [oauth_route(upstream, "/", "orders")],
                                                                identities={"orders": identity}))
    checked = run_cli("check", "--config", str(config))
    sensitive.add_output("stderr of oauth-relay check", checked.stderr)
    assert checked.returncode == 0, checked.stderr
    warnings = [line for line in checked.stderr.splitlines() if line.startswith("oauth-relay: WARNING: $.identities.orders.clientId")]
    assert len(warnings) == 1 and warnings[0].startswith("oauth-relay: WARNING: $.identities.orders.clientId: not set"), checked.stderr


def test_google_style_token_exchange_takes_the_current_platform_token_as_subject(
        cluster, stub_idp, upstream, start_relay, tmp_path, sensitive):
    tokens = [sensitive_jwt(sensitive, f"platform token {n}", cluster.token(SUBJECT, GOOGLE_AUDIENCE)) for n in range(2)]
    volume = KubeletVolume(tmp_path / "tokens", {"token": tokens[0]})
    identity = {"tokenUrl": stub_idp.token_url, "grant": TOKEN_EXCHANGE, "subjectTokenFile": volume.path("token"),
                "subjectTokenType": JWT_TYPE, "audience": GOOGLE_AUDIENCE,
                "scope": "https://www.googleapis.com/auth/cloud-platform",
                "params": {"requested_token_type": ACCESS_TOKEN_TYPE}}
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "orders")], identities={"orders": identity},
                                    args=RELAY_ARGS)
    bearer(relay.request("GET", "/first"))
    with Traffic(relay) as traffic:
        volume.update({"token": tokens[1]})
        assert force_token_request(admin, stub_idp)["status"] == 200
    traffic.assert_all_answered_200(at_least=10)
    records = stub_idp.token_requests()
    assert len(records) == 2
    for record, token in zip(records, tokens):
        # Google's STS: exactly these fields, no client authentication.
        assert form(record) == {"grant_type": [TOKEN_EXCHANGE], "subject_token": [token], "subject_token_type": [JWT_TYPE],
                                "scope": ["https://www.googleapis.com/auth/cloud-platform"], "audience": [GOOGLE_AUDIENCE],
                                "requested_token_type": [ACCESS_TOKEN_TYPE]}
        assert not any(k.lower() == "authorization" for k, _ in record["headers"])
        assert claims(form(record)["subject_token"][0])["iss"] == cluster.url

    # An expired platform token is not exchanged; the token in hand keeps serving.
    expired = sensitive_jwt(sensitive, "expired platform token",
                            cluster.token(SUBJECT, GOOGLE_AUDIENCE, lifetime=60, issued=time.time() - 600))
    volume.update({"token": expired})
    assert admin.request("POST", "/identities/orders/refresh").status == 202
    wait_until(lambda: any(i["name"] == "orders" and i.get("lastError", {}).get("code") == "credential_expired"
                           for i in admin.request("GET", "/identities").json()["identities"]), 10,
               "the identity failing on the expired subject token")
    assert len(stub_idp.token_requests()) == 2, "nothing sent with an expired subject token"
    assert relay.request("GET", "/still").status == 200


def test_glewlwyd_accepts_an_assertion_file_signed_with_a_key_of_the_clients_jwks(start_glewlwyd, upstream, start_relay,
                                                                                  tmp_path, sensitive):
    idp = start_glewlwyd()
    key = jwk.JWK.from_pyca(ec.generate_private_key(ec.SECP256R1()))
    kid = key.thumbprint()
    idp.add_client("relay-federated", "private_key_jwt",
                   jwks={"keys": [{**key.export_public(as_dict=True), "kid": kid, "use": "sig", "alg": "ES256"}]})

    def assertion() -> str:
        """What the platform writes: iss = sub = the client id, aud = Glewlwyd's token endpoint, a
        new jti, and at most the 60 s Glewlwyd allows."""
        now = int(time.time())
        token = jwt.JWT(header={"alg": "ES256", "kid": kid, "typ": "JWT"},
                        claims={"iss": "relay-federated", "sub": "relay-federated", "aud": idp.token_url,
                                "iat": now, "exp": now + 50, "jti": secrets.token_urlsafe(16)})
        token.make_signed_token(key)
        return sensitive_jwt(sensitive, f"assertion for glewlwyd {now}", token.serialize())

    volume = KubeletVolume(tmp_path / "tokens", {"assertion": assertion()})
    identity = idp.identity("relay-federated", clientAuth="client_assertion_file", clientAssertionFile=volume.path("assertion"))
    relay, admin = start_with_admin(start_relay, [oauth_route(upstream, "/", "svc")], identities={"svc": identity},
                                    args=RELAY_ARGS)
    token = bearer(relay.request("GET", "/x"))
    sensitive.add("the token glewlwyd issued", token)
    assert idp.access_token_claims(token)["client_id"] == "relay-federated"
    assert idp.issued_to("relay-federated") == 1
    # Glewlwyd refuses a jti it has seen: only the rotated assertion can get the next token.
    volume.update({"assertion": assertion()})
    assert admin.request("POST", "/identities/svc/refresh").status == 202
    wait_until(lambda: idp.issued_to("relay-federated") == 2, 10, "a second token from the rotated assertion")
    second = wait_until(lambda: (t := bearer(relay.request("GET", "/y"))) != token and t, 10, "the second token on requests")
    sensitive.add("the second token glewlwyd issued", second)
    assert idp.access_token_claims(second)["client_id"] == "relay-federated"
    assert [c["key"] for c in log_records(relay, CHANGED)] == ["clientAssertionFile"]
