"""Glewlwyd (Debian package `glewlwyd`, 2.7): a real OpenID Connect provider the project did not
write, for what django-oauth-toolkit lacks: private_key_jwt, client_secret_jwt and DPoP. It
verifies each client assertion itself: signature with the client's registered key or secret,
iss = sub = client id, aud = its token endpoint, exp within `request-maximum-exp`, and a jti it
has not seen before.

`GlewlwydIdP(workdir, access_token_seconds, dpop_nonce_counter, external_url)` makes a fresh sqlite database
from the package's own schema (/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3), one OIDC
plugin instance (`oidc`, RS256 access tokens signed with a key generated here) and a config file,
and starts the server on a free loopback port. Clients are rows in its database (the `database`
client module reads them per request), so `add_client` works before or after `start`. The admin
user `admin` (password `password`, from the schema) may use the password grant with scope
`api.read`.

DPoP (RFC 9449) is allowed: a token request with a proof gets a DPoP-bound JWT access token
(`cnf.jkt`, token_type DPoP), a refresh must prove the same key, and the userinfo endpoint
checks the proofs of requests that bring such a token (htm, htu, ath, an unseen jti).
`dpop_nonce_counter` makes it demand nonces, one per client: 400 use_dpop_nonce at the token
endpoint, 401 `WWW-Authenticate: DPoP error="use_dpop_nonce"` at userinfo, each with the current
nonce in `DPoP-Nonce`, and a new nonce (sent with the answer) after that many uses. Its
`external_url` (its own URL unless given) is what it expects a proof's htu to start with.

`registration=Registration(...)` makes it the authorization server of a zero-configuration
identity (issue 29): clients register themselves (RFC 7591, `registration_endpoint` in its
discovery; with `initial_access_scope` only with a token of that scope, else 401), manage and
delete their registration (RFC 7592, `registration_client_uri` + `registration_access_token`),
log a person in with the authorization code and PKCE S256, and ask for tokens for a resource
(RFC 8707): a `resource` listed in `Registration.resources` becomes the access token's `aud`.
It then also serves its login pages (the package's web app, /usr/share/glewlwyd/webapp) at
`/login.html`, where the person logs in and grants the scopes (browser.login_at_glewlwyd,
grant_at_glewlwyd); the page then sends the browser back to the authorization endpoint with
`g_continue`, without which Glewlwyd always shows the page first. Its user `admin` may grant
`openid` and SCOPE. Glewlwyd 2.7.5 lists client_secret_basic and client_secret_post in
`token_endpoint_auth_methods_supported` (never `none`; and it stores a client registered with
`none` as confidential, so such a client gets no token), and answers a registration with 200.
`Registration(allowed=False)` keeps the code flow but offers no registration endpoint. The
database is then in WAL mode: the tests read it (`registered_clients`, ...) while Glewlwyd
writes, and Glewlwyd sets no busy timeout.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import secrets
import shutil
import sqlite3
import string
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto import jwk, jwt

from deadlines import scaled
from key_files import pem
from processes import LOOPBACK, _Process, free_port

SCHEMA = Path("/usr/share/dbconfig-common/data/glewlwyd/install/sqlite3")
LIBRARIES = Path("/usr/lib/glewlwyd")
SCOPE = "api.read"
USERNAME, PASSWORD = "admin", "password"  # the schema's own admin user
STARTUP_SECONDS = 15
WEBAPP = Path("/usr/share/glewlwyd/webapp")
# The package's web app reads config.json beside its pages; the package's own is a symlink to a
# directory under /etc (a packaging slip), so the tests' copy of the web app has a file there.
WEBAPP_CONFIG = Path("/etc/glewlwyd/config-2.7.json/config.json")
MIME_TYPES = {".html": "text/html", ".css": "text/css", ".js": "application/javascript", ".json": "application/json",
              ".png": "image/png", ".svg": "image/svg+xml", ".ico": "image/x-icon", ".woff": "font/woff",
              ".woff2": "font/woff2", ".ttf": "font/ttf", ".eot": "application/vnd.ms-fontobject"}
# The scope a registration must bring a token of when `Registration.initial_access_scope` says so.
REGISTER_SCOPE = "g_register"


@dataclass(frozen=True)
class Registration:
    """Glewlwyd as a zero-configuration identity's authorization server (see the module doc)."""
    # register-client-allowed: the /register endpoint and `registration_endpoint` in discovery.
    allowed: bool = True
    # register-client-auth-scope: a registration needs an access token with this scope (else 401).
    initial_access_scope: str | None = None
    # resource-scope: the resources (RFC 8707) tokens of scopes openid and SCOPE may be for.
    resources: tuple[str, ...] = ()


def require_glewlwyd() -> str:
    binary = shutil.which("glewlwyd")
    if binary is None or not SCHEMA.exists():
        pytest.fail("glewlwyd is not installed: run scripts/install-deps --test (Debian package glewlwyd)")
    return binary


def glewlwyd_password_hash(secret: str, iterations: int = 1000) -> str:
    """A client secret as Glewlwyd's database client module stores it for sqlite (its
    generate_digest_pbkdf2): base64(PBKDF2-HMAC-SHA256(secret, salt) ‖ salt), a comma, the
    iteration count; the salt is 16 alphanumeric characters."""
    salt = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(16)).encode()
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode(), salt, iterations, 32)
    return f"{base64.b64encode(digest + salt).decode()},{iterations}"


class GlewlwydIdP(_Process):
    name = "glewlwyd"

    def __init__(self, workdir: Path, access_token_seconds: int = 3600, dpop_nonce_counter: int | None = None,
                 external_url: str | None = None, registration: Registration | None = None):
        super().__init__(workdir / "glewlwyd.log")
        # The URL Glewlwyd believes it has (the htu it expects in DPoP proofs); its own by default.
        self.external_url = external_url
        self.registration = registration
        self.binary = require_glewlwyd()
        self.workdir = workdir
        self.port = free_port()
        self.db_path = workdir / "glewlwyd.sqlite3"
        self.signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._make_database(access_token_seconds, dpop_nonce_counter)
        if registration is not None:
            self._make_webapp()
        self.config_path = workdir / "glewlwyd.conf"
        self.config_path.write_text(self._config())

    @property
    def issuer(self) -> str:
        return f"{self.url}/api/oidc"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/token"

    def identity(self, client_id: str, **options) -> dict:
        """The relay's `identities` entry for client `client_id` (scope SCOPE), with `options`."""
        return {"tokenUrl": self.token_url, "clientId": client_id, "scope": SCOPE, **options}

    def _config(self) -> str:
        # libconfig syntax; no use_secure_connection key at all (glewlwyd then wants certificates).
        return "\n".join([
            f"port={self.port}", f'bind_address="{LOOPBACK}"', f'external_url="{self.external_url or self.url}"',
            'api_prefix="api"', 'login_url="login.html"', 'log_mode="console"', 'log_level="DEBUG"',
            'cookie_secure=0', 'session_key="GLEWLWYD2_SESSION_ID"', 'admin_scope="g_admin"', 'profile_scope="g_profile"',
            f'user_module_path="{LIBRARIES}/user"', f'client_module_path="{LIBRARIES}/client"',
            f'user_auth_scheme_module_path="{LIBRARIES}/scheme"', f'plugin_module_path="{LIBRARIES}/plugin"',
            'hash_algorithm="SHA512"',
            f'database = {{ type = "sqlite3"\n path = "{self.db_path}" }};',
            *(self._static_files_config() if self.registration is not None else []), "",
        ])

    def _static_files_config(self) -> list[str]:
        types = ",\n".join(f'{{ extension = "{ext}"\n mime_type = "{mime}" }}' for ext, mime in MIME_TYPES.items())
        return [f'static_files_path="{self.workdir / "webapp"}"', f"static_files_mime_types = ( {types} );"]

    def _make_webapp(self) -> None:
        """The package's web app (login page) with a config.json of its own, served from the root."""
        webapp = self.workdir / "webapp"
        # Copies, not symlinks: Glewlwyd serves only what resolves (realpath) under its directory,
        # and the package's pages link to Debian's jquery, bootstrap and fonts elsewhere (4.5 MB).
        shutil.copytree(WEBAPP, webapp, ignore=shutil.ignore_patterns("config.json", "*.map"))
        (webapp / "config.json").write_text(WEBAPP_CONFIG.read_text())

    def _make_database(self, access_token_seconds: int, dpop_nonce_counter: int | None) -> None:
        params = {
            "iss": self.issuer, "jwt-type": "rsa", "jwt-key-size": "256",
            "key": pem(self.signing_key, True), "cert": pem(self.signing_key, False),
            "access-token-duration": access_token_seconds, "refresh-token-duration": 1209600, "code-duration": 600,
            "refresh-token-rolling": True, "allow-non-oidc": True,
            "auth-type-client-enabled": True, "auth-type-password-enabled": True, "auth-type-refresh-enabled": True,
            "auth-type-code-enabled": False, "auth-type-token-enabled": False, "auth-type-id-token-enabled": False,
            "auth-type-none-enabled": False, "auth-type-device-enabled": False,
            # Client assertions are "request parameters" to Glewlwyd: without this they are refused.
            "request-parameter-allow": True, "request-maximum-exp": 60,
            "client-pubkey-parameter": "pubkey", "client-jwks-parameter": "jwks", "client-jwks_uri-parameter": "jwks_uri",
            "scope": [], "claims": [], "additional-parameters": [], "allowed-scope": ["openid"], "jwks-show": True,
            "secret-type": "pairwise", "name-claim": "no", "email-claim": "no", "scope-claim": "no",
            # DPoP (RFC 9449): proofs accepted within 60 s of their iat; with a nonce counter, every
            # proof must carry the client's current nonce, which changes after that many uses.
            "oauth-dpop-allowed": True, "oauth-dpop-iat-duration": 60,
        }
        if dpop_nonce_counter is not None:
            params.update({"oauth-dpop-nonce-mandatory": True, "oauth-dpop-nonce-counter": dpop_nonce_counter})
        if self.registration is not None:
            params.update(self._registration_params(self.registration))
        with contextlib.closing(sqlite3.connect(self.db_path)) as db, db:
            if self.registration is not None:
                db.execute("PRAGMA journal_mode=WAL")  # the tests read it while Glewlwyd writes
            db.executescript(SCHEMA.read_text())
            db.execute("INSERT INTO g_plugin_module_instance (gpmi_module, gpmi_name, gpmi_display_name, gpmi_parameters) "
                       "VALUES ('oidc', 'oidc', 'OIDC', ?)", (json.dumps(params),))
            db.execute("INSERT INTO g_scope (gs_name, gs_display_name, gs_description, gs_password_required, "
                       "gs_password_max_age) VALUES (?, ?, ?, 0, 0)", (SCOPE, SCOPE, SCOPE))
            db.execute("INSERT INTO g_client_scope (gcs_name) VALUES (?)", (SCOPE,))
            db.execute("INSERT INTO g_user_scope (gus_name) VALUES (?)", (SCOPE,))
            db.execute("INSERT INTO g_user_scope_user (gu_id, gus_id) VALUES ((SELECT gu_id FROM g_user WHERE gu_username = ?), "
                       "(SELECT gus_id FROM g_user_scope WHERE gus_name = ?))", (USERNAME, SCOPE))
            if self.registration is not None:
                # A person logging in with the code flow is asked for `openid` too: theirs to grant.
                db.execute("INSERT INTO g_user_scope (gus_name) VALUES ('openid')")
                db.execute("INSERT INTO g_user_scope_user (gu_id, gus_id) VALUES ((SELECT gu_id FROM g_user WHERE gu_username = ?), "
                           "(SELECT gus_id FROM g_user_scope WHERE gus_name = 'openid'))", (USERNAME,))

    @staticmethod
    def _registration_params(registration: Registration) -> dict:
        """The OIDC plugin's settings for self-registered clients that log people in (names from
        its admin app and protocol_oidc.c's parameter checks, Glewlwyd 2.7.5)."""
        return {
            "auth-type-code-enabled": True,
            "pkce-allowed": True, "pkce-method-plain-allowed": False,
            "register-client-allowed": registration.allowed,
            "register-client-auth-scope": [registration.initial_access_scope] if registration.initial_access_scope else [],
            "register-client-credentials-scope": [],
            "register-client-management-allowed": True,  # RFC 7592: read, update, delete
            "register-client-token-one-use": False,
            # A client's `resource` in its registration is ignored; the scopes' resources decide.
            "register-resource-specify-allowed": False, "register-resource-default": [],
            "register-default-properties": {},
            "resource-allowed": True,
            "resource-scope": {scope: list(registration.resources) for scope in ("openid", SCOPE)},
            "resource-client-property": "resource", "resource-scope-and-client-property": False,
        }

    def add_client(self, client_id: str, auth_method: str, public_key_pem: str | None = None,
                   secret: str | None = None, grants=("client_credentials",), jwks: dict | None = None) -> None:
        """A confidential client authenticating with `auth_method` (private_key_jwt: `public_key_pem`,
        or `jwks`, a JWK Set its assertions' kid is looked up in; client_secret_jwt or
        client_secret_basic: `secret`), allowed `grants` and scope api.read."""
        properties = [("token_endpoint_auth_method", auth_method), ("source", "database")]
        properties += [("authorization_type", grant) for grant in grants]
        if public_key_pem is not None:
            properties.append(("pubkey", public_key_pem))
        if jwks is not None:
            properties.append(("jwks", json.dumps(jwks)))
        password = None
        if secret is not None and auth_method == "client_secret_basic":
            password = glewlwyd_password_hash(secret)
        elif secret is not None:
            properties.append(("client_secret", secret))
        with sqlite3.connect(self.db_path) as db:
            client = db.execute("INSERT INTO g_client (gc_client_id, gc_name, gc_confidential, gc_password) VALUES (?, ?, 1, ?)",
                                (client_id, client_id, password)).lastrowid
            db.executemany("INSERT INTO g_client_property (gc_id, gcp_name, gcp_value) VALUES (?, ?, ?)",
                           [(client, name, value) for name, value in properties])
            db.execute("INSERT INTO g_client_scope_client (gc_id, gcs_id) VALUES (?, "
                       "(SELECT gcs_id FROM g_client_scope WHERE gcs_name = ?))", (client, SCOPE))

    def start(self) -> "GlewlwydIdP":
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([self.binary, "-c", str(self.config_path)], stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        log.close()
        deadline = time.monotonic() + scaled(STARTUP_SECONDS)
        while time.monotonic() < deadline:
            if not self.running():
                pytest.fail(f"glewlwyd exited at start-up:\n{self.log()[-5000:]}")
            if "Glewlwyd started on port" in self.log():
                return self
            time.sleep(0.05)
        self.kill()
        pytest.fail(f"glewlwyd did not start within {scaled(STARTUP_SECONDS):.0f}s:\n{self.log()[-5000:]}")

    def access_token_claims(self, token: str) -> dict:
        """The claims of an access token Glewlwyd issued, its signature checked with the plugin's key."""
        key = jwk.JWK.from_pem(pem(self.signing_key, False).encode())
        return json.loads(jwt.JWT(jwt=token, key=key, algs=["RS256"]).claims)

    def issued_to(self, client_id: str) -> int:
        """How many access tokens the log says were generated for `client_id` (client_credentials)."""
        return self.log().count(f"Access token generated for client '{client_id}'")

    def issued_for_user(self, username: str) -> int:
        """How many access tokens the log says were generated for `username` (password, refresh_token:
        Glewlwyd logs no client for these when the client authenticated with an assertion)."""
        return sum(1 for line in self.log().splitlines()
                   if "Access token generated for client" in line and f"granted by user '{username}'" in line)

    # -----------------------------------------------------------------------------------------
    # Self-registered clients (with a `Registration`).

    def _reading(self):
        """A read-only connection to the database, closed after use. With a `Registration` the
        database is in WAL mode, so these reads never make Glewlwyd's writes fail (it sets no
        busy timeout: a reader's lock would be its SQLITE_BUSY, a 500 to a token request)."""
        return contextlib.closing(sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True))

    def registered_clients(self) -> list[dict]:
        """Every client that registered itself at /register (RFC 7591), oldest first, as its
        database keeps it: client_id, name, enabled (false once deleted by RFC 7592),
        confidential, token_endpoint_auth_method, redirect_uris, grants."""
        with self._reading() as db:
            rows = db.execute("SELECT c.gc_id, c.gc_client_id, c.gc_name, c.gc_enabled, c.gc_confidential FROM g_client c "
                              "JOIN gpo_client_registration r ON r.gpocr_cient_id = c.gc_client_id ORDER BY r.gpocr_id").fetchall()
            clients = []
            for gc_id, client_id, name, enabled, confidential in rows:
                properties: dict[str, list[str]] = {}
                for key, value in db.execute("SELECT gcp_name, gcp_value FROM g_client_property WHERE gc_id = ?", (gc_id,)):
                    properties.setdefault(key, []).append(value)
                clients.append({"client_id": client_id, "name": name, "enabled": bool(enabled),
                                "confidential": bool(confidential),
                                "token_endpoint_auth_method": properties.get("token_endpoint_auth_method", []),
                                "redirect_uris": properties.get("redirect_uri", []),
                                "grants": properties.get("authorization_type", [])})
            return clients

    def sensitive_values(self) -> dict[str, str]:
        """The secrets of the self-registered clients, which Glewlwyd keeps in the clear (its
        registration access tokens, codes and refresh tokens only as hashes: `hashed_secret_leaks`)."""
        if not self.db_path.exists():
            return {}
        with self._reading() as db:
            rows = db.execute("SELECT c.gc_client_id, p.gcp_value FROM g_client c JOIN g_client_property p ON p.gc_id = c.gc_id "
                              "WHERE p.gcp_name = 'client_secret'").fetchall()
        return {f"the client secret Glewlwyd gave {client_id}": secret for client_id, secret in rows}

    def secret_hashes(self) -> dict[str, str]:
        """The hashes of the registration access tokens and refresh tokens Glewlwyd issued so far
        (a deleted registration's is overwritten: take them before an RFC 7592 DELETE)."""
        with self._reading() as db:
            hashes = {row[0]: "a registration access token" for row in
                      db.execute("SELECT gpocr_management_at_hash FROM gpo_client_registration WHERE gpocr_management_at_hash IS NOT NULL")}
            hashes.update({row[0]: "a refresh token" for row in db.execute("SELECT gpor_token_hash FROM gpo_refresh_token")})
        return hashes

    def hashed_secret_leaks(self, texts: dict[str, str], hashes: dict[str, str] | None = None) -> list[str]:
        """Where the texts hold a registration access token or a refresh token Glewlwyd issued
        (`hashes`, by default `secret_hashes()` now): it keeps only their hashes ({SHA512} +
        base64 of the digest, its `hash_algorithm`), so every run of letters and digits of their
        lengths (32, 128) is hashed and looked up. Names the place, never the value."""
        hashes = self.secret_hashes() if hashes is None else hashes
        leaks = []
        for where, text in texts.items():
            for run in re.finditer(r"[A-Za-z0-9]{32,}", text):
                word = run.group()
                for length in (32, 128):
                    for i in range(len(word) - length + 1):
                        what = hashes.get(glewlwyd_hash(word[i:i + length]))
                        if what is not None:
                            line = text[:run.start()].count("\n") + 1
                            leaks.append(f"{what} Glewlwyd issued in {where}, line {line}")
        return leaks

    def registrations_logged(self) -> list[str]:
        """The client ids Glewlwyd logged as registered, in order."""
        return re.findall(r"client '([a-z0-9]+)' registered with redirect_uri", self.log())

    def deletions_logged(self) -> list[str]:
        """The client ids Glewlwyd logged as deleted (RFC 7592 DELETE), in order."""
        return re.findall(r"client '([a-z0-9]+)' deleted", self.log())


def glewlwyd_hash(value: str) -> str:
    """How Glewlwyd configured with hash_algorithm SHA512 stores a token (its generate_hash)."""
    return "{SHA512}" + base64.b64encode(hashlib.sha512(value.encode()).digest()).decode()
