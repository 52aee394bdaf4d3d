"""Config/oauth-relay.schema.json against the decoder (Sources/Config) and the examples in Config/.

- Every Config/*.json but the schema validates against the schema (jsonschema, draft 2020-12) and
  passes `oauth-relay check` with the environment variables it names set to sample values.
- Schema and decoder agree, read from the sources: the keys of every object the schema describes
  equal the `knownKeys` list of the Swift function that decodes it (`topLevelKeys`, `routeKeys`,
  `identityKeys`, the limits tables, `TLSSettings`/`TLSListener.knownKeys`, the inline lists), the
  grant names, `clientAuth` values and `…File` secrets too. Adding a key on one side only fails here.
- Schema and decoder agree, at run time: for every key the schema allows, a minimal config using it
  is valid for the schema and passes `check` (`$schema` included: both accept it, so the examples
  name their schema); configs both must reject (an unknown key in each object, broken values) fail
  both.
No servers: only `oauth-relay check` subprocesses, openssl for one self-signed certificate and
jwcrypto for one signed JWT (the workload identity examples read it as the platform's token).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest
from jwcrypto import jwk, jwt

from deadlines import scaled
from processes import REPO, STORE_KEY, require_relay_bin

CONFIG_DIR = REPO / "Config"
SCHEMA_PATH = CONFIG_DIR / "oauth-relay.schema.json"
SWIFT_CONFIG = REPO / "Sources" / "Config"
EXAMPLES = sorted(path for path in CONFIG_DIR.glob("*.json") if path != SCHEMA_PATH)
# The common cases of issue 5 ("Config ergonomics"), each with an example file.
REQUIRED_EXAMPLES = {"demo.json", "sidecar.json", "legacy-password.json", "token-exchange.json",
                     "dev-proxy-https.json", "private-key-jwt.json", "google-service-account.json", "github-app.json"}

TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt"

# Files the sample configs name by relative path (resolved against the config's directory).
SECRET_FILE, CERT_FILE, KEY_FILE, STORE_KEY_FILE = "secret.txt", "cert.pem", "key.pem", "store.key"
# A Google service-account key file (JSON, its private key an RSA key made by openssl).
SA_KEY_FILE = "service-account.json"
# A GitHub App's key: RSA (its App JWT is RS256), PEM (the service account's key serves).
APP_KEY_FILE = "app-key.pem"
# A platform's signed token (a projected service account token), for the workload identity examples.
JWT_FILE = "projected-token.jwt"
# client_secret_jwt signs with HS256, whose key must be at least 32 bytes (RFC 7518 §3.2).
JWT_SECRET = "sample-client-secret-of-32-bytes-or-more"
JWT_SECRET_FILE = "jwt-secret.txt"
# forward.proxyAuthFile: user:password lines, 0600 (the relay refuses a file group or others may open).
PROXY_AUTH_FILE = "proxy-auth"
# client_assertion_file: a JWT the platform wrote (unsigned here: the signature is the IdP's to check).
ASSERTION_FILE = "assertion.jwt"
ASSERTION = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJjbHVzdGVyIiwiZXhwIjo0MDAwMDAwMDAwfQ.c2lnbmF0dXJl"


# ---------------------------------------------------------------------------------------------
# Running `check`.

@pytest.fixture(scope="module")
def material(tmp_path_factory) -> Path:
    """A directory with a secret file and a self-signed certificate and key (PEM)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    directory = tmp_path_factory.mktemp("config-material")
    (directory / SECRET_FILE).write_text("  sample-secret-value\n")
    (directory / JWT_SECRET_FILE).write_text(JWT_SECRET + "\n")
    (directory / ASSERTION_FILE).write_text(ASSERTION + "\n")
    (directory / STORE_KEY_FILE).write_text(base64.b64encode(bytes(32)).decode() + "\n")
    (directory / PROXY_AUTH_FILE).write_text("# tools on this machine\nci:sample-proxy-password\n")
    (directory / PROXY_AUTH_FILE).chmod(0o600)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", str(directory / KEY_FILE), "-out", str(directory / CERT_FILE), "-days", "2",
                    "-subj", "/CN=localhost"], check=True, capture_output=True, timeout=scaled(30))
    rsa_pem = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], check=True,
                             capture_output=True, text=True, timeout=scaled(30)).stdout
    (directory / SA_KEY_FILE).write_text(json.dumps({
        "type": "service_account", "project_id": "orders-project", "private_key_id": "sample-key-id", "private_key": rsa_pem,
        "client_email": "relay@orders-project.iam.gserviceaccount.com", "client_id": "113258942105700140798",
        "token_uri": "https://oauth2.googleapis.com/token"}, indent=2))
    (directory / APP_KEY_FILE).write_text(rsa_pem)
    signer = jwk.JWK.from_pem((directory / KEY_FILE).read_bytes())
    now = int(time.time())
    token = jwt.JWT(header={"alg": "ES256"}, claims={"iss": "https://kubernetes.default.svc.cluster.local",
                                                     "sub": "system:serviceaccount:orders:relay", "aud": "relay",
                                                     "iat": now, "exp": now + 86400})
    token.make_signed_token(signer)
    (directory / JWT_FILE).write_text(token.serialize())
    return directory


@pytest.fixture
def workdir(tmp_path, material) -> Path:
    for name in (SECRET_FILE, JWT_SECRET_FILE, ASSERTION_FILE, CERT_FILE, KEY_FILE, STORE_KEY_FILE, SA_KEY_FILE, APP_KEY_FILE,
                 PROXY_AUTH_FILE):
        shutil.copy(material / name, tmp_path / name)  # with its mode
    return tmp_path


def check(path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`oauth-relay check --config PATH` with only PATH and `env` in the environment."""
    return subprocess.run([str(require_relay_bin()), "check", "--config", str(path)], capture_output=True, text=True,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})}, cwd=path.parent,
                          stdin=subprocess.DEVNULL, timeout=scaled(15))


def check_config(workdir: Path, config: dict, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    path = workdir / "relay.json"
    path.write_text(json.dumps(config, indent=2))
    return check(path, env)


def output(result: subprocess.CompletedProcess) -> str:
    return result.stdout + result.stderr


# ---------------------------------------------------------------------------------------------
# The schema.

@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


@pytest.fixture(scope="module")
def validator(schema) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema)


def schema_errors(validator, instance) -> list[str]:
    return [f"{error.json_path}: {error.message}" for error in validator.iter_errors(instance)]


def resolve(schema: dict, node: dict) -> dict:
    """The node with its `$ref` (local, #/...) replaced by the target, the node's own keywords winning."""
    while "$ref" in node:
        target = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = {**target, **{key: value for key, value in node.items() if key != "$ref"}}
    return node


def schema_objects(schema: dict) -> dict[str, list[dict]]:
    """Every object the schema gives properties, by location (`$`, `$.routes[].tls`, `$.identities.*`):
    the schema nodes (several under oneOf/anyOf). Conditions (if/then/not/dependentSchemas) only
    constrain keys the properties already define, so they are not walked."""
    found: dict[str, list[dict]] = {}

    def walk(node: dict, location: str) -> None:
        node = resolve(schema, node)
        if "properties" in node:
            found.setdefault(location, []).append(node)
            for key, child in node["properties"].items():
                walk(child, f"{location}.{key}")
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], f"{location}.*")
        if isinstance(node.get("items"), dict):
            walk(node["items"], f"{location}[]")
        for keyword in ("anyOf", "oneOf", "allOf"):
            for child in node.get(keyword, []):
                walk(child, location)

    walk(schema, "$")
    return found


def schema_keys(schema: dict) -> dict[str, set[str]]:
    return {location: {key for node in nodes for key in node["properties"]}
            for location, nodes in schema_objects(schema).items()}


def schema_key_paths(schema: dict) -> set[str]:
    return {f"{location}.{key}" for location, keys in schema_keys(schema).items() for key in keys}


def property_schema(schema: dict, location: str, key: str) -> dict:
    nodes = [node for node in schema_objects(schema)[location] if key in node["properties"]]
    return resolve(schema, nodes[0]["properties"][key])


def enum_values(node: dict) -> set[str]:
    return {value for alternative in node.get("anyOf", [node]) for value in alternative.get("enum", [])}


def test_the_schema_is_a_valid_draft_2020_12_schema(schema):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_every_object_rejects_unknown_keys_and_every_key_is_described(schema):
    open_objects = [location for location, nodes in schema_objects(schema).items()
                    if any(node.get("additionalProperties") is not False for node in nodes)]
    assert not open_objects, f"objects without additionalProperties: false: {open_objects}"
    undescribed = sorted(f"{location}.{key}" for location, nodes in schema_objects(schema).items()
                         for node in nodes for key, child in node["properties"].items()
                         if "description" not in resolve(schema, child))
    assert not undescribed, f"keys without a description (editors show it): {undescribed}"


# ---------------------------------------------------------------------------------------------
# The decoder's key lists, read from Sources/Config/*.swift.

# The Swift function that decodes each object of the file, and where that object is in the schema.
DECODER_LOCATIONS = {
    "decodeRelayConfig": ["$"],
    "decodeLimits": ["$.limits"],
    "decodeTLSListener": ["$.listenTls"],
    "decodeForward": ["$.forward"],
    "decodeStore": ["$.store"],
    "decodeRoute": ["$.routes[]"],
    "decodeRouteMatch": ["$.routes[].match"],
    "decodeInjection": ["$.routes[].inject"],
    "decodeTLS": ["$.routes[].tls", "$.identities.*.tls", "$.store.tls", "$.routes[].inbound.tls"],
    "decodeIdentity": ["$.identities.*"],
    "decodeDPoP": ["$.identities.*.dpop"],
    "decodeResponseFields": ["$.identities.*.responseFields"],
    "decodeBrowserAccess": ["$.routes[].browser"],
    "decodeInbound": ["$.routes[].inbound"],
    "decodeAuto": ["$.auto"],
}


def swift_sources() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(SWIFT_CONFIG.glob("*.swift"))}


def literal_after(text: str, start: int) -> str:
    """The bracketed array literal beginning at text[start] == "[" (strings may hold brackets)."""
    assert text[start] == "[", text[start:start + 40]
    depth, index, in_string = 0, start, False
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return text[start:index + 1]
        index += 1
    raise AssertionError(f"unterminated array literal at {text[start:start + 60]!r}")


def strings_in(literal: str) -> list[str]:
    return re.findall(r'"((?:[^"\\]|\\.)*)"', literal)


def static_array(sources: dict[str, str], owner: str, name: str) -> list[str]:
    """`static let NAME = [...]` of type OWNER (`Self`: the one static of that name)."""
    declaration = re.compile(rf"static let {name}\s*(?::[^=]+)?=\s*\[")
    if owner == "Self":
        hits = [(text, match) for text in sources.values() for match in declaration.finditer(text)]
        assert len(hits) == 1, f"expected one `static let {name}`, found {len(hits)}"
        text, match = hits[0]
        return strings_in(literal_after(text, match.end() - 1))
    for text in sources.values():
        for owner_match in re.finditer(rf"\b(?:struct|enum|class|extension)\s+{owner}\b", text):
            match = declaration.search(text, owner_match.end())
            if match:
                return strings_in(literal_after(text, match.end() - 1))
    raise AssertionError(f"no `static let {name}` in {owner}")


def local_key_list(body: str, name: str) -> list[str]:
    """A local `let NAME = ...` before the ObjectReader: an array literal, or `a.map(\\.0) + b.map(\\.0)`
    over arrays of tuples whose first elements are the keys (the limits tables)."""
    matches = list(re.finditer(rf"\blet {name}\s*(?::[^=]+)?=\s*", body))
    assert matches, f"cannot find `let {name}`"
    expression_start = matches[-1].end()
    if body[expression_start] == "[":
        return strings_in(literal_after(body, expression_start))
    expression = body[expression_start:body.index("\n", expression_start)]
    tables = re.findall(r"(\w+)\.map\(\\\.0\)", expression)
    assert tables, f"cannot read the key list `let {name} = {expression.strip()}`"
    keys: list[str] = []
    for table in tables:
        table_match = list(re.finditer(rf"\blet {table}\s*(?::[^=]+)?=\s*\[", body))[-1]
        keys += re.findall(r'\(\s*"([^"]+)"', literal_after(body, table_match.end() - 1))
    return keys


def decoder_key_lists() -> dict[str, list[str]]:
    """{Swift function: its keys} for every `ObjectReader(..., knownKeys: LIST, in: ...)` in
    Sources/Config (`knownKeys: nil`, maps such as params and headers, take any key)."""
    sources = swift_sources()
    found: dict[str, list[str]] = {}
    reader = re.compile(r"ObjectReader\([^()]*?knownKeys:\s*(\[[^\]]*\]|[\w.]+)\s*,\s*in:")
    for text in sources.values():
        for match in reader.finditer(text):
            functions = list(re.finditer(r"\bfunc (\w+)", text[:match.start()]))
            assert functions, f"ObjectReader outside a function: {match.group(0)}"
            function, body = functions[-1].group(1), text[functions[-1].start():match.start()]
            expression = match.group(1)
            if expression == "nil":
                continue
            if expression.startswith("["):
                keys = strings_in(expression)
            elif "." in expression:
                keys = static_array(sources, *expression.split(".", 1))
            else:
                keys = local_key_list(body, expression)
            assert function not in found, f"{function} creates two ObjectReaders with key lists"
            assert keys and len(keys) == len(set(keys)), f"{function}: odd key list {keys}"
            found[function] = keys
    return found


def test_the_decoder_key_lists_are_all_read():
    lists = decoder_key_lists()
    assert set(lists) == set(DECODER_LOCATIONS), (
        "the functions decoding objects with a key list changed; map each to its place in the schema in "
        f"DECODER_LOCATIONS (new: {sorted(set(lists) - set(DECODER_LOCATIONS))}, "
        f"gone: {sorted(set(DECODER_LOCATIONS) - set(lists))})")
    # Spot checks that the reader sees the lists it should (the top level and the limits tables).
    assert {"listen", "admin", "routes", "identities", "listenTls"} <= set(lists["decodeRelayConfig"])
    assert {"maxHeaderBytes", "headerTimeoutSeconds", "dnsCacheSeconds"} <= set(lists["decodeLimits"])


def test_every_object_of_the_schema_is_decoded_by_the_relay(schema):
    described = {location for locations in DECODER_LOCATIONS.values() for location in locations}
    assert set(schema_keys(schema)) == described


@pytest.mark.parametrize("function", sorted(DECODER_LOCATIONS))
def test_schema_keys_equal_the_decoder_keys(schema, function):
    decoder = set(decoder_key_lists()[function])
    for location in DECODER_LOCATIONS[function]:
        allowed = schema_keys(schema).get(location, set())
        assert allowed == decoder, (
            f"{location} ({function}): decoder only: {sorted(decoder - allowed)}, "
            f"schema only: {sorted(allowed - decoder)}")


def test_every_secret_has_a_file_form_in_both(schema, validator):
    """Every `object.secret("X")` of the decoder: X and XFile in both, and not both at once."""
    secrets = re.findall(r'\.secret\("(\w+)"\)', swift_sources()["IdentityDecoding.swift"])
    assert {"clientSecret", "password", "refreshToken", "assertion", "subjectToken"} <= set(secrets)
    allowed = schema_keys(schema)["$.identities.*"]
    decoder = set(decoder_key_lists()["decodeIdentity"])
    for secret in secrets:
        assert {secret, secret + "File"} <= allowed & decoder, secret
        config = identity(**{secret: "inline", secret + "File": SECRET_FILE})
        assert any(f"{secret}File" in error for error in schema_errors(validator, config)), (
            f"the schema should reject {secret} together with {secret}File, as the decoder does")


def test_grant_names_and_client_auth_values_equal_the_decoder(schema):
    sources = swift_sources()
    grant_swift = sources["GrantTypeParsing.swift"]
    parse = grant_swift[grant_swift.index("static func parse(_ text: String) throws(InvalidValue) -> GrantType"):]
    parse = parse[:parse.index("default:")]
    cases = re.findall(r"^\s*case (.+?):\s*return", parse, re.M)
    decoder_grants = {name for case in cases for name in strings_in(case)}
    assert "client_credentials" in decoder_grants
    assert enum_values(property_schema(schema, "$.identities.*", "grant")) == decoder_grants

    client_auth_swift = sources["ClientAuthDecoding.swift"]
    client_auth = client_auth_swift[client_auth_swift.index("enum ClientAuthMethod"):]
    client_auth = client_auth[:client_auth.index("\n    }")]
    decoder_auths = {raw or name for name, raw in re.findall(r'^\s*case (\w+)(?:\s*=\s*"([^"]*)")?', client_auth, re.M)}
    assert decoder_auths == {"basic", "post", "none", "private_key_jwt", "client_secret_jwt", "client_assertion_file"}
    assert enum_values(property_schema(schema, "$.identities.*", "clientAuth")) == decoder_auths


# ---------------------------------------------------------------------------------------------
# Every key the schema allows, used in a minimal config: valid for the schema and for `check`.

TOKEN_URL = "https://idp.example.test/oauth2/token"
HTTP_UPSTREAM = "http://127.0.0.1:9001"
HTTPS_UPSTREAM = "https://api.example.test"
PIN = "sha256/" + base64.b64encode(bytes(range(32))).decode()
LISTEN_TLS = {"address": "127.0.0.1:18443", "certFile": CERT_FILE, "keyFile": KEY_FILE}
FORWARD = {"listen": "127.0.0.1:18181"}
STORE = {"path": "token-store", "key": STORE_KEY}
# `check` connects to nothing: any Redis address will do.
REDIS_STORE = {"redis": "redis://relay:${REDIS_PASSWORD}@127.0.0.1:6379/1", "key": STORE_KEY}
REDISS_STORE = {**REDIS_STORE, "redis": "rediss://relay:${REDIS_PASSWORD}@127.0.0.1:6380/1"}
# A route's inbound block: the caller's bearer JWTs of this issuer, for this audience.
INBOUND = {"issuer": "https://idp.example.test/realms/prod", "audiences": ["orders"]}
# Keys the schema allows that this build refuses, each with the reason `check` must give (none today).
REFUSED_BY_THIS_BUILD: dict[str, str] = {}


AUTHORIZE_URL = "https://idp.example.test/oauth2/authorize"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
DEVICE_URL = "https://idp.example.test/oauth2/device"


def route(**keys) -> dict:
    return {"routes": [{"upstream": HTTP_UPSTREAM, **keys}]}


def https_route(**tls) -> dict:
    return {"routes": [{"upstream": HTTPS_UPSTREAM, "tls": tls}]}


def identity(**keys) -> dict:
    return {"identities": {"svc": {"tokenUrl": TOKEN_URL, "clientId": "relay", **keys}}}


def routed(**route_keys) -> dict:
    return {**identity(), "routes": [{"upstream": HTTP_UPSTREAM, "identity": "svc", **route_keys}]}


def auto(**keys) -> dict:
    """A route with "identity": "auto" and the top-level auto object with `keys`."""
    return {"auto": keys, "routes": [{"upstream": HTTPS_UPSTREAM, "identity": "auto"}]}


def extension(grant: str, **keys) -> dict:
    return {"identities": {"svc": {"tokenUrl": TOKEN_URL, "grant": grant, **keys}}}


def github_app(**keys) -> dict:
    return {"identities": {"gh": {"grant": "github_app_installation", "appId": "12345", "installationId": "678",
                                  "clientKeyFile": APP_KEY_FILE, **keys}}}


def service_account(**keys) -> dict:
    return {"identities": {"gsa": {"serviceAccountKeyFile": SA_KEY_FILE, **keys}}}


def exchange(subject: dict | None = None, **keys) -> dict:
    subject = {"subjectToken": "subject-jwt"} if subject is None else subject
    return extension(TOKEN_EXCHANGE, **subject, subjectTokenType=JWT_TYPE, **keys)


LIMIT_SAMPLES = {"maxHeaderBytes": 8192, "maxHeaderCount": 50, "headerTimeoutSeconds": 0.5, "idleTimeoutSeconds": 30,
                 "upstreamConnectTimeoutSeconds": 1, "upstreamResponseTimeoutSeconds": 2.5,
                 "shutdownGraceSeconds": 5, "dnsCacheSeconds": 10, "maxIdleUpstreamConnections": 0,
                 "tokenWaitSeconds": 5, "requestBodyTimeoutSeconds": 10, "requestBodyMinBytesPerSecond": 100,
                 "maxResponseHeaderBytes": 16384, "maxConnections": 1000,
                 "upstreamResponseTotalSeconds": 120, "maxUpstreamConnections": 8, "upstreamQueueTimeoutSeconds": 2,
                 "credentialFilePollSeconds": 10}
TLS_SAMPLES = {"caFile": {"caFile": CERT_FILE}, "trust": {"caFile": CERT_FILE, "trust": "caFileOnly"}, "serverName": {"serverName": "api.example.test"},
               "pins": {"pins": [PIN]},
               "clientCert": {"clientCert": CERT_FILE, "clientKey": KEY_FILE},
               "clientKey": {"clientCert": CERT_FILE, "clientKey": KEY_FILE},
               "insecureSkipVerify": {"insecureSkipVerify": True}}

# Schema key path -> a minimal config using that key. Must cover every key the schema allows.
KEY_SAMPLES: dict[str, dict] = {
    "$.$schema": {"$schema": "oauth-relay.schema.json"},
    "$.listen": {"listen": "127.0.0.1:18180"},
    "$.admin": {"admin": "[::1]:19180"},
    "$.workers": {"workers": 2},
    "$.limits": {"limits": {}},
    **{f"$.limits.{key}": {"limits": {key: value}} for key, value in LIMIT_SAMPLES.items()},
    "$.identities": {"identities": {}},
    "$.routes": {"routes": []},
    "$.accessLog": {"accessLog": False},
    "$.metrics": {"metrics": False},
    "$.trustForwardedHeaders": {"trustForwardedHeaders": True},
    "$.via": {"via": "edge-relay"},
    "$.listenTls": {"listenTls": LISTEN_TLS},
    **{f"$.listenTls.{key}": {"listenTls": LISTEN_TLS} for key in LISTEN_TLS},
    "$.listenTls.clientCaFile": {"listenTls": {**LISTEN_TLS, "clientCaFile": CERT_FILE}},
    "$.listenTls.hosts": {"listenTls": {**LISTEN_TLS, "hosts": ["secure.example.test"]}},
    "$.hosts": {"hosts": ["orders.local", "*.dev.example.test", "[::1]"]},
    "$.forward": {"forward": FORWARD},
    "$.auto": auto(),
    "$.auto.allowedIssuers": auto(allowedIssuers=["https://idp.example.test/realms/a", "http://127.0.0.1:9000"]),
    "$.auto.clientName": auto(clientName="my relay"),
    "$.auto.clientAuth": auto(clientAuth="private_key_jwt"),
    "$.auto.initialAccessToken": auto(initialAccessToken="iat"),
    "$.auto.initialAccessTokenFile": auto(initialAccessTokenFile=SECRET_FILE),
    "$.auto.scope": auto(scope=["mcp.read", "mcp.write"]),
    "$.auto.grant": auto(grant="device_code"),
    "$.auto.allowRemoteUse": auto(allowRemoteUse=True),
    "$.auto.redirectUri": auto(redirectUri="http://localhost:8180/back"),
    "$.auto.loginTimeoutSeconds": auto(loginTimeoutSeconds=120),
    "$.forward.listen": {"forward": {"listen": "[::1]:18181"}},
    "$.forward.tunnelOthers": {"forward": {**FORWARD, "tunnelOthers": False}},
    "$.forward.proxyAuthFile": {"forward": {"listen": "0.0.0.0:18181", "proxyAuthFile": PROXY_AUTH_FILE}},
    "$.forward.connectPorts": {"forward": {**FORWARD, "connectPorts": [443, 8443]}},
    "$.forward.caDirectory": {"forward": {**FORWARD, "caDirectory": "/var/lib/oauth-relay/forward-ca"}},
    "$.store": {"store": STORE},
    "$.store.path": {"store": {**STORE, "path": "state/tokens-not-yet-created"}},
    "$.store.key": {"store": STORE},
    "$.store.keyFile": {"store": {"path": "token-store", "keyFile": STORE_KEY_FILE}},
    "$.store.redis": {"store": REDIS_STORE},
    "$.store.keyPrefix": {"store": {**REDIS_STORE, "keyPrefix": "orders-fleet:"}},
    "$.store.timeoutMilliseconds": {"store": {**REDIS_STORE, "timeoutMilliseconds": 50}},
    "$.store.tls": {"store": {**REDISS_STORE, "tls": {"caFile": CERT_FILE}}},
    **{f"$.store.tls.{key}": {"store": {**REDISS_STORE, "tls": tls}} for key, tls in TLS_SAMPLES.items()},
    **{f"$.store.{key}": {"store": {"redis": "redis://127.0.0.1:6379/1", "key": STORE_KEY, "username": "relay",
                                     "passwordFile": SECRET_FILE}} for key in ("username", "passwordFile")},
    "$.routes[].name": route(name="orders"),
    "$.routes[].match": route(match={}),
    "$.routes[].match.host": route(match={"host": "*.example.test"}),
    "$.routes[].match.pathPrefix": route(match={"pathPrefix": "/api/"}),
    "$.routes[].upstream": route(upstream="http://127.0.0.1:9001/v1"),
    "$.routes[].identity": routed(),
    "$.routes[].stripPrefix": route(match={"pathPrefix": "/api/"}, stripPrefix=True),
    "$.routes[].inject": routed(inject={}),
    "$.routes[].inject.header": routed(inject={"header": "X-Access-Token"}),
    "$.routes[].inject.prefix": routed(inject={"prefix": "Token"}),
    "$.routes[].inject.query": routed(inject={"query": "access_token"}),
    "$.routes[].setHeaders": route(setHeaders={"X-Tenant": "acme"}),
    "$.routes[].tls": https_route(),
    **{f"$.routes[].tls.{key}": https_route(**tls) for key, tls in TLS_SAMPLES.items()},
    "$.routes[].retryOnStatus": route(retryOnStatus=[401, 403]),
    "$.routes[].minTokenAgeForRetrySeconds": routed(minTokenAgeForRetrySeconds=2.5),
    "$.routes[].upgrade": route(upgrade=["websocket", "h2c"]),
    "$.routes[].browser": routed(browser={"allowOrigins": ["http://localhost:3000"]}),
    "$.routes[].browser.allowOrigins": route(browser={"allowOrigins": ["http://localhost:3000", "https://app.example.test"]}),
    "$.routes[].browser.allowMethods": routed(browser={"allowOrigins": ["http://localhost:3000"], "allowMethods": ["GET", "PUT"]}),
    "$.routes[].browser.allowHeaders": routed(browser={"allowOrigins": ["http://localhost:3000"], "allowHeaders": ["Content-Type"]}),
    "$.routes[].browser.exposeHeaders": routed(browser={"allowOrigins": ["http://localhost:3000"], "exposeHeaders": ["X-Request-Id"]}),
    "$.routes[].browser.maxAgeSeconds": routed(browser={"allowOrigins": ["http://localhost:3000"], "maxAgeSeconds": 60}),
    "$.routes[].inbound": route(inbound=INBOUND),
    "$.routes[].inbound.issuer": route(inbound={**INBOUND, "issuer": "http://127.0.0.1:9002/realms/dev"}),
    "$.routes[].inbound.audiences": route(inbound={**INBOUND, "audiences": ["orders", "api://orders"]}),
    "$.routes[].inbound.jwksUrl": route(inbound={**INBOUND, "jwksUrl": "https://idp.example.test/jwks?v=2"}),
    "$.routes[].inbound.algorithms": route(inbound={**INBOUND, "algorithms": ["ES256", "EdDSA"]}),
    "$.routes[].inbound.requiredScopes": route(inbound={**INBOUND, "requiredScopes": ["orders.read", "api:write"]}),
    "$.routes[].inbound.clockSkewSeconds": route(inbound={**INBOUND, "clockSkewSeconds": 0}),
    "$.routes[].inbound.claimHeaders": route(inbound={**INBOUND, "claimHeaders": {"sub": "X-Forwarded-User", "groups": "X-Groups"}}),
    "$.routes[].inbound.stripAuthorization": route(inbound={**INBOUND, "stripAuthorization": True}),
    "$.routes[].inbound.maxTokens": route(inbound={**INBOUND, "maxTokens": 50}),
    "$.routes[].inbound.tls": route(inbound={**INBOUND, "tls": {}}),
    "$.routes[].inbound.introspectionUrl": {**identity(clientSecret="s3cret"), "routes": [
        {"upstream": HTTP_UPSTREAM, "identity": "svc", "inbound": {**INBOUND, "introspectionUrl": "https://idp.example.test/introspect"}}]},
    "$.routes[].inbound.introspectionIdentity": {**identity(clientSecret="s3cret"), **route(inbound={**INBOUND, "introspectionIdentity": "svc"})},
    "$.routes[].inbound.introspectionCacheSeconds": {**identity(clientSecret="s3cret"), **route(
        inbound={**INBOUND, "introspectionIdentity": "svc", "introspectionCacheSeconds": 60})},
    "$.routes[].inbound.dpop": route(inbound={**INBOUND, "dpop": "required"}),
    "$.routes[].inbound.dpopWindowSeconds": route(inbound={**INBOUND, "dpopWindowSeconds": 30}),
    "$.routes[].inbound.dpopAlgorithms": route(inbound={**INBOUND, "dpopAlgorithms": ["ES256", "EdDSA"]}),
    **{f"$.routes[].inbound.tls.{key}": route(inbound={**INBOUND, "tls": tls}) for key, tls in TLS_SAMPLES.items()},
    "$.routes[].certificateBoundUpstream": {
        **identity(tls={"clientCert": CERT_FILE, "clientKey": KEY_FILE}),
        "routes": [{"upstream": HTTPS_UPSTREAM, "identity": "svc", "certificateBoundUpstream": True}]},
    "$.identities.*.tokenUrl": identity(tokenUrl="https://idp.example.test:8443/oauth2/token?tenant=acme"),
    "$.identities.*.grant": identity(grant="client_credentials"),
    "$.identities.*.clientId": identity(clientId="orders-relay"),
    "$.identities.*.clientSecret": identity(clientSecret="s3cret"),
    "$.identities.*.clientSecretFile": identity(clientSecretFile=SECRET_FILE),
    "$.identities.*.clientAuth": identity(clientSecret="s3cret", clientAuth="post"),
    "$.identities.*.clientKeyFile": identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE),
    "$.identities.*.clientAssertionFile": identity(clientAuth="client_assertion_file", clientAssertionFile=ASSERTION_FILE),
    "$.identities.*.clientKeyId": identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE, clientKeyId="k1"),
    "$.identities.*.clientAssertionAlg": identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE, clientAssertionAlg="ES256"),
    "$.identities.*.clientCertFile": identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE, clientCertFile=CERT_FILE),
    "$.identities.*.clientCertHeaders": identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE, clientCertFile=CERT_FILE,
                                                 clientCertHeaders=["x5t", "x5c"]),
    "$.identities.*.sendClientIdWithAssertion": identity(clientAuth="client_secret_jwt", clientSecret=JWT_SECRET,
                                                         sendClientIdWithAssertion=False),
    "$.identities.*.clientAssertionAudience": identity(clientAuth="client_secret_jwt", clientSecret=JWT_SECRET,
                                                       clientAssertionAudience="issuer", issuer="https://idp.example.test"),
    "$.identities.*.issuer": identity(issuer="https://idp.example.test/realms/dev"),
    "$.identities.*.dpop": identity(dpop=True),
    "$.identities.*.dpop.keyFile": identity(dpop={"keyFile": KEY_FILE}),
    "$.identities.*.dpop.alg": identity(dpop={"alg": "EdDSA"}),
    "$.identities.*.scope": identity(scope=["orders.read", "orders.write"]),
    "$.identities.*.audience": identity(audience="orders-api"),
    "$.identities.*.resource": identity(resource=["https://orders.internal/"]),
    "$.identities.*.params": identity(params={"tenant": "acme"}),
    "$.identities.*.headers": identity(headers={"X-Request-Source": "oauth-relay"}),
    "$.identities.*.username": identity(grant="password", username="svc", password="pw"),
    "$.identities.*.password": identity(grant="password", username="svc", password="pw"),
    "$.identities.*.passwordFile": identity(grant="password", username="svc", passwordFile=SECRET_FILE),
    "$.identities.*.refreshToken": identity(grant="refresh_token", refreshToken="seed"),
    "$.identities.*.refreshTokenFile": identity(grant="refresh_token", refreshTokenFile=SECRET_FILE),
    "$.identities.*.assertion": extension(JWT_BEARER, assertion="signed.jwt.assertion"),
    "$.identities.*.assertionFile": extension(JWT_BEARER, assertionFile=SECRET_FILE),
    "$.identities.*.subjectToken": exchange(),
    "$.identities.*.subjectTokenFile": exchange({"subjectTokenFile": SECRET_FILE}),
    "$.identities.*.subjectTokenType": exchange(),
    "$.identities.*.actorToken": exchange(actorToken="actor-jwt", actorTokenType=JWT_TYPE),
    "$.identities.*.actorTokenFile": exchange(actorTokenFile=SECRET_FILE, actorTokenType=JWT_TYPE),
    "$.identities.*.actorTokenType": exchange(actorToken="actor-jwt", actorTokenType=JWT_TYPE),
    "$.identities.*.subjectTokenFrom": extension(TOKEN_EXCHANGE, subjectTokenFrom="caller"),
    "$.identities.*.assertionFrom": extension(JWT_BEARER, assertionFrom="caller", scope="api://orders/.default"),
    "$.identities.*.maxCallers": extension(TOKEN_EXCHANGE, subjectTokenFrom="caller", maxCallers=500),
    "$.identities.*.tls": identity(tls={}),
    **{f"$.identities.*.tls.{key}": identity(tls=tls) for key, tls in TLS_SAMPLES.items()},
    "$.identities.*.allowInsecureTokenUrl": identity(tokenUrl="http://idp.example.test/token",
                                                     allowInsecureTokenUrl=True),
    "$.identities.*.defaultExpiresInSeconds": identity(defaultExpiresInSeconds=900),
    "$.identities.*.refreshSkewSeconds": identity(refreshSkewSeconds=30),
    "$.identities.*.responseFields": identity(responseFields={}),
    "$.identities.*.responseFields.token": identity(responseFields={"token": "accessToken"}),
    "$.identities.*.responseFields.expiry": identity(responseFields={"expiry": "expiresIn"}),
    "$.identities.*.responseFields.type": identity(responseFields={"type": "tokenType"}),
    "$.identities.*.responseFields.refreshToken": identity(responseFields={
        "token": ["authed_user.access_token", "access_token"], "refreshToken": ["authed_user.refresh_token", "refresh_token"]}),
    "$.identities.*.responseFields.scope": identity(responseFields={"scope": "grantedScope"}),
    "$.identities.*.responseFields.typeValues": identity(responseFields={"typeValues": {"bot": "Bearer", "user": "bearer"}}),
    "$.identities.*.authorizationUrl": identity(grant="authorization_code", authorizationUrl=AUTHORIZE_URL),
    "$.identities.*.redirectUri": identity(grant="authorization_code", authorizationUrl=AUTHORIZE_URL,
                                           redirectUri="http://localhost:8180/login/callback"),
    "$.identities.*.jwksUrl": identity(grant="authorization_code", authorizationUrl=AUTHORIZE_URL, scope="openid",
                                       issuer="https://idp.example.test", jwksUrl="https://idp.example.test/jwks"),
    "$.identities.*.deviceAuthorizationUrl": identity(grant="device_code", deviceAuthorizationUrl=DEVICE_URL),
    "$.identities.*.revocationUrl": identity(grant="device_code", deviceAuthorizationUrl=DEVICE_URL,
                                             revocationUrl="https://idp.example.test/revoke"),
    "$.identities.*.loginTimeoutSeconds": identity(grant="device_code", deviceAuthorizationUrl=DEVICE_URL, loginTimeoutSeconds=120),
    "$.identities.*.allowRemoteUse": identity(grant="device_code", deviceAuthorizationUrl=DEVICE_URL, allowRemoteUse=True),
    "$.identities.*.appId": github_app(appId=12345),
    "$.identities.*.installationId": github_app(installationId=678),
    "$.identities.*.githubApiUrl": github_app(githubApiUrl="https://github.example.test/api/v3"),
    "$.identities.*.repositories": github_app(repositories=["docs", "hello-world"]),
    "$.identities.*.repositoryIds": github_app(repositoryIds=[1296269]),
    "$.identities.*.permissions": github_app(permissions={"contents": "read", "pull_requests": "write"}),
    "$.identities.*.serviceAccountKeyFile": service_account(grant="client_credentials", scope=CLOUD_PLATFORM),
    "$.identities.*.serviceAccountSubject": service_account(scope=CLOUD_PLATFORM, serviceAccountSubject="admin@example.test"),
    "$.identities.*.selfSignedJwt": service_account(scope=CLOUD_PLATFORM, selfSignedJwt=True),
    "$.identities.*.authorizationParams": identity(grant="authorization_code", authorizationUrl=AUTHORIZE_URL,
                                                   authorizationParams={"access_type": "offline", "prompt": "consent"}),
}

# Other accepted forms worth pinning down: the alternatives of anyOf/oneOf and ${...} references.
OTHER_SAMPLES: dict[str, tuple[dict, dict[str, str]]] = {
    "the smallest route": (route(), {}),
    "the smallest identity": (identity(), {}),
    "a route with identity auto and no auto object": (route(identity="auto"), {}),
    "admin null (no admin listener)": ({"admin": None}, {}),
    "forward null (no forward proxy)": ({"forward": None}, {}),
    "a forward proxy on localhost, port 0, intercepting a route's host": (
        {"forward": {"listen": "localhost:0"}, **routed(match={"host": "api.example.test"})}, {}),
    "a forward proxy from the environment": ({"forward": {"listen": "${FORWARD_LISTEN}", "caDirectory": "${STATE}/forward-ca"}},
                                             {"FORWARD_LISTEN": "127.0.0.1:18181", "STATE": "/var/lib/oauth-relay"}),
    "IPv6 listen": ({"listen": "[::1]:18180"}, {}),
    "listen on every address": ({"listen": "0.0.0.0:18180"}, {}),
    "scope as a string, resource as one URI": (identity(scope="a b", resource="urn:example:orders"), {}),
    "bare token (empty prefix)": (routed(inject={"header": "X-Token", "prefix": ""}), {}),
    "IPv6 upstream and exact IPv6 host": (route(upstream="http://[::1]:9001", match={"host": "[::1]"}), {}),
    "uppercase scheme": (route(upstream="HTTP://127.0.0.1:9001"), {}),
    "device_code as its URN": (identity(grant="urn:ietf:params:oauth:grant-type:device_code", deviceAuthorizationUrl=DEVICE_URL), {}),
    "no token store at all": ({"store": None}, {}),
    "endpoints discovered from the issuer": ({"identities": {"svc": {"issuer": "https://idp.example.test", "grant": "authorization_code",
                                                                     "clientId": "relay", "scope": "openid"}}}, {}),
    "token exchange from params": (
        extension(TOKEN_EXCHANGE, params={"subject_token": "t", "subject_token_type": JWT_TYPE}), {}),
    "public client with clientId": (identity(clientAuth="none"), {}),
    "client_assertion_file without client_id beside it": (identity(clientAuth="client_assertion_file", clientAssertionFile=ASSERTION_FILE,
                                                                 sendClientIdWithAssertion=False), {}),
    "a GitHub App by its client ID, on GitHub Enterprise Server over TLS": (
        github_app(appId="Iv23liAbCdEf01234567", githubApiUrl="https://github.example.test/api/v3",
                   tls={"caFile": CERT_FILE}, headers={"X-Team": "platform"}, refreshSkewSeconds=60), {}),
    "a GitHub App on a loopback API over plain http": (github_app(githubApiUrl="http://127.0.0.1:8080"), {}),
    "dpop off": (identity(dpop=False), {}),
    "nested response members, one path or several": (identity(responseFields={
        "token": ["authed_user.access_token", "access_token"], "expiry": "authed_user.expires_in",
        "type": "authed_user.token_type", "typeValues": {"user": "${USER_TOKEN_TYPE}"}}), {"USER_TOKEN_TYPE": "Bearer"}),
    "a token type mapped to DPoP with a DPoP key": (identity(dpop=True, responseFields={"typeValues": {"pop": "DPoP"}}), {}),
    "audience as an authorization parameter of an identity without audience": (
        identity(grant="authorization_code", authorizationUrl=AUTHORIZE_URL, authorizationParams={"audience": "https://api"}), {}),
    "a DPoP key file with its algorithm": (identity(dpop={"keyFile": KEY_FILE, "alg": "ES256"}), {}),
    "a service account with the jwt-bearer grant and a token URL": (
        service_account(grant=JWT_BEARER, scope=[CLOUD_PLATFORM], tokenUrl="https://oauth2.example.test/token"), {}),
    "a self-signed service account for an API": (service_account(audience="https://pubsub.googleapis.com/"), {}),
    "${...} wherever the schema constrains a string": ({
        "listen": "${LISTEN}", "admin": "127.0.0.1:${ADMIN_PORT}", "via": "${VIA}", "workers": 1,
        "listenTls": {"address": "${TLS_LISTEN:-127.0.0.1:18443}", "certFile": "${CERT}", "keyFile": KEY_FILE},
        "identities": {
            "svc": {"tokenUrl": "${TOKEN_URL}", "grant": "${GRANT}", "clientId": "${CLIENT_ID}",
                    "clientAuth": "${CLIENT_AUTH}", "clientSecret": "${CLIENT_SECRET}", "resource": "${RESOURCE}",
                    "tls": {"caFile": "${CA_FILE}", "serverName": "${SNI}", "pins": ["${PIN}"]}},
            "exchange": {"tokenUrl": TOKEN_URL, "grant": TOKEN_EXCHANGE, "subjectTokenFile": "${SUBJECT_FILE}",
                         "subjectTokenType": "${SUBJECT_TYPE}"},
        },
        "routes": [
            {"upstream": "${UPSTREAM}", "identity": "svc", "match": {"host": "${HOST}", "pathPrefix": "${PREFIX}"},
             "inject": {"header": "${TOKEN_HEADER}"}, "tls": {"serverName": "${SNI}"}},
            {"upstream": "${PLAIN_UPSTREAM:-http://127.0.0.1:9001}", "identity": "exchange",
             "match": {"pathPrefix": "/q/"}, "inject": {"query": "${QUERY_NAME}"}},
        ],
    }, {
        "LISTEN": "127.0.0.1:18180", "ADMIN_PORT": "19180", "VIA": "edge", "CERT": CERT_FILE,
        "TOKEN_URL": TOKEN_URL, "GRANT": "client_credentials", "CLIENT_ID": "relay", "CLIENT_AUTH": "post",
        "CLIENT_SECRET": "s3cret", "RESOURCE": "https://orders.internal/", "CA_FILE": CERT_FILE,
        "SNI": "api.example.test",
        "PIN": PIN, "SUBJECT_FILE": SECRET_FILE, "SUBJECT_TYPE": JWT_TYPE, "UPSTREAM": HTTPS_UPSTREAM,
        "HOST": "*.example.test", "PREFIX": "/api/", "TOKEN_HEADER": "X-Token", "QUERY_NAME": "access_token",
    }),
}

# Every grant the schema names, with what that grant needs.
GRANT_SAMPLES = {
    "client_credentials": identity(grant="client_credentials"),
    "password": identity(grant="password", username="svc", passwordFile=SECRET_FILE),
    "refresh_token": identity(grant="refresh_token", refreshTokenFile=SECRET_FILE),
    "authorization_code": identity(grant="authorization_code", authorizationUrl=AUTHORIZE_URL, refreshToken="seed"),
    "device_code": identity(grant="device_code", deviceAuthorizationUrl=DEVICE_URL),
    "urn:ietf:params:oauth:grant-type:device_code": identity(grant="urn:ietf:params:oauth:grant-type:device_code",
                                                             deviceAuthorizationUrl=DEVICE_URL),
    "github_app_installation": github_app(),
}
CLIENT_AUTH_SAMPLES = {
    "basic": identity(clientSecret="s3cret", clientAuth="basic"),
    "post": identity(clientSecretFile=SECRET_FILE, clientAuth="post"),
    "none": identity(clientAuth="none"),
    "private_key_jwt": identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE),
    "client_secret_jwt": identity(clientAuth="client_secret_jwt", clientSecretFile=JWT_SECRET_FILE),
    "client_assertion_file": identity(clientAuth="client_assertion_file", clientAssertionFile=ASSERTION_FILE),
}


def path_tokens(path: str) -> list[str]:
    """`$.routes[].tls.caFile` -> ["routes", "[]", "tls", "caFile"]."""
    return [key or "[]" for key, _ in re.findall(r"\.([^.\[]+)|(\[\])", path)]


def uses(config, tokens: list[str]) -> bool:
    """True when the config has a value at the schema key path (`*` any key, `[]` any element)."""
    if not tokens:
        return True
    head, rest = tokens[0], tokens[1:]
    if head == "[]":
        return isinstance(config, list) and any(uses(item, rest) for item in config)
    if head == "*":
        return isinstance(config, dict) and any(uses(value, rest) for value in config.values())
    return isinstance(config, dict) and head in config and uses(config[head], rest)


def test_every_schema_key_has_a_sample(schema):
    allowed = schema_key_paths(schema)
    assert set(KEY_SAMPLES) == allowed, (
        f"schema keys without a sample config here: {sorted(allowed - set(KEY_SAMPLES))}; "
        f"samples for keys the schema does not allow: {sorted(set(KEY_SAMPLES) - allowed)}")


def test_every_grant_and_client_auth_value_has_a_sample(schema):
    assert set(GRANT_SAMPLES) == enum_values(property_schema(schema, "$.identities.*", "grant"))
    assert set(CLIENT_AUTH_SAMPLES) == enum_values(property_schema(schema, "$.identities.*", "clientAuth"))


def assert_accepted_by_both(validator, workdir, config, env=None):
    errors = schema_errors(validator, config)
    assert not errors, f"the schema rejects {json.dumps(config)}:\n" + "\n".join(errors)
    result = check_config(workdir, config, env)
    assert result.returncode == 0, f"check rejects {json.dumps(config)}:\n{output(result)}"
    assert "unknown key" not in output(result)


@pytest.mark.parametrize("key_path", sorted(KEY_SAMPLES))
def test_a_key_the_schema_allows_is_accepted_by_the_decoder(validator, workdir, key_path):
    config = KEY_SAMPLES[key_path]
    assert uses(config, path_tokens(key_path)), f"the sample for {key_path} does not use it: {config}"
    env = {"REDIS_PASSWORD": "sample-redis-password"}
    if key_path not in REFUSED_BY_THIS_BUILD:
        return assert_accepted_by_both(validator, workdir, config, env)
    # Allowed by the schema, refused by this build with its reason (never an "unknown key").
    assert not schema_errors(validator, config), schema_errors(validator, config)
    result = check_config(workdir, config, env)
    assert result.returncode == 1
    reason = REFUSED_BY_THIS_BUILD[key_path]
    assert any(line.startswith(f"{key_path}: ") and reason in line for line in output(result).splitlines()), output(result)
    assert "unknown key" not in output(result)


@pytest.mark.parametrize("label", sorted(OTHER_SAMPLES))
def test_other_accepted_forms(validator, workdir, label):
    config, env = OTHER_SAMPLES[label]
    assert_accepted_by_both(validator, workdir, config, env)


@pytest.mark.parametrize("grant", sorted(GRANT_SAMPLES))
def test_every_grant_name_is_accepted(validator, workdir, grant):
    assert_accepted_by_both(validator, workdir, GRANT_SAMPLES[grant])


@pytest.mark.parametrize("auth", sorted(CLIENT_AUTH_SAMPLES))
def test_every_client_auth_is_accepted(validator, workdir, auth):
    assert_accepted_by_both(validator, workdir, CLIENT_AUTH_SAMPLES[auth])


# ---------------------------------------------------------------------------------------------
# What both reject.

def object_at(config, tokens: list[str], json_path: str = "$"):
    """The first object at the schema path in config, with its JSON path as `check` prints it."""
    if not tokens:
        return config, json_path
    head, rest = tokens[0], tokens[1:]
    if head == "[]":
        for index, item in enumerate(config):
            if uses(item, rest):
                return object_at(item, rest, f"{json_path}[{index}]")
    elif head == "*":
        for key, value in config.items():
            if uses(value, rest):
                return object_at(value, rest, f"{json_path}.{key}")
    else:
        return object_at(config[head], rest, f"{json_path}.{head}")
    raise AssertionError(f"nothing at {tokens} in {config}")


ALL_LOCATIONS = sorted({location for locations in DECODER_LOCATIONS.values() for location in locations})


@pytest.mark.parametrize("location", ALL_LOCATIONS)
def test_an_unknown_key_fails_the_schema_and_check(validator, workdir, location):
    sample_key = next(path for path in sorted(KEY_SAMPLES) if path.rsplit(".", 1)[0] == location)
    config = copy.deepcopy(KEY_SAMPLES[sample_key])
    target, json_path = object_at(config, path_tokens(location))
    target["bogusKey"] = True
    assert schema_errors(validator, config), f"the schema accepts an unknown key at {location}"
    result = check_config(workdir, config)
    assert result.returncode == 1, output(result)
    assert any(f"{json_path}.bogusKey" in line and 'unknown key "bogusKey"' in line
               for line in output(result).splitlines()), output(result)


@pytest.mark.parametrize("reference", ["./oauth-relay.schema.json", "oauth-relay.schema.json",
                                       "https://example.test/schemas/oauth-relay.schema.json", "${NOT_SET}"])
def test_a_schema_reference_in_the_file_is_accepted_by_both(validator, workdir, reference):
    """So the examples can name their schema and editors find it: any string, never resolved."""
    assert_accepted_by_both(validator, workdir, {"$schema": reference, **route()})


# (label, config, the JSON path `check` must name)
REJECTED_BY_BOTH = [
    ("typo in a top-level key", {"lisen": "127.0.0.1:8180"}, "$.lisen"),
    ("a schema reference that is no string", {"$schema": 1}, '$["$schema"]'),
    ("zero total response time", {"limits": {"upstreamResponseTotalSeconds": 0}}, "$.limits.upstreamResponseTotalSeconds"),
    ("listen without host", {"listen": "8180"}, "$.listen"),
    ("workers out of range", {"workers": 5000}, "$.workers"),
    ("zero timeout", {"limits": {"headerTimeoutSeconds": 0}}, "$.limits.headerTimeoutSeconds"),
    ("ftp upstream", route(upstream="ftp://127.0.0.1:9"), "$.routes[0].upstream"),
    ("route without upstream", {"routes": [{"name": "x"}]}, "$.routes[0].upstream"),
    ("pathPrefix without /", route(match={"pathPrefix": "api"}), "$.routes[0].match.pathPrefix"),
    ("header and query", routed(inject={"header": "X-Token", "query": "t"}), "$.routes[0].inject"),
    ("framing header set", route(setHeaders={"Transfer-Encoding": "chunked"}), "$.routes[0].setHeaders"),
    ("retry on a success", route(retryOnStatus=[200]), "$.routes[0].retryOnStatus[0]"),
    ("zero minimum token age", routed(minTokenAgeForRetrySeconds=0), "$.routes[0].minTokenAgeForRetrySeconds"),
    ("upgrade protocol with a version", route(upgrade=["websocket/13"]), "$.routes[0].upgrade[0]"),
    ("upgrade not a list", route(upgrade="websocket"), "$.routes[0].upgrade"),
    ("zero body rate", {"limits": {"requestBodyMinBytesPerSecond": 0}}, "$.limits.requestBodyMinBytesPerSecond"),
    ("bad pin", https_route(pins=["md5/abc"]), "$.routes[0].tls.pins[0]"),
    ("tls for an http upstream", {"routes": [{"upstream": HTTP_UPSTREAM, "tls": {}}]}, "$.routes[0].tls"),
    ("tls for an http token endpoint", identity(tokenUrl="http://127.0.0.1:9/token", tls={}), "$.identities.svc.tls"),
    ("clientCert without clientKey", https_route(clientCert=CERT_FILE), "$.routes[0].tls.clientKey"),
    ("unknown grant", identity(grant="client_credential"), "$.identities.svc.grant"),
    ("unknown clientAuth", identity(clientSecret="s", clientAuth="jwt"), "$.identities.svc.clientAuth"),
    ("basic without secret", identity(clientAuth="basic"), "$.identities.svc.clientAuth"),
    ("none with a secret", identity(clientAuth="none", clientSecret="s"), "$.identities.svc.clientAuth"),
    ("private_key_jwt without a key file", identity(clientAuth="private_key_jwt"), "$.identities.svc.clientAuth"),
    ("private_key_jwt with a secret", identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE, clientSecret="s"),
     "$.identities.svc.clientAuth"),
    ("client_secret_jwt without a secret", identity(clientAuth="client_secret_jwt"), "$.identities.svc.clientAuth"),
    ("a key file with basic", identity(clientSecret="s", clientKeyFile=KEY_FILE), "$.identities.svc.clientKeyFile"),
    ("client_assertion_file without its file", identity(clientAuth="client_assertion_file"), "$.identities.svc.clientAuth"),
    ("client_assertion_file with a secret", identity(clientAuth="client_assertion_file", clientAssertionFile=ASSERTION_FILE,
                                                     clientSecret="s"), "$.identities.svc.clientAuth"),
    ("an assertion file with basic", identity(clientSecret="s", clientAssertionFile=ASSERTION_FILE),
     "$.identities.svc.clientAssertionFile"),
    ("an assertion algorithm that is not allowed", identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE,
                                                            clientAssertionAlg="HS256"), "$.identities.svc.clientAssertionAlg"),
    ("the issuer audience without an issuer", identity(clientAuth="client_secret_jwt", clientSecret=JWT_SECRET,
                                                       clientAssertionAudience="issuer"), "$.identities.svc.clientAssertionAudience"),
    ("a certificate header that does not exist", identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE, clientCertFile=CERT_FILE,
                                                          clientCertHeaders=["x5u"]), "$.identities.svc.clientCertHeaders[0]"),
    ("no certificate header", identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE, clientCertFile=CERT_FILE,
                                       clientCertHeaders=[]), "$.identities.svc.clientCertHeaders"),
    ("a certificate header twice", identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE, clientCertFile=CERT_FILE,
                                            clientCertHeaders=["x5t", "x5t"]), "$.identities.svc.clientCertHeaders[1]"),
    ("certificate headers without a certificate", identity(clientAuth="private_key_jwt", clientKeyFile=KEY_FILE,
                                                           clientCertHeaders=["x5t"]), "$.identities.svc.clientCertHeaders"),
    ("a certificate file with client_secret_jwt", identity(clientAuth="client_secret_jwt", clientSecret=JWT_SECRET,
                                                           clientCertFile=CERT_FILE), "$.identities.svc.clientCertFile"),
    ("a certificate file with a GitHub App", github_app(clientCertFile=CERT_FILE), "$.identities.gh.clientCertFile"),
    ("sendClientIdWithAssertion with basic", identity(clientSecret="s", sendClientIdWithAssertion=False),
     "$.identities.svc.sendClientIdWithAssertion"),
    ("sendClientIdWithAssertion not a boolean", identity(clientAuth="client_secret_jwt", clientSecret=JWT_SECRET,
                                                         sendClientIdWithAssertion="no"), "$.identities.svc.sendClientIdWithAssertion"),
    ("a DPoP algorithm that is not allowed", identity(dpop={"alg": "HS256"}), "$.identities.svc.dpop.alg"),
    ("dpop neither a boolean nor an object", identity(dpop="yes"), "$.identities.svc.dpop"),
    ("certificateBoundUpstream not a boolean", routed(certificateBoundUpstream="yes"), "$.routes[0].certificateBoundUpstream"),
    ("an inbound issuer without audiences", route(inbound={"issuer": "https://idp.example.test"}), "$.routes[0].inbound.audiences"),
    ("HS256 for inbound tokens", route(inbound={**INBOUND, "algorithms": ["HS256"]}), "$.routes[0].inbound.algorithms[0]"),
    ("a plain-http inbound issuer off loopback", route(inbound={**INBOUND, "issuer": "http://idp.example.test"}),
     "$.routes[0].inbound.issuer"),
    ("an inbound clock skew of an hour", route(inbound={**INBOUND, "clockSkewSeconds": 3600}), "$.routes[0].inbound.clockSkewSeconds"),
    ("zero remembered inbound tokens", route(inbound={**INBOUND, "maxTokens": 0}), "$.routes[0].inbound.maxTokens"),
    ("secret inline and as file", identity(clientSecret="s", clientSecretFile=SECRET_FILE),
     "$.identities.svc.clientSecretFile"),
    ("client_credentials without clientId", {"identities": {"svc": {"tokenUrl": TOKEN_URL}}},
     "$.identities.svc.clientId"),
    ("password grant without username", identity(grant="password", password="p"), "$.identities.svc.username"),
    ("refresh_token grant without token", identity(grant="refresh_token"), "$.identities.svc.refreshToken"),
    ("username with client_credentials", identity(username="u"), "$.identities.svc.username"),
    ("subjectToken with client_credentials", identity(subjectToken="t", subjectTokenType=JWT_TYPE),
     "$.identities.svc.subjectToken"),
    ("token exchange without subject", extension(TOKEN_EXCHANGE), "$.identities.svc.subjectToken"),
    ("subjectToken without its type", extension(TOKEN_EXCHANGE, subjectToken="t"), "$.identities.svc.subjectTokenType"),
    ("jwt-bearer without assertion", extension(JWT_BEARER), "$.identities.svc.assertion"),
    ("grant_type in params", identity(params={"grant_type": "x"}), "$.identities.svc.params.grant_type"),
    ("identity name with a space", {"identities": {"my svc": identity()["identities"]["svc"]}},
     '$.identities["my svc"]'),
    ("resource with a fragment", identity(resource="https://orders.internal/#x"), "$.identities.svc.resource"),
    ("a GitHub App without its installation", {"identities": {"gh": {"grant": "github_app_installation", "appId": "1",
                                                                     "clientKeyFile": APP_KEY_FILE}}},
     "$.identities.gh.installationId"),
    ("a GitHub App with a token URL", github_app(tokenUrl=TOKEN_URL), "$.identities.gh.tokenUrl"),
    ("a GitHub App with a scope", github_app(scope="repo"), "$.identities.gh.scope"),
    ("a GitHub App named by its slug", github_app(appId="my-app"), "$.identities.gh.appId"),
    ("a repository with its owner", github_app(repositories=["octo/hello"]), "$.identities.gh.repositories[0]"),
    ("an empty repository list", github_app(repositoryIds=[]), "$.identities.gh.repositoryIds"),
    ("a permission level GitHub has not", github_app(permissions={"issues": "owner"}), "$.identities.gh.permissions.issues"),
    ("tls for an http GitHub API", github_app(githubApiUrl="http://127.0.0.1:8080", tls={}), "$.identities.gh.tls"),
    ("a GitHub App key with client_credentials", identity(installationId=678), "$.identities.svc.installationId"),
    ("store without a key", {"store": {"path": "token-store"}}, "$.store.key"),
    ("store without path or redis", {"store": {"key": STORE_KEY}}, "$.store.path"),
    ("tls with a redis:// store", {"store": {"redis": "redis://127.0.0.1:6379/1", "key": STORE_KEY, "tls": {"caFile": CERT_FILE}}},
     "$.store.tls"),
    ("a redis URL of another scheme", {"store": {"redis": "http://127.0.0.1:6379", "key": STORE_KEY}}, "$.store.redis"),
    ("a key prefix with a space", {"store": {"redis": "redis://127.0.0.1", "key": STORE_KEY, "keyPrefix": "a b"}},
     "$.store.keyPrefix"),
    ("a zero redis timeout", {"store": {"redis": "redis://127.0.0.1", "key": STORE_KEY, "timeoutMilliseconds": 0}},
     "$.store.timeoutMilliseconds"),
    ("store key inline and as file", {"store": {**STORE, "keyFile": STORE_KEY_FILE}}, "$.store.keyFile"),
    ("a service account without scope or audience", service_account(), "$.identities.gsa.scope"),
    ("a service account with scope and audience", service_account(scope=CLOUD_PLATFORM, audience="https://pubsub.googleapis.com/"),
     "$.identities.gsa.audience"),
    ("a service account with a clientId", service_account(scope=CLOUD_PLATFORM, clientId="c"), "$.identities.gsa.clientId"),
    ("a service account with the password grant", service_account(scope=CLOUD_PLATFORM, grant="password"), "$.identities.gsa.grant"),
    ("a self-signed JWT with a token URL", service_account(audience="https://pubsub.googleapis.com/", tokenUrl=TOKEN_URL),
     "$.identities.gsa.tokenUrl"),
    ("a self-signed JWT for a delegated user", service_account(audience="https://pubsub.googleapis.com/",
                                                               serviceAccountSubject="admin@example.test"),
     "$.identities.gsa.serviceAccountSubject"),
    ("an audience without a self-signed JWT", service_account(audience="https://pubsub.googleapis.com/", selfSignedJwt=False),
     "$.identities.gsa.selfSignedJwt"),
    ("a delegated user without a key file", identity(serviceAccountSubject="admin@example.test"),
     "$.identities.svc.serviceAccountSubject"),
    ("listenTls without keyFile", {"listenTls": {"address": "127.0.0.1:18443", "certFile": CERT_FILE}},
     "$.listenTls.keyFile"),
    ("a forward proxy without listen", {"forward": {"tunnelOthers": False}}, "$.forward.listen"),
    ("a forward proxy as a string", {"forward": "127.0.0.1:18181"}, "$.forward"),
    ("a forward proxy off loopback without proxyAuthFile", {"forward": {"listen": "0.0.0.0:18181"}}, "$.forward.proxyAuthFile"),
    ("tunnelOthers not a boolean", {"forward": {**FORWARD, "tunnelOthers": "no"}}, "$.forward.tunnelOthers"),
    ("no CONNECT port", {"forward": {**FORWARD, "connectPorts": []}}, "$.forward.connectPorts"),
    ("a CONNECT port twice", {"forward": {**FORWARD, "connectPorts": [443, 443]}}, "$.forward.connectPorts[1]"),
    ("a CONNECT port out of range", {"forward": {**FORWARD, "connectPorts": [70000]}}, "$.forward.connectPorts[0]"),
    ("CONNECT port 0", {"forward": {**FORWARD, "connectPorts": [0]}}, "$.forward.connectPorts[0]"),
    ("a relative CA directory", {"forward": {**FORWARD, "caDirectory": "forward-ca"}}, "$.forward.caDirectory"),
    ("a response member with an empty name", identity(responseFields={"token": "authed_user..access_token"}),
     "$.identities.svc.responseFields.token"),
    ("no response member path at all", identity(responseFields={"token": []}), "$.identities.svc.responseFields.token"),
    ("a token type mapped to MAC", identity(responseFields={"typeValues": {"user": "MAC"}}),
     "$.identities.svc.responseFields.typeValues.user"),
    ("Bearer mapped to another type", identity(responseFields={"typeValues": {"Bearer": "DPoP"}}),
     "$.identities.svc.responseFields.typeValues.Bearer"),
    ("state as an authorization parameter", identity(grant="authorization_code", authorizationUrl=AUTHORIZE_URL,
                                                     authorizationParams={"state": "fixed"}),
     "$.identities.svc.authorizationParams.state"),
    ("an authorization parameter that is no string", identity(grant="authorization_code", authorizationUrl=AUTHORIZE_URL,
                                                              authorizationParams={"max_age": 300}),
     "$.identities.svc.authorizationParams.max_age"),
    ("authorizationParams for a service", identity(clientSecret="s", authorizationParams={"prompt": "consent"}),
     "$.identities.svc.authorizationParams"),
    ("authorizationParams for a device login", identity(grant="device_code", deviceAuthorizationUrl=DEVICE_URL,
                                                        authorizationParams={"prompt": "consent"}),
     "$.identities.svc.authorizationParams"),
    ("audience in authorizationParams and as a key", identity(grant="authorization_code", authorizationUrl=AUTHORIZE_URL,
                                                              audience="a", authorizationParams={"audience": "b"}),
     "$.identities.svc.authorizationParams.audience"),
    ("auto.grant not a person's login", auto(grant="client_credentials"), "$.auto.grant"),
    ("auto.allowedIssuers http to a host not loopback", auto(allowedIssuers=["http://idp.example.test"]), "$.auto.allowedIssuers[0]"),
    ("auto.allowedIssuers empty", auto(allowedIssuers=[]), "$.auto.allowedIssuers"),
    ("auto.redirectUri with a device login", auto(grant="device_code", redirectUri="http://127.0.0.1:8180/cb"), "$.auto.redirectUri"),
    ("auto.initialAccessToken and its file", auto(initialAccessToken="a", initialAccessTokenFile=SECRET_FILE), "$.auto.initialAccessTokenFile"),
    ("an identity named auto", identity() | {"identities": {"auto": identity()["identities"]["svc"]}}, "$.identities.auto"),
]


@pytest.mark.parametrize("label", [label for label, _, _ in REJECTED_BY_BOTH])
def test_invalid_configs_fail_the_schema_and_check(validator, workdir, label):
    _, config, json_path = next(case for case in REJECTED_BY_BOTH if case[0] == label)
    assert schema_errors(validator, config), f"the schema accepts {json.dumps(config)}"
    result = check_config(workdir, config)
    assert result.returncode == 1, output(result)
    assert any(line.lstrip().startswith(json_path) for line in output(result).splitlines()), (
        f"no error at {json_path}:\n{output(result)}")


# ---------------------------------------------------------------------------------------------
# The files in Config/.

# Sample values for the variables the examples name ({secret}, {ca}, {key}, {jwt}, {service_account}: files made for
# the test).
EXAMPLE_ENV = {
    "IDP_TOKEN_URL": "https://idp.example.test/oauth2/token",
    "ORDERS_CLIENT_ID": "orders-relay",
    "ORDERS_CLIENT_SECRET": "sample-client-secret",
    "LEGACY_CLIENT_SECRET_FILE": "{secret}",
    "LEGACY_PASSWORD_FILE": "{secret}",
    "STS_TOKEN_URL": "https://sts.example.test/token",
    "SUBJECT_TOKEN_FILE": "{secret}",
    "DEV_IDP_TOKEN_URL": "https://idp.example.test/oauth2/token",
    "DEV_REFRESH_TOKEN_FILE": "{secret}",
    "STAGING_CA_FILE": "{ca}",
    "BILLING_TOKEN_URL": "https://idp.example.test/oauth2/token",
    "BILLING_CLIENT_ID": "billing-relay",
    "BILLING_CLIENT_KEY_FILE": "{key}",
    "PAYMENTS_TOKEN_URL": "https://idp.example.test/oauth2/token",
    "PAYMENTS_CLIENT_ID": "payments-relay",
    "PAYMENTS_CLIENT_KEY_FILE": "{key}",
    "PAYMENTS_DPOP_KEY_FILE": "{key}",
    "GITHUB_APP_ID": "12345",
    "GITHUB_INSTALLATION_ID": "678",
    "GITHUB_APP_KEY_FILE": "{app_key}",
    "GHES_APP_ID": "Iv23liAbCdEf01234567",
    "GHES_INSTALLATION_ID": "9",
    "GHES_APP_KEY_FILE": "{app_key}",
    "GOOGLE_SERVICE_ACCOUNT_KEY_FILE": "{service_account}",
    "AZURE_TENANT_ID": "00000000-0000-0000-0000-000000000001",
    "AZURE_CLIENT_ID": "00000000-0000-0000-0000-000000000002",
    "AZURE_FEDERATED_TOKEN_FILE": "{jwt}",
    "GCP_SUBJECT_TOKEN_FILE": "{jwt}",
    "KEYCLOAK_TOKEN_FILE": "{jwt}",
}
REFERENCE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")


def test_the_common_cases_have_examples():
    assert REQUIRED_EXAMPLES <= {path.name for path in EXAMPLES}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_every_config_file_validates_against_the_schema(validator, example):
    errors = schema_errors(validator, json.loads(example.read_text()))
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.name)
def test_every_example_passes_check(material, example):
    references = REFERENCE.findall(example.read_text())
    unset = sorted({name for name, default in references if not default and name not in EXAMPLE_ENV})
    assert not unset, f"{example.name} needs {unset}: add sample values to EXAMPLE_ENV"
    files = sorted({name for name, _ in references if name.endswith("_FILE") and name not in EXAMPLE_ENV})
    assert not files, f"{example.name}: give {files} a sample file (the default paths need not exist here)"
    env = {name: EXAMPLE_ENV[name].format(secret=material / SECRET_FILE, ca=material / CERT_FILE, key=material / KEY_FILE,
                                          service_account=material / SA_KEY_FILE, jwt=material / JWT_FILE,
                                          app_key=material / APP_KEY_FILE)
           for name, _ in references if name in EXAMPLE_ENV}
    result = check(example, env)
    assert result.returncode == 0, output(result)
    assert ": ok (" in result.stdout, output(result)
    if any(not default for _, default in references):
        result = check(example, {})
        assert result.returncode == 1 and "is not set" in output(result), output(result)


def examples_json() -> dict[str, dict]:
    return {path.name: json.loads(path.read_text()) for path in EXAMPLES}


def test_the_examples_show_what_their_names_say():
    files = examples_json()
    sidecar = files["sidecar.json"]
    assert {identity.get("grant", "client_credentials") for identity in sidecar["identities"].values()} == {
        "client_credentials"}
    legacy = next(iter(files["legacy-password.json"]["identities"].values()))
    assert legacy["grant"] == "password" and {"passwordFile", "clientSecretFile", "username"} <= set(legacy)
    exchanged = next(iter(files["token-exchange.json"]["identities"].values()))
    assert exchanged["grant"] == TOKEN_EXCHANGE and {"subjectTokenFile", "subjectTokenType"} <= set(exchanged)
    keyed = next(iter(files["private-key-jwt.json"]["identities"].values()))
    assert keyed["clientAuth"] == "private_key_jwt" and "clientKeyFile" in keyed and "clientSecret" not in keyed
    apps = files["github-app.json"]["identities"]
    assert {identity["grant"] for identity in apps.values()} == {"github_app_installation"}
    assert any("githubApiUrl" in identity for identity in apps.values())
    assert any({"repositories", "permissions"} <= set(identity) for identity in apps.values())
    google = files["google-service-account.json"]["identities"]
    assert {"grant": "client_credentials", "serviceAccountKeyFile": "${GOOGLE_SERVICE_ACCOUNT_KEY_FILE:-/run/secrets/sa.json}",
            "scope": CLOUD_PLATFORM}.items() <= google["gsa"].items(), "the contract's shape (CONFIG.md)"
    assert any("audience" in identity for identity in google.values()), "a self-signed JWT too"
    dev_route = files["dev-proxy-https.json"]["routes"][0]
    assert "https://" in dev_route["upstream"] and dev_route["tls"] and dev_route.get("identity")
    for name, config in files.items():
        assert config.get("$schema") == SCHEMA_PATH.name, f"{name}: name the schema for editors"
    forward = files["forward-proxy.json"]
    assert forward["forward"]["listen"].endswith("127.0.0.1:8181}")
    assert any(route.get("identity") and route.get("match", {}).get("host") for route in forward["routes"]), (
        "a route the forward proxy intercepts: a host and an identity")


def test_check_names_the_forward_listener_and_warns_of_routes_it_leaves_out(workdir):
    """`check` sums up the forward listener with the hosts it intercepts, and warns (exit 0) of a
    route with an identity on an IP address and of a forward proxy that intercepts nothing."""
    config = {"forward": FORWARD, **identity(clientSecret="s3cret"), "routes": [
        {"match": {"host": "api.example.test"}, "upstream": HTTPS_UPSTREAM, "identity": "svc"},
        {"match": {"host": "*.example.test"}, "upstream": HTTPS_UPSTREAM, "identity": "svc"},
        {"match": {"host": "10.0.0.5"}, "upstream": "https://10.0.0.5", "identity": "svc"}]}
    result = check_config(workdir, config)
    assert result.returncode == 0, output(result)
    assert "listen 127.0.0.1:8180, forward 127.0.0.1:18181 intercepting 2 hosts)" in result.stdout, output(result)
    assert result.stderr.count("WARNING") == 1, output(result)
    assert "$.routes[2].match.host: 10.0.0.5 is not intercepted by the forward proxy" in result.stderr, output(result)
    nothing = check_config(workdir, {"forward": FORWARD, **route()})
    assert nothing.returncode == 0, output(nothing)
    assert "$.forward: the forward proxy intercepts nothing: no route names match.host" in nothing.stderr, output(nothing)
    assert "forward 127.0.0.1:18181 intercepting 0 hosts" in nothing.stdout, output(nothing)
