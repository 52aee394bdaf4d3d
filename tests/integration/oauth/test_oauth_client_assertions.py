"""private_key_jwt and client_secret_jwt (RFC 7523 §2.2 and §3), against the scripted stub made
to check every client assertion as an authorization server does (client_assertions.py, with
jwcrypto: signature, alg, iss = sub = client id, aud, iat/exp at most 60 s apart, jti never
replayed), refusing a failing one with 401 invalid_client. And the token_type check: a token
that is neither Bearer nor DPoP is refused, not injected as Bearer.

(The same methods against a real server: test_oauth_glewlwyd.py.)"""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwcrypto import jwk

from deadlines import wait_until
from idp_processes import form, header_values
from idp_relay import assert_oauth_problem, bearer, oauth_route
from processes import free_port, relay_config, run_cli

pytestmark = pytest.mark.oauth

TRACE = ("--log-level", "trace")
JWT_SECRET = "jwt-secret +%/=&: of at least thirty-two bytes"


def new_key(kind: str, size: int = 2048):
    if kind == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=size)
    return ec.generate_private_key(ec.SECP256R1() if kind == "ec" else ec.SECP384R1())


def write_key(tmp_path, sensitive, key, name: str = "client-key.pem") -> str:
    """The key as PKCS#8 PEM in tmp_path; its base64 body is registered as sensitive."""
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path = tmp_path / name
    path.write_bytes(pem)
    sensitive.add(f"private key {name}", "".join(pem.decode().splitlines()[1:-1]))
    return str(path)


def public_jwk(key) -> dict:
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return jwk.JWK.from_pem(pem).export_public(as_dict=True)


def policy(stub, key=None, secret: str | None = None, audience: str | None = None, algs=None) -> dict:
    spec = {"client_id": stub.client_id, "audience": audience or stub.token_url}
    if secret is not None:
        spec["secret"] = secret
    else:
        spec["key"] = public_jwk(key)
    if algs:
        spec["algs"] = algs
    return spec


def private_key_identity(stub, key_path: str, **options) -> dict:
    return stub.identity(clientSecret=None, clientAuth="private_key_jwt", clientKeyFile=key_path, **options)


def accepted(stub, **match) -> list[dict]:
    return [r for r in stub.token_requests(**match) if r["status"] == 200]


def test_private_key_jwt_rs256_gets_a_token_the_idp_verified(stub_idp, upstream, start_relay, tmp_path, sensitive):
    key = new_key("rsa")
    stub_idp.script(client_assertion=policy(stub_idp, key, algs=["RS256"]))
    identity = private_key_identity(stub_idp, write_key(tmp_path, sensitive, key), clientKeyId="k1")
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity}, args=TRACE)
    token = bearer(relay.request("GET", "/x"))
    [record] = stub_idp.token_requests()
    assert record["status"] == 200, record.get("assertion")
    assert token == record["issued"]["access_token"]
    header, claims = record["assertion"]["header"], record["assertion"]["claims"]
    assert (header["alg"], header.get("kid"), header.get("typ")) == ("RS256", "k1", "JWT")
    assert claims["iss"] == claims["sub"] == stub_idp.client_id
    assert claims["aud"] in (stub_idp.token_url, [stub_idp.token_url])
    assert 0 < claims["exp"] - claims["iat"] <= 60
    fields = form(record)
    assert fields["grant_type"] == ["client_credentials"]
    assert "client_secret" not in fields
    assert header_values(record, "Authorization") == []


def test_private_key_jwt_es256_signs_a_new_assertion_for_each_refresh(stub_idp, upstream, start_relay, tmp_path,
                                                                      sensitive):
    key = new_key("ec")
    stub_idp.script(default={"kind": "token", "expires_in": 2, "refresh_token": "new"},
                    client_assertion=policy(stub_idp, key, algs=["ES256"]))
    relay = start_relay([oauth_route(upstream, "/", "orders")],
                        identities={"orders": private_key_identity(stub_idp, write_key(tmp_path, sensitive, key))})
    bearer(relay.request("GET", "/x"))
    wait_until(lambda: accepted(stub_idp, grant_type="refresh_token"), 8, "an accepted refresh with an assertion")
    records = stub_idp.token_requests()
    assert all(r["status"] == 200 for r in records), [r.get("assertion") for r in records]
    jtis = [r["assertion"]["claims"]["jti"] for r in records]
    assert len(set(jtis)) == len(jtis) >= 2
    assert [r["grant_type"] for r in records][:2] == ["client_credentials", "refresh_token"]
    assert form(records[1])["refresh_token"] == [records[0]["issued"]["refresh_token"]]


def test_ps256_and_the_issuer_as_audience_when_configured(stub_idp, upstream, start_relay, tmp_path, sensitive):
    key = new_key("rsa")
    issuer = "https://issuer.example.test/realms/relay"
    stub_idp.script(client_assertion=policy(stub_idp, key, audience=issuer, algs=["PS256"]))
    identity = private_key_identity(stub_idp, write_key(tmp_path, sensitive, key), clientAssertionAlg="PS256",
                                    issuer=issuer, clientAssertionAudience="issuer")
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity})
    bearer(relay.request("GET", "/x"))
    [record] = stub_idp.token_requests()
    assert record["status"] == 200, record.get("assertion")
    assert record["assertion"]["header"]["alg"] == "PS256"


def test_client_secret_jwt_sends_an_hs256_assertion_and_never_the_secret(stub_idp, upstream, start_relay, sensitive):
    sensitive.add("the client_secret_jwt secret", JWT_SECRET)
    stub_idp.script(client_assertion=policy(stub_idp, secret=JWT_SECRET))
    identity = stub_idp.identity(clientAuth="client_secret_jwt", clientSecret=JWT_SECRET)
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity}, args=TRACE)
    bearer(relay.request("GET", "/x"))
    [record] = stub_idp.token_requests()
    assert record["status"] == 200, record.get("assertion")
    assert record["assertion"]["header"]["alg"] == "HS256"
    assert "client_secret" not in form(record)
    assert header_values(record, "Authorization") == []
    leaked = "thirty-two" in record["body"]
    assert not leaked, "the client secret went on the wire"


def test_an_assertion_the_idp_cannot_verify_is_a_502_naming_invalid_client(stub_idp, upstream, start_relay, tmp_path,
                                                                           sensitive):
    stub_idp.script(client_assertion=policy(stub_idp, new_key("rsa")))  # the IdP knows another key
    identity = private_key_identity(stub_idp, write_key(tmp_path, sensitive, new_key("rsa")))
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": identity}, args=TRACE)
    resp = relay.request("GET", "/x")
    sensitive.add_output("problem body", resp.body)
    assert_oauth_problem(resp, 502, identity="orders", oauth_error="invalid_client")
    [record] = stub_idp.token_requests()
    assert "signature" in record["assertion"]["rejected"]


def test_every_token_command_signs_a_fresh_assertion(stub_idp, tmp_path, sensitive):
    """The stub refuses a replayed jti, so five accepted requests had five different ones."""
    key = new_key("ec")
    stub_idp.script(client_assertion=policy(stub_idp, key))
    identities = {"orders": private_key_identity(stub_idp, write_key(tmp_path, sensitive, key))}
    path = tmp_path / "relay.json"
    path.write_text(json.dumps(relay_config(f"127.0.0.1:{free_port()}", [oauth_route("http://127.0.0.1:9", "/", "orders")],
                                            identities=identities)))
    for _ in range(5):
        result = run_cli("token", "--config", str(path), *TRACE, "orders")
        sensitive.add_output("stderr of oauth-relay token", result.stderr)
        assert result.returncode == 0, result.stderr[-2000:]
        sensitive.add("a printed token", result.stdout.strip())
    records = stub_idp.token_requests()
    assert [r["status"] for r in records] == [200] * 5, [r.get("assertion") for r in records]
    assert len({r["assertion"]["claims"]["jti"] for r in records}) == 5


@pytest.mark.parametrize("token_type", ["mac", "N_A"])
def test_a_token_type_other_than_bearer_or_dpop_is_refused(stub_idp, upstream, start_relay, sensitive, token_type):
    stub_idp.script(default={"kind": "token", "expires_in": 3600, "token_type": token_type})
    relay = start_relay([oauth_route(upstream, "/", "orders")], identities={"orders": stub_idp.identity()})
    resp = relay.request("GET", "/x")
    sensitive.add_output("problem body", resp.body)
    doc = assert_oauth_problem(resp, 502, identity="orders")
    assert f'token_type "{token_type}"' in doc["detail"], doc


# ---------------------------------------------------------------------------------------------
# oauth-relay check: the key is read and checked, and never printed.

def check_identity(tmp_path, sensitive, identity: dict):
    path = tmp_path / "check.json"
    path.write_text(json.dumps({"identities": {"svc": {"tokenUrl": "https://idp.example.test/token", "clientId": "svc",
                                                       **identity}}}))
    result = run_cli("check", "--config", str(path))
    sensitive.add_output("oauth-relay check output", result.stdout + result.stderr)
    return result, result.stdout + result.stderr


def test_check_accepts_a_usable_key(tmp_path, sensitive):
    for kind, alg in [("rsa", "PS256"), ("ec", "ES256")]:
        key_path = write_key(tmp_path, sensitive, new_key(kind), f"{kind}.pem")
        result, out = check_identity(tmp_path, sensitive, {"clientAuth": "private_key_jwt", "clientKeyFile": key_path,
                                                           "clientAssertionAlg": alg})
        assert result.returncode == 0, out


@pytest.mark.parametrize("case", ["rsa-1024", "p-384", "rs256-on-ec", "public-key", "missing", "short-secret"])
def test_check_refuses_an_unusable_key_or_secret_and_prints_none(tmp_path, sensitive, case):
    identity = {"clientAuth": "private_key_jwt"}
    if case == "rsa-1024":
        identity["clientKeyFile"] = write_key(tmp_path, sensitive, new_key("rsa", 1024))
        expected = "1024"
    elif case == "p-384":
        identity["clientKeyFile"] = write_key(tmp_path, sensitive, new_key("p384"))
        expected = "P-256"
    elif case == "rs256-on-ec":
        identity.update(clientKeyFile=write_key(tmp_path, sensitive, new_key("ec")), clientAssertionAlg="RS256")
        expected = "does not fit"
    elif case == "public-key":
        public = new_key("rsa").public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo)
        (tmp_path / "public.pem").write_bytes(public)
        identity["clientKeyFile"] = str(tmp_path / "public.pem")
        expected = "private key"
    elif case == "missing":
        identity["clientKeyFile"] = str(tmp_path / "nowhere.pem")
        expected = "no such file"
    else:
        identity = {"clientAuth": "client_secret_jwt", "clientSecret": sensitive.add("short secret", "only-20-bytes-secret")}
        expected = "at least 32 bytes"
    result, out = check_identity(tmp_path, sensitive, identity)
    assert result.returncode == 1, out
    assert expected in out, out
    assert "$.identities.svc." in out, out
    assert "BEGIN" not in out, out
