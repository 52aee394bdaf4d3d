"""The examples of the README's "Providers" section (Config/providers/*.json) and the worked
workload identity examples (Config/entra-workload-identity.json, ...): each passes
`oauth-relay check` and the schema, and the README shows each exactly as its file holds it.

- README.md marks an example with `<!-- example: PATH -->` on the line before its ```json block;
  the block must equal the file, and every file of EXAMPLES (which must name every file in
  Config/providers/) has exactly one block.
- `check` runs on a copy of each file in a temporary directory. Every absolute path the file
  names (/run/secrets/..., /var/run/secrets/...) must be in MATERIAL, which says what the path
  holds; the copy names a file made there instead: an RSA key (PEM), a self-signed certificate,
  a Google service account key (JSON), a JWT (a projected service account token), a secret.
  Every ${NAME} the file uses is set from SAMPLE_ENV, or for a file from FILE_ENV.
No servers: `oauth-relay check` subprocesses only, openssl for the key and certificate, jwcrypto
for the JWT.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest
from jwcrypto import jwk, jwt

from deadlines import scaled
from processes import REPO, require_relay_bin

README = REPO / "README.md"
CONFIG_DIR = REPO / "Config"
PROVIDERS_DIR = CONFIG_DIR / "providers"
SCHEMA = json.loads((CONFIG_DIR / "oauth-relay.schema.json").read_text())

# Every example the README shows, by path from the repository's root.
EXAMPLES = [
    "Config/providers/github-oauth-app.json",
    "Config/providers/github-app-installation.json",
    "Config/providers/google-user.json",
    "Config/providers/google-service-account.json",
    "Config/providers/entra-client-secret.json",
    "Config/providers/entra-certificate.json",
    "Config/entra-workload-identity.json",
    "Config/providers/okta.json",
    "Config/providers/auth0.json",
    "Config/providers/keycloak.json",
    "Config/providers/slack-user.json",
    "Config/google-workload-identity.json",
    "Config/kubernetes-projected-token.json",
]

# What each absolute path an example names holds.
MATERIAL = {
    "/run/secrets/github-app-private-key.pem": "rsa_key",
    "/run/secrets/google-service-account.json": "google_service_account",
    "/run/secrets/entra-client-key.pem": "rsa_key",
    "/run/secrets/entra-client-cert.pem": "certificate",
    "/run/secrets/keycloak-client-secret": "secret",
    "/run/secrets/localhost-cert.pem": "certificate",
    "/run/secrets/localhost-key.pem": "rsa_key",
}
# Sample values of the variables the examples name (no secret: test values).
SAMPLE_ENV = {
    "GITHUB_CLIENT_ID": "Ov23liSampleClientId",
    "GITHUB_CLIENT_SECRET": "sample-github-client-secret",
    "GOOGLE_CLIENT_ID": "123456789012-sample.apps.googleusercontent.com",
    "GOOGLE_CLIENT_SECRET": "sample-google-client-secret",
    "AZURE_TENANT_ID": "00000000-0000-0000-0000-000000000001",
    "AZURE_CLIENT_ID": "00000000-0000-0000-0000-000000000002",
    "AZURE_CLIENT_SECRET": "sample-entra-client-secret",
    "OKTA_DOMAIN": "acme.okta.example",
    "OKTA_CLIENT_ID": "0oasampleclientid",
    "OKTA_CLIENT_SECRET": "sample-okta-client-secret",
    "AUTH0_DOMAIN": "acme.eu.auth0.example",
    "AUTH0_CLIENT_ID": "sampleAuth0ClientId",
    "AUTH0_CLIENT_SECRET": "sample-auth0-client-secret",
    "SLACK_CLIENT_ID": "1111111111.2222222222",
    "SLACK_CLIENT_SECRET": "sample-slack-client-secret",
}
# Variables naming a file, and what it holds (the platform sets them, or the default path is used).
FILE_ENV = {
    "AZURE_FEDERATED_TOKEN_FILE": "jwt",
    "GCP_SUBJECT_TOKEN_FILE": "jwt",
    "KEYCLOAK_TOKEN_FILE": "jwt",
}

EXAMPLE_MARK = re.compile(r"^<!-- example: (\S+) -->\n```json\n(.*?)^```$", re.M | re.S)
LITERAL_PATH = re.compile(r'"((?:/var)?/run/secrets/[^"]*)"')
REFERENCE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")


def readme_examples() -> list[tuple[str, str]]:
    """(path, text) of every marked example block of the README, in order."""
    return [(path, text) for path, text in EXAMPLE_MARK.findall(README.read_text())]


# ---------------------------------------------------------------------------------------------
# The files the examples name, made once.

@pytest.fixture(scope="module")
def material(tmp_path_factory) -> dict[str, Path]:
    """A file of each kind MATERIAL and FILE_ENV name."""
    directory = tmp_path_factory.mktemp("provider-material")
    key, cert = directory / "rsa-key.pem", directory / "certificate.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True, timeout=scaled(30))
    account = directory / "google-service-account.json"
    account.write_text(json.dumps({
        "type": "service_account", "project_id": "sample-project", "private_key_id": "0123456789abcdef",
        "private_key": key.read_text(), "client_email": "relay@sample-project.iam.gserviceaccount.com",
        "client_id": "100000000000000000001", "token_uri": "https://oauth2.googleapis.com/token"}))
    # A projected service account token as the kubelet writes it: RS256, an audience, an hour.
    signer = jwk.JWK.from_pem(key.read_bytes())
    now = int(time.time())
    token = jwt.JWT(header={"alg": "RS256", "kid": signer.thumbprint()},
                    claims={"iss": "https://kubernetes.default.svc.cluster.local", "aud": ["api://AzureADTokenExchange"],
                            "sub": "system:serviceaccount:orders:orders-relay", "iat": now, "nbf": now, "exp": now + 3600})
    token.make_signed_token(signer)
    projected = directory / "projected-token"
    projected.write_text(token.serialize())
    secret = directory / "secret"
    secret.write_text("sample-secret-from-a-file\n")
    return {"rsa_key": key, "certificate": cert, "google_service_account": account, "jwt": projected, "secret": secret}


def materialised(example: str, material: dict[str, Path], directory: Path) -> tuple[Path, dict[str, str]]:
    """A copy of `example` in `directory` naming the material instead of the platform's paths,
    and the environment `check` needs for it."""
    text = (REPO / example).read_text()
    for path in LITERAL_PATH.findall(text):
        assert path in MATERIAL, f"{example} names {path}: say in MATERIAL what it holds"
        text = text.replace(f'"{path}"', json.dumps(str(material[MATERIAL[path]])))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for name, default in REFERENCE.findall(text):
        if name in FILE_ENV:
            env[name] = str(material[FILE_ENV[name]])
        else:
            assert name in SAMPLE_ENV, f"{example} names ${{{name}}}: give it a sample value in SAMPLE_ENV or FILE_ENV"
            env[name] = SAMPLE_ENV[name]
    copy = directory / Path(example).name
    copy.write_text(text)
    return copy, env


# ---------------------------------------------------------------------------------------------
# The README shows the files.

def test_every_provider_file_is_an_example():
    files = {f"Config/providers/{path.name}" for path in PROVIDERS_DIR.glob("*.json")}
    assert files <= set(EXAMPLES), f"not in EXAMPLES: {sorted(files - set(EXAMPLES))}"
    assert all((REPO / example).is_file() for example in EXAMPLES), [e for e in EXAMPLES if not (REPO / e).is_file()]


def test_the_readme_shows_every_example_once():
    shown = [path for path, _ in readme_examples()]
    assert sorted(shown) == sorted(EXAMPLES), (
        f"missing from the README: {sorted(set(EXAMPLES) - set(shown))}; "
        f"marked but not listed here: {sorted(set(shown) - set(EXAMPLES))}; shown twice: "
        f"{sorted({p for p in shown if shown.count(p) > 1})}")


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_readme_copy_equals_the_file(example):
    blocks = [text for path, text in readme_examples() if path == example]
    assert blocks, f"the README has no block marked <!-- example: {example} -->"
    assert blocks[0] == (REPO / example).read_text(), f"the README's copy of {example} differs from the file"


# ---------------------------------------------------------------------------------------------
# Each example is a valid configuration.

@pytest.mark.parametrize("example", EXAMPLES)
def test_the_example_validates_against_the_schema(example):
    errors = [f"{e.json_path}: {e.message}" for e in jsonschema.Draft202012Validator(SCHEMA)
              .iter_errors(json.loads((REPO / example).read_text()))]
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_example_passes_check(example, material, tmp_path):
    config, env = materialised(example, material, tmp_path)
    result = subprocess.run([str(require_relay_bin()), "check", "--config", str(config)], capture_output=True, text=True,
                            env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, timeout=scaled(15))
    assert result.returncode == 0, result.stdout + result.stderr
    assert ": ok (" in result.stdout, result.stdout + result.stderr
