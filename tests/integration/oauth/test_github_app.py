"""GitHub App installation tokens (`"grant": "github_app_installation"`) against a stub of GitHub's
REST API (github_api_stub.py) that checks every field GitHub documents: the path, `Accept`,
`X-GitHub-Api-Version`, a `User-Agent`, the App JWT (its RS256 signature with the App's public
key, which the test generates, `iss`, `iat`, `exp`) and the JSON body to the member. The token
goes upstream as `Authorization: Bearer ghs_…`, a new one is asked for before `expires_at`, GitHub
Enterprise Server's `/api/v3` prefix is kept, and GitHub's refusals show in `GET /identities`
with GitHub's own message, never the JWT or a token."""

from __future__ import annotations

import json
import os
import sys

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from deadlines import wait_until
from http_client import curl
from idp_processes import HERE, _IdP
from idp_relay import assert_oauth_problem, bearer, oauth_route, run_token_command, token_command_config
from processes import LOOPBACK, free_port

pytestmark = pytest.mark.oauth

APP_ID = "12345"
INSTALLATION = 678
DOCS = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"


class GitHubAPI(_IdP):
    """github_api_stub.py on a free loopback port."""
    name = "github api stub"

    def __init__(self, log_path):
        super().__init__(log_path)
        self.host = LOOPBACK

    def start(self) -> "GitHubAPI":
        self._spawn([sys.executable, str(HERE / "github_api_stub.py"), "--host", self.host, "--port", "0"], 10)
        return self

    def app(self, key, app_id: str = APP_ID, installations=(INSTALLATION,), **options) -> "GitHubAPI":
        """The App GitHub knows: its ID, the public half of `key`, its installations, and the
        stub's other entries (prefix, expected_body, expires_in, grantable_permissions, repositories)."""
        public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        self.control("PUT", "/_stub/app", {"app_id": app_id, "public_key": public.decode(),
                                          "installations": list(installations), **options})
        return self

    def requests(self) -> list[dict]:
        return self.control("GET", "/_stub/requests")["requests"]

    def issued(self) -> list[dict]:
        """The requests answered with a token."""
        return [r for r in self.requests() if r["status"] == 201]

    def sensitive_values(self) -> dict[str, str]:
        """Every token issued and every App JWT received (a JWT counts whole: its header repeats)."""
        values = {}
        for r in self.requests():
            if r["issued"].get("token"):
                values[f"installation token (request {r['n']})"] = r["issued"]["token"]
            if r["jwt"]:
                values[f"App JWT (request {r['n']})"] = r["jwt"]["compact"]
                values[f"App JWT signature (request {r['n']})"] = r["jwt"]["compact"].rpartition(".")[2]
        return values


@pytest.fixture
def github(request, tmp_path, sensitive):
    api = GitHubAPI(tmp_path / "github-api-stub.log")
    sensitive.add_source(lambda: api.sensitive_values() if api.running() else {})
    yield api.start()
    sensitive.values.update(api.sensitive_values())  # read while it still runs: after the relays' scan it is gone
    api.kill()


def app_key(tmp_path, sensitive, name: str = "app.private-key.pem"):
    """A new RSA key, written as GitHub hands an App's key out (PKCS#1 PEM); the key and its path."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption()).decode()
    assert pem.startswith("-----BEGIN RSA PRIVATE KEY-----")
    (tmp_path / name).write_text(pem)
    sensitive.add(f"App private key {name}", "".join(pem.splitlines()[1:-1]))
    return key, str(tmp_path / name)


def identity(api_url: str, key_path: str, **options) -> dict:
    return {"grant": "github_app_installation", "appId": APP_ID, "installationId": str(INSTALLATION),
            "clientKeyFile": key_path, "githubApiUrl": api_url, **options}


def header(record: dict, name: str) -> list[str]:
    return [v for k, v in record["headers"] if k.lower() == name.lower()]


def assert_a_documented_request(record: dict, path: str, body: dict | None, app_id: str = APP_ID) -> None:
    """Every field of a token request as GitHub documents it (the stub checked them too)."""
    assert record["problems"] == [], record["problems"]
    assert (record["method"], record["target"]) == ("POST", path)
    assert header(record, "Accept") == ["application/vnd.github+json"]
    assert header(record, "X-GitHub-Api-Version") == ["2022-11-28"]
    [agent] = header(record, "User-Agent")
    assert agent.startswith("oauth-relay/") and len(agent) > len("oauth-relay/"), agent
    if body is None:
        assert record["body"] == "" and header(record, "Content-Type") == []
    else:
        assert header(record, "Content-Type") == ["application/json"]
        assert json.loads(record["body"]) == body
    jwt = record["jwt"]
    assert jwt is not None, "the App JWT did not verify with the App's public key"
    assert jwt["header"]["alg"] == "RS256" and jwt["header"].get("typ", "JWT") == "JWT", jwt["header"]
    claims, received = jwt["claims"], record["time"]
    assert claims["iss"] == app_id
    assert received - 120 <= claims["iat"] <= received, (claims["iat"], received)
    assert claims["exp"] > received
    assert claims["exp"] - claims["iat"] <= 600


def test_an_installation_token_goes_upstream_and_a_new_one_comes_before_expires_at(github, upstream, start_relay,
                                                                                    tmp_path, sensitive):
    key, key_path = app_key(tmp_path, sensitive)
    body = {"repositories": ["hello-world"], "repository_ids": [1296269],
            "permissions": {"contents": "read", "issues": "write"}}
    github.app(key, expected_body=body, expires_in=4, grantable_permissions={"contents": "write", "issues": "write"},
               repositories=["hello-world", "docs"])
    gh = identity(github.url, key_path, repositories=["hello-world"], repositoryIds=[1296269],
                  permissions={"issues": "write", "contents": "read"})
    relay = start_relay([oauth_route(upstream, "/", "gh")], identities={"gh": gh})

    token = bearer(relay.request("GET", "/repos/octo/hello-world"))
    [first] = github.issued()
    assert token == first["issued"]["token"] and token.startswith("ghs_")
    assert_a_documented_request(first, f"/app/installations/{INSTALLATION}/access_tokens", body)

    # expires_at is 4 to 5 s away: the relay asks again before it, with a new App JWT.
    second = wait_until(lambda: github.issued()[1:2], 10, "a second installation token")[0]
    assert second["time"] < first["issued"]["expires_at_unix"], "the second token was asked for after the first expired"
    assert_a_documented_request(second, f"/app/installations/{INSTALLATION}/access_tokens", body)
    assert second["jwt"]["compact"] != first["jwt"]["compact"]
    wait_until(lambda: bearer(relay.request("GET", "/repos/octo/hello-world")) == second["issued"]["token"], 5,
               "requests to carry the second token")
    assert all(r["status"] == 201 for r in github.requests())


def test_github_enterprise_servers_api_prefix_and_the_apps_client_id(github, upstream, start_relay, tmp_path, sensitive):
    client_id = "Iv23liRelayTest00001"
    key, key_path = app_key(tmp_path, sensitive)
    github.app(key, app_id=client_id, prefix="/api/v3", expected_body=None)
    gh = identity(github.url + "/api/v3", key_path, appId=client_id)
    relay = start_relay([oauth_route(upstream, "/", "gh")], identities={"gh": gh})

    token = bearer(relay.request("GET", "/api/v3/user"))
    [record] = github.requests()
    assert token == record["issued"]["token"]
    assert_a_documented_request(record, f"/api/v3/app/installations/{INSTALLATION}/access_tokens", None, app_id=client_id)

    # `oauth-relay token` asks the same API on its own, and prints the token for scripts.
    config = token_command_config(tmp_path / "token.json", upstream, {"gh": gh})
    result = run_token_command(config, "gh", sensitive)
    assert result.returncode == 0, result.stderr
    latest = github.requests()[-1]
    assert result.stdout.strip() == latest["issued"]["token"]
    assert_a_documented_request(latest, f"/api/v3/app/installations/{INSTALLATION}/access_tokens", None, app_id=client_id)


def test_githubs_refusals_fail_the_identity_with_githubs_message(github, upstream, start_relay, tmp_path, sensitive):
    key, key_path = app_key(tmp_path, sensitive)
    _, other_key_path = app_key(tmp_path, sensitive, "other.private-key.pem")
    github.app(key, grantable_permissions={"contents": "write", "administration": "read"})
    identities = {
        "not-installed": identity(github.url, key_path, installationId=999),
        "too-much": identity(github.url, key_path, permissions={"administration": "write"}),
        "wrong-key": identity(github.url, other_key_path),
    }
    admin_port = free_port()
    relay = start_relay([oauth_route(upstream, f"/{name}/", name) for name in identities], identities=identities,
                        admin=f"{LOOPBACK}:{admin_port}")
    expected = {
        "not-installed": (404, "Not Found", "installation 999 is not the App's"),
        "too-much": (422, "The permissions requested are not granted to this installation.", "permission administration: write"),
        "wrong-key": (401, "A JSON web token could not be decoded", "the App JWT does not verify (InvalidJWSSignature)"),
    }
    for name, (status, message, rule) in expected.items():
        problem = assert_oauth_problem(relay.request("GET", f"/{name}/x"), 502, identity=name)
        sensitive.add_output(f"problem for {name}", json.dumps(problem))
        assert message in problem["detail"], problem
    # Each was refused for its one broken rule: the rest of the request was as GitHub documents it.
    rules = sorted(rule for r in github.requests() for rule in r["problems"])
    assert set(rules) == {rule for _, _, rule in expected.values()}, rules
    assert all(len(r["problems"]) == 1 for r in github.requests())
    bodies = {r["target"]: r["body"] for r in github.requests() if r["jwt"] and r["body"]}
    assert {t: json.loads(b) for t, b in bodies.items()} == {
        f"/app/installations/{INSTALLATION}/access_tokens": {"permissions": {"administration": "write"}}}

    resp = curl(f"http://{LOOPBACK}:{admin_port}/identities", timeout=5)
    assert resp.status == 200
    sensitive.add_output("GET /identities", resp.body)
    states = {i["name"]: i for i in json.loads(resp.body)["identities"]}
    for name, (status, message, _) in expected.items():
        state = states[name]
        assert state["state"] == "failing" and state["grant"] == "github_app_installation", state
        assert state["lastError"]["code"] == f"http_{status}", state
        description = state["lastError"]["description"]
        assert description.startswith(f"the token endpoint answered HTTP {status}: "), description
        assert f"GitHub's message \"{message}\"" in description, description
        assert f"(documentation: {DOCS})" in description, description


def test_a_rotated_app_key_signs_the_next_app_jwt(github, upstream, start_relay, tmp_path, sensitive):
    """The App's key file swapped as a Kubernetes Secret is (a rename over it): the next token request
    is signed with the new key, which is now the only one GitHub knows."""
    key, key_path = app_key(tmp_path, sensitive)
    github.app(key, expected_body=None)
    admin_port = free_port()
    relay = start_relay([oauth_route(upstream, "/", "gh")], identities={"gh": identity(github.url, key_path)},
                        admin=f"{LOOPBACK}:{admin_port}")
    first = bearer(relay.request("GET", "/x"))
    new_key, new_path = app_key(tmp_path, sensitive, "rotated.private-key.pem")
    os.replace(new_path, key_path)
    github.app(new_key, expected_body=None)
    assert curl(f"http://{LOOPBACK}:{admin_port}/identities/gh/refresh", "-X", "POST", timeout=5).status == 202
    [old, new] = wait_until(lambda: github.issued()[:2] if len(github.issued()) >= 2 else None, 10,
                            "a token asked for after the rotation")
    assert old["issued"]["token"] == first
    assert [r["status"] for r in github.requests()] == [201, 201], [r["problems"] for r in github.requests()]
    assert_a_documented_request(new, f"/app/installations/{INSTALLATION}/access_tokens", None)
    wait_until(lambda: bearer(relay.request("GET", "/x")) == new["issued"]["token"], 5, "requests to carry the new token")
