"""The authorization servers of the OAuth tests, as processes on loopback with a log file each:

- `DjangoIdP`: django-oauth-toolkit (idp_django_server.py), the real server the happy paths run
  against. Its applications and users get credentials generated per run (secrets and passwords
  hold characters that must be form-urlencoded: " +%/=&:"); they are kept here, never printed.
  Besides the service clients it has the interactive ones (authorization code with PKCE, public
  and confidential; device code) and a person who logs in to them.
- `StubIdP`: idp_stub.py, the scripted token endpoint for the faults.

Both know which values are sensitive (`sensitive_values()`), so the tests can prove none of them
reaches a relay log.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import secrets
import select
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote_plus, unquote_plus, urlencode

import pytest

from deadlines import scaled
from processes import LOOPBACK, _Process

HERE = Path(__file__).resolve().parent
# The Python that runs django-oauth-toolkit: the test runner's own by default (make
# integration-test installs Django into .venv-test from tests/requirements.txt).
IDP_PYTHON = os.environ.get("OAUTH_RELAY_TEST_IDP_PYTHON", sys.executable)
IDP_STARTUP_SECONDS = 30
TOKEN_PATH = "/o/token/"
SECRET_FORM_FIELDS = {"client_secret", "password", "refresh_token", "assertion", "subject_token", "actor_token",
                      "client_assertion", "code", "code_verifier", "device_code", "token", "state", "nonce"}


def sha256(text: str) -> str:
    """The fingerprint the IdPs record instead of a token (DOT's own token_checksum)."""
    return hashlib.sha256(text.encode()).hexdigest()


def tricky_secret(prefix: str) -> str:
    """A random secret with the characters a careless client forgets to form-urlencode
    (RFC 6749 §2.3.1: client_secret_basic encodes id and secret before the Basic header)."""
    return f"{prefix}{secrets.token_urlsafe(12)} +%/=&:{secrets.token_urlsafe(12)}"


def _read_listening_line(proc: _Process, timeout: float) -> int:
    ready, _, _ = select.select([proc.proc.stdout], [], [], scaled(timeout))
    line = proc.proc.stdout.readline().decode() if ready else ""
    if not line.startswith("LISTENING"):
        proc.kill()
        pytest.fail(f"{proc.name} did not start within {scaled(timeout):.0f}s: {line!r}\n{proc.log()[-5000:]}")
    return int(line.split()[2])


class _IdP(_Process):
    """An IdP process with a JSON control API on its own port."""
    # A command the server is started through (`ip netns exec NAME`: in another network namespace).
    launcher: tuple[str, ...] = ()

    def _spawn(self, argv: list[str], timeout: float) -> None:
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([*self.launcher, *argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=log)
        log.close()
        self.port = _read_listening_line(self, timeout)

    @property
    def token_url(self) -> str:
        return f"{self.url}{TOKEN_PATH}"

    def control(self, method: str, path: str, payload=None):
        body = b"" if payload is None else json.dumps(payload).encode()
        headers = [("Connection", "close")] + ([("Content-Type", "application/json")] if payload is not None else [])
        resp = self.request(method, path, headers=headers, body=body)
        assert resp.status in (200, 204), f"{self.name} control {method} {path}: {resp.status} {resp.body[:300]!r}"
        return resp.json() if resp.body else None


# ---------------------------------------------------------------------------------------------
# django-oauth-toolkit.

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# DOT's authorization_grant_type -> the relay's `grant`.
RELAY_GRANTS = {"client-credentials": "client_credentials", "password": "password",
                "authorization-code": "authorization_code", DEVICE_GRANT: "device_code"}


@dataclass
class Client:
    """An application registered at django-oauth-toolkit."""
    name: str
    client_id: str
    client_secret: str | None
    client_type: str          # confidential | public
    grant: str                # DOT's authorization_grant_type: client-credentials | password |
                              # authorization-code | urn:ietf:params:oauth:grant-type:device_code
    oidc: bool = False        # ID tokens (RS256) when the scope has openid

    @property
    def interactive(self) -> bool:
        return self.grant in ("authorization-code", DEVICE_GRANT)


@dataclass
class Person:
    """The user who logs in at DOT's login form (or approves a device code)."""
    username: str
    password: str
    email: str


class DjangoIdP(_IdP):
    name = "django-oauth-toolkit"

    def __init__(self, workdir: Path, access_token_seconds: int = 3600, rotate_refresh_token: bool = True,
                 template_db: Path | None = None, redirect_uris: list[str] | None = None, device_interval: int = 1):
        super().__init__(workdir / "idp.log")
        self.workdir = workdir
        self.access_token_seconds = access_token_seconds
        self.rotate_refresh_token = rotate_refresh_token
        self.template_db = template_db
        self.redirect_uris = list(redirect_uris or [])
        self.device_interval = device_interval
        self.secrets_file = workdir / "idp-issued-secrets.jsonl"
        self.host = LOOPBACK
        suffix = secrets.token_hex(4)
        self.clients = {c.name: c for c in [
            Client("orders-cc", f"orders-cc.{suffix}", tricky_secret("occ"), "confidential", "client-credentials"),
            Client("billing-cc", f"billing-cc.{suffix}", tricky_secret("bcc"), "confidential", "client-credentials"),
            Client("legacy-pw", f"legacy-pw.{suffix}", tricky_secret("lpw"), "confidential", "password"),
            Client("mobile-pw", f"mobile-pw.{suffix}", None, "public", "password"),
            # Interactive: a person logs in (in a browser, or approving a device code).
            Client("cli-code", f"cli-code.{suffix}", None, "public", "authorization-code", oidc=True),
            Client("web-code", f"web-code.{suffix}", tricky_secret("wac"), "confidential", "authorization-code", oidc=True),
            # DOT's device confirmation URL takes the client id as a slug: no dot in this one.
            Client("tv-device", f"tv-device-{suffix}", None, "public", DEVICE_GRANT, oidc=True),
        ]}
        self.username = f"svc-legacy-{suffix}"
        self.password = tricky_secret("pw")
        self.person = Person(f"alice-{suffix}", tricky_secret("alice"), f"alice-{suffix}@example.test")
        self.retired_secrets: list[str] = []  # replaced by set_client_secret

    def start(self) -> "DjangoIdP":
        missing = [m for m in ("django", "oauth2_provider") if importlib.util.find_spec(m) is None]
        if IDP_PYTHON == sys.executable and missing:
            pytest.fail(f"{', '.join(missing)} not importable by {sys.executable}: install tests/requirements.txt "
                        f"(make integration-test uses .venv-test), or set OAUTH_RELAY_TEST_IDP_PYTHON")
        clients_file = self.workdir / "idp-clients.json"
        clients_file.touch(mode=0o600)
        clients_file.write_text(json.dumps({
            "applications": [{"name": c.name, "client_id": c.client_id, "client_secret": c.client_secret,
                              "client_type": c.client_type, "grant": c.grant, "oidc": c.oidc,
                              "redirect_uris": self.redirect_uris if c.grant == "authorization-code" else []}
                             for c in self.clients.values()],
            "users": [{"username": self.username, "password": self.password},
                      {"username": self.person.username, "password": self.person.password, "email": self.person.email}],
        }))
        self.secrets_file.touch(mode=0o600)
        argv = [IDP_PYTHON, str(HERE / "idp_django_server.py"), "--dir", str(self.workdir), "--clients",
                str(clients_file), "--host", self.host, "--port", "0",
                "--access-token-seconds", str(self.access_token_seconds),
                "--rotate-refresh-token", "1" if self.rotate_refresh_token else "0",
                "--device-interval", str(self.device_interval), "--secrets-file", str(self.secrets_file)]
        if self.template_db is not None:
            argv += ["--template-db", str(self.template_db)]
        self._spawn(argv, IDP_STARTUP_SECONDS)
        return self

    # -- where things are ---------------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        """DOT's OIDC_ISS_ENDPOINT: the `iss` of its ID tokens and authorization responses."""
        return f"{self.url}/o"

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def authorize_url(self) -> str:
        return f"{self.url}/o/authorize/"

    @property
    def device_authorization_url(self) -> str:
        """Not in DOT's discovery documents: an identity names it (`deviceAuthorizationUrl`)."""
        return f"{self.url}/o/device-authorization/"

    @property
    def revocation_url(self) -> str:
        """In DOT's RFC 8414 document, not in its OpenID Connect one."""
        return f"{self.url}/o/revoke_token/"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/o/.well-known/jwks.json"

    # -- relay configuration -------------------------------------------------------------------

    def identity(self, client: str, secret_files: bool = False, explicit_endpoints: bool = False, **options) -> dict:
        """An `identities` entry for one of the applications (`clientAuth` etc. in options; None
        removes a key). secret_files: the client secret and password go to files (…File keys)
        instead of the JSON. An interactive application's entry names the `issuer` (discovery
        finds the token, authorization and JWKS endpoints), the endpoints DOT's OpenID Connect
        document lacks (`deviceAuthorizationUrl`, `revocationUrl`), and scope
        `openid profile email orders.read`; with `explicit_endpoints` it names every endpoint its
        grant uses (`tokenUrl`, `authorizationUrl`, `jwksUrl`), so the relay discovers nothing."""
        c = self.clients[client]
        ident = {"grant": RELAY_GRANTS[c.grant], "clientId": c.client_id}
        if c.interactive:
            ident.update({"issuer": self.issuer, "revocationUrl": self.revocation_url,
                          "scope": "openid profile email orders.read"})
            if c.grant == DEVICE_GRANT:
                ident["deviceAuthorizationUrl"] = self.device_authorization_url
            if explicit_endpoints:
                ident.update({"tokenUrl": self.token_url, "jwksUrl": self.jwks_url})
                if c.grant == "authorization-code":
                    ident["authorizationUrl"] = self.authorize_url
        else:
            ident["tokenUrl"] = self.token_url
        secrets_ = {}
        if c.client_secret is not None:
            secrets_["clientSecret"] = c.client_secret
        if c.grant == "password":
            ident["username"] = self.username
            secrets_["password"] = self.password
        for key, value in secrets_.items():
            if secret_files:
                path = self.workdir / f"{client}.{key}"
                path.touch(mode=0o600)
                path.write_text(value + "\n")
                ident[key + "File"] = str(path)
            else:
                ident[key] = value
        return {k: v for k, v in {**ident, **options}.items() if v is not None}

    # -- observation and control -----------------------------------------------------------------

    def token_requests(self, **match) -> list[dict]:
        """The records of POST /o/token/ (see idp_django_server.Recorder), in order; keyword
        arguments keep only records whose fields equal them (grant_type="refresh_token")."""
        return self._records("requests", match)

    def authorizations(self, **match) -> list[dict]:
        """The records of /o/authorize/ (GET: the consent page or a redirect to the login form;
        POST: the consent, whose `to_client` says what the redirect back carried)."""
        return self._records("authorizations", match)

    def device_authorizations(self, **match) -> list[dict]:
        """The records of POST /o/device-authorization/ (with the user code issued)."""
        return self._records("device_authorizations", match)

    def revocations(self, **match) -> list[dict]:
        """The records of POST /o/revoke_token/ (`token_sha256`, `token_type_hint`, status)."""
        return self._records("revocations", match)

    def _records(self, kind: str, match: dict) -> list[dict]:
        records = self.control("GET", "/_test/token-requests")[kind]
        return [r for r in records if all(r.get(k) == v for k, v in match.items())]

    def set_redirect_uris(self, client: str, uris: list[str]) -> None:
        """Registers `uris` as the application's redirect URIs (e.g. a relay's callback, known
        once the relay runs)."""
        self.control("POST", "/_test/redirect-uris", {"client_id": self.clients[client].client_id, "redirect_uris": uris})

    def approve_device(self, user_code: str, action: str = "accept") -> str:
        """The person enters `user_code` at DOT's device page and accepts (or "deny"); returns the
        device grant's status (authorized, denied)."""
        answer = self.control("POST", "/_test/approve-device",
                              {"user_code": user_code, "username": self.person.username, "action": action})
        return answer["status"]

    def set_client_secret(self, client: str, secret: str) -> None:
        """Rotates the application's secret at the IdP: from now on only `secret` authenticates it.
        The old one stays among the sensitive values."""
        c = self.clients[client]
        self.control("POST", "/_test/client-secret", {"client_id": c.client_id, "client_secret": secret})
        self.retired_secrets.append(c.client_secret)
        c.client_secret = secret

    def hold(self, ms: int) -> None:
        """Every later token request waits `ms` at the IdP before it is handled."""
        self.control("POST", "/_test/hold", {"ms": ms})

    def whoami(self, token: str):
        """Asks the protected resource directly (not through the relay) whether DOT accepts `token`."""
        return self.request("GET", "/api/whoami", headers=[("Authorization", f"Bearer {token}"), ("Connection", "close")])

    def revoke(self, token: str, client: str) -> None:
        """Revokes an access token through DOT's revocation endpoint (RFC 7009)."""
        c = self.clients[client]
        form = {"token": token, "token_type_hint": "access_token", "client_id": c.client_id}
        headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Connection", "close")]
        if c.client_secret is not None:
            basic = base64.b64encode(f"{quote_plus(c.client_id)}:{quote_plus(c.client_secret)}".encode()).decode()
            headers.append(("Authorization", f"Basic {basic}"))
        resp = self.request("POST", "/o/revoke_token/", headers=headers, body=urlencode(form).encode())
        assert resp.status == 200, f"revocation answered {resp.status} {resp.body[:200]!r}"

    def issued_tokens(self) -> list[str]:
        """Every access and refresh token DOT has issued (read from its database)."""
        db = self.workdir / "idp.sqlite3"
        if not db.exists():
            return []
        query = "SELECT token FROM oauth2_provider_accesstoken UNION ALL SELECT token FROM oauth2_provider_refreshtoken"
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
                rows = conn.execute(query).fetchall()
        except sqlite3.OperationalError:
            # DOT was killed inside a transaction (a token request under way at teardown): the
            # hot journal must be rolled back before anyone reads, which a read-only connection
            # cannot do. What it rolls back was never issued.
            with sqlite3.connect(f"file:{db}", uri=True, timeout=5) as conn:
                rows = conn.execute(query).fetchall()
        return [r[0] for r in rows if r[0]]

    def issued_secrets(self) -> list[tuple[str, str]]:
        """(kind, value) of every authorization code, device code and ID token DOT issued, and
        of every state, nonce and code_verifier a client sent it (noted by the server as they
        pass: the database keeps none of them)."""
        if not self.secrets_file.exists():
            return []
        lines = self.secrets_file.read_text().splitlines()
        return [(entry["kind"], entry["value"]) for entry in map(json.loads, filter(None, lines))]

    def sensitive_values(self) -> dict[str, str]:
        values = {f"client secret of {c.name}": c.client_secret for c in self.clients.values() if c.client_secret}
        values.update({f"retired client secret #{i + 1}": s for i, s in enumerate(self.retired_secrets)})
        values["password of the django user"] = self.password
        values["password of the person"] = self.person.password
        for i, token in enumerate(self.issued_tokens()):
            values[f"token #{i + 1} issued by django"] = token
        for i, (kind, value) in enumerate(self.issued_secrets()):
            values[f"{kind} #{i + 1} issued by django"] = value
            if kind == "id_token":
                # A JWT counts only whole (its header repeats); its signature is its own.
                values[f"signature of {kind} #{i + 1} issued by django"] = value.rpartition(".")[2]
        return values


# ---------------------------------------------------------------------------------------------
# The scripted stub.

class StubIdP(_IdP):
    name = "idp stub"

    def __init__(self, log_path: Path):
        super().__init__(log_path)
        self.host = LOOPBACK
        self.client_id = f"relay client.{secrets.token_hex(3)}"
        self.client_secret = tricky_secret("stub")

    def start(self) -> "StubIdP":
        self._spawn([sys.executable, str(HERE / "idp_stub.py"), "--host", self.host, "--port", "0"], 10)
        return self

    def script(self, *queue: dict, by_grant: dict | None = None, default: dict | None = None,
               client_assertion: dict | None = None, dpop: dict | None = None, client_secret: str | None = None,
               workload_assertion: dict | None = None, **login) -> "StubIdP":
        """Sets how token requests are answered (see idp_stub.py): the queued specs first, then
        by grant_type, then `default` (a token living 3600 s when not given). `client_assertion`:
        the policy every request's client assertion must pass (client_assertions.py); `dpop`: the
        DPoP proof every request must carry ({"nonce": ..., "rotate_every": N}, dpop_proofs.py);
        `client_secret`: the only client secret accepted; `workload_assertion`: the workload JWT
        policy every client assertion must pass (workload_identity.py).
        `login`: the login endpoints' entries (discovery, oauth_metadata, jwks, authorize, device,
        revoke, keys: see idp_stub_login.py); each one not given is its default."""
        unknown = set(login) - {"discovery", "oauth_metadata", "jwks", "authorize", "device", "revoke", "keys"}
        assert not unknown, f"unknown stub script entries {sorted(unknown)}"
        payload = {"queue": list(queue), "by_grant": by_grant or {}, **login}
        if client_assertion is not None:
            payload["client_assertion"] = client_assertion
        if dpop is not None:
            payload["dpop"] = dpop
        if client_secret is not None:
            payload["client_secret"] = client_secret
        if workload_assertion is not None:
            payload["workload_assertion"] = workload_assertion
        if default is not None:
            payload["default"] = default
        self.control("PUT", "/_stub/script", payload)
        return self

    def identity(self, **options) -> dict:
        """A client_credentials identity of this stub's client (id and secret of this run);
        `options` add to it or replace keys (None removes one)."""
        ident = {"tokenUrl": self.token_url, "grant": "client_credentials", "clientId": self.client_id,
                 "clientSecret": self.client_secret, **options}
        return {k: v for k, v in ident.items() if v is not None}

    def token_requests(self, **match) -> list[dict]:
        """Every token request as received (headers, body, form pairs, issued tokens), in order."""
        records = self.control("GET", "/_stub/requests")["requests"]
        return [r for r in records if all(r.get(k) == v for k, v in match.items())]

    # -- the login endpoints (idp_stub_login.py) -----------------------------------------------------

    @property
    def issuer(self) -> str:
        """The `issuer` of the stub's default metadata and ID tokens: its base URL."""
        return self.url

    def endpoint_requests(self, **match) -> list[dict]:
        """Every request to the login endpoints (endpoint: discovery, oauth_metadata, jwks,
        authorize, device, revoke), as received, with what was issued."""
        records = self.control("GET", "/_stub/requests")["endpoints"]
        return [r for r in records if all(r.get(k) == v for k, v in match.items())]

    def login_identity(self, grant: str = "authorization_code", **options) -> dict:
        """An interactive identity of this stub's client, found by discovery (`issuer`); `options`
        add or replace keys (None removes one)."""
        ident = {"issuer": self.issuer, "grant": grant, "clientId": self.client_id, "clientSecret": self.client_secret,
                 "scope": "openid profile", **options}
        return {k: v for k, v in ident.items() if v is not None}

    def sensitive_values(self) -> dict[str, str]:
        """The tokens the stub issued, and every secret the relay sent it (form fields and the
        Basic credentials)."""
        values = {"client secret of the stub's client": self.client_secret}
        requests = self.control("GET", "/_stub/requests")
        for r in requests["endpoints"]:
            for kind in ("code", "device_code"):
                if r["issued"].get(kind):
                    values[f"{kind} issued by the stub ({r['endpoint']} request {r['n']})"] = r["issued"][kind]
            for key, value in r["form"]:
                if key in SECRET_FORM_FIELDS and value:
                    values[f"{key} sent to the stub ({r['endpoint']} request {r['n']})"] = value
        for r in requests["requests"]:
            for kind in ("access_token", "refresh_token", "id_token"):
                if r["issued"].get(kind):
                    values[f"{kind} issued by the stub (request {r['n']})"] = r["issued"][kind]
            if r["issued"].get("id_token"):
                values[f"id_token signature (request {r['n']})"] = r["issued"]["id_token"].rpartition(".")[2]
            for key, value in r["form"]:
                if key in SECRET_FORM_FIELDS and value:
                    values[f"form field {key} sent to the stub (request {r['n']})"] = value
                if key == "client_assertion" and value:
                    # A JWT counts only whole (its header repeats); its signature is its own.
                    values[f"client assertion signature (request {r['n']})"] = value.rpartition(".")[2]
            for auth in header_values(r, "authorization"):
                if auth[:6].lower() == "basic ":
                    try:
                        decoded = base64.b64decode(auth[6:].strip()).decode()
                    except ValueError:
                        continue
                    secret = unquote_plus(decoded.partition(":")[2])
                    if secret:
                        values[f"Basic client secret sent to the stub (request {r['n']})"] = secret
        return values


def form(record: dict) -> dict[str, list[str]]:
    """A stub record's form fields: name -> values in order."""
    out: dict[str, list[str]] = {}
    for k, v in record["form"]:
        out.setdefault(k, []).append(v)
    return out


def header_values(record: dict, name: str) -> list[str]:
    return [v for k, v in record["headers"] if k.lower() == name.lower()]


# ---------------------------------------------------------------------------------------------
# The DPoP resource server.

class DPoPResourceServer(_IdP):
    """dpop_resource_server.py: an upstream that accepts only DPoP-bound tokens with valid proofs."""
    name = "dpop resource server"

    def __init__(self, log_path: Path):
        super().__init__(log_path)
        self.host = LOOPBACK

    def start(self) -> "DPoPResourceServer":
        self._spawn([sys.executable, str(HERE / "dpop_resource_server.py"), "--host", self.host, "--port", "0"], 10)
        return self

    def configure(self, nonce: bool = True, rotate_every: int = 0, jkt: str | None = None,
                  refuse_first_token: bool = False, announce_rotation: bool = True,
                  echo_nonce: bool = False) -> str | None:
        """Resets the server (records, seen jtis) with these rules; returns its first nonce."""
        return self.control("PUT", "/_rs/config", {"nonce": nonce, "rotate_every": rotate_every, "jkt": jkt,
                                                   "refuse_first_token": refuse_first_token,
                                                   "announce_rotation": announce_rotation,
                                                   "echo_nonce": echo_nonce})["nonce"]

    def rotate(self) -> str:
        """A new nonce, told to no one until a proof with the old one is answered `use_dpop_nonce`."""
        return self.control("PUT", "/_rs/rotate")["nonce"]

    def release(self) -> None:
        """The answers held under `/held/` (and the challenges under `/held-challenge/`) go out."""
        self.control("PUT", "/_rs/release")

    def requests(self, **match) -> list[dict]:
        records = self.control("GET", "/_rs/requests")["requests"]
        return [r for r in records if all(r.get(k) == v for k, v in match.items())]


class ProtectedResource(_IdP):
    """resource_server.py: the upstream of a zero-configuration identity, which names its
    authorization server in its metadata (RFC 9728) and checks the tokens that server issued."""
    name = "protected resource"

    def __init__(self, log_path: Path):
        super().__init__(log_path)
        self.host = LOOPBACK
        self.path = "/mcp"

    def start(self) -> "ProtectedResource":
        self._spawn([sys.executable, str(HERE / "resource_server.py"), "--host", self.host, "--port", "0"], 10)
        return self

    @property
    def resource(self) -> str:
        """Its resource URL: the upstream an `auto` route names."""
        return f"{self.url}{self.path}"

    def configure(self, idp=None, metadata: str = "well-known", **options) -> dict:
        """Resets the server (records) with these rules: tokens of `idp` (a GlewlwydIdP: its
        issuer and JWKS) and `options` as resource_server.py names them; returns its
        {"resource", "metadata_url"}."""
        config = {"path": self.path, "metadata": metadata, **options}
        if idp is not None:
            config.update(issuer=idp.issuer, jwks_uri=f"{idp.issuer}/jwks")
        return self.control("PUT", "/_rs/config", config)

    def requests(self, **match) -> list[dict]:
        records = self.control("GET", "/_rs/requests")["requests"]
        return [r for r in records if all(r.get(k) == v for k, v in match.items())]

    def sensitive_values(self) -> dict[str, str]:
        return self.control("GET", "/_rs/sensitive")


# ---------------------------------------------------------------------------------------------
# Google's token endpoint for service accounts.

class GoogleTokenEndpoint(_IdP):
    """idp_google.py: a token endpoint that checks service-account assertions as Google documents
    them. `token_url` is `http://127.0.0.1:PORT/token`, what a key file's `token_uri` names."""
    name = "google token endpoint"

    def __init__(self, log_path: Path):
        super().__init__(log_path)
        self.host = LOOPBACK

    def start(self) -> "GoogleTokenEndpoint":
        self._spawn([sys.executable, str(HERE / "idp_google.py"), "--host", self.host, "--port", "0"], 10)
        return self

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    def configure(self, accounts: dict, clock_offset: float = 0) -> None:
        """The service accounts it knows ({email: {"keys": {kid: public PEM}, "delegated_users": [...]}})
        and how far its clock runs ahead of the relay's; clears the records."""
        self.control("PUT", "/_google/config", {"accounts": accounts, "clock_offset": clock_offset})

    def requests(self, **match) -> list[dict]:
        records = self.control("GET", "/_google/requests")["requests"]
        return [r for r in records if all(r.get(k) == v for k, v in match.items())]

    def sensitive_values(self) -> dict[str, str]:
        """The access tokens it issued and the assertions it received (their signatures: a JWT's
        header repeats)."""
        values = {}
        for r in self.control("GET", "/_google/requests")["requests"]:
            if r["issued"]:
                values[f"access token issued by the Google stand-in (request {r['n']})"] = r["issued"]
            for name, value in r["form"]:
                if name == "assertion" and value:
                    values[f"assertion signature (request {r['n']})"] = value.rpartition(".")[2]
        return values
