"""idpyoidc (PyPI `idpyoidc`, pinned in tests/requirements.txt): the real RFC 8693 token exchange
server of the per-caller tests (idp_idpyoidc_server.py runs it; every answer of its token
endpoint is idpyoidc's own).

`IdpyoidcIdP(workdir, users=("alice", "bob"), ...)` has two clients and the users named:
- `frontend` (client A, client_secret_post): gets a caller's access token by the password grant
  (`caller_token("alice")`): an RS256 JWT with `sub` = the user name, `aud` = [`orders-relay`],
  `email`, scope `openid email orders.read`.
- `orders-relay` (client B, client_secret_basic or client_secret_post): may exchange such a token
  (RFC 8693, subject_token_type access_token) for one with the `audience` (`exchange_audiences`),
  `resource` (`exchange_resources`) and `scope` it names; the new token is an RS256 JWT from the
  same JWKS with the caller's `sub`, `aud` = the audiences and resources asked for, `client_id`
  = orders-relay. An audience or resource outside those lists is invalid_target.
Secrets and passwords are generated per server (unreserved characters only: idpyoidc 5.0.0 does
not form-decode Basic credentials). The issuer is `http://127.0.0.1:PORT`; discovery at
/.well-known/openid-configuration (and oauth-authorization-server) lists the token endpoint,
jwks_uri and `urn:ietf:params:oauth:grant-type:token-exchange`.

Counting: `exchanges(**match)` are the records of token-exchange requests the server answered
(idp_idpyoidc_recorder.py: form fields with secrets as `sha256:` fingerprints, client_auth, status,
error), `exchange_count()` their number; `hold(ms)` delays every later token request.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import secrets
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from jwcrypto import jwk, jwt

from deadlines import scaled
from idp_processes import HERE, IDP_PYTHON, LOOPBACK, _IdP

EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
SCOPES = ("openid", "email", "orders.read")
STARTUP_SECONDS = 20
HTTP_SECONDS = 10


def fingerprint(value: str) -> str:
    """How the recorder shows a secret form field (subject_token, client_secret, password)."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()


@dataclass(frozen=True)
class IdpyoidcClient:
    client_id: str
    client_secret: str


class IdpyoidcIdP(_IdP):
    name = "idpyoidc"

    def __init__(self, workdir: Path, users=("alice", "bob"), access_token_seconds: int = 3600,
                 exchange_audiences=("https://orders.example.test",),
                 exchange_resources=("https://orders.example.test/api",), exchange_scopes=SCOPES):
        super().__init__(workdir / "idpyoidc.log")
        self.workdir = workdir
        self.host = LOOPBACK
        self.access_token_seconds = access_token_seconds
        self.passwords = {name: secrets.token_urlsafe(12) for name in users}
        self.frontend = IdpyoidcClient("frontend", secrets.token_urlsafe(24))
        self.relay_client = IdpyoidcClient("orders-relay", secrets.token_urlsafe(24))
        self.exchange_audiences = list(exchange_audiences)
        self.exchange_resources = list(exchange_resources)
        self.exchange_scopes = list(exchange_scopes)
        self.http = requests.Session()
        self.http.trust_env = False  # loopback only: no proxy from the environment
        self._last_sensitive: dict[str, str] = {}

    def start(self) -> "IdpyoidcIdP":
        if IDP_PYTHON == sys.executable and importlib.util.find_spec("idpyoidc") is None:
            pytest.fail(f"idpyoidc is not importable by {sys.executable}: install tests/requirements.txt "
                        f"(make integration-test uses .venv-test), or set OAUTH_RELAY_TEST_IDP_PYTHON")
        spec = self.workdir / "idpyoidc-spec.json"
        spec.touch(mode=0o600)
        spec.write_text(json.dumps({
            "access_token_seconds": self.access_token_seconds,
            "users": {name: {"password": password, "email": f"{name}@example.test"}
                      for name, password in self.passwords.items()},
            "clients": [
                {"client_id": self.frontend.client_id, "client_secret": self.frontend.client_secret,
                 "auth_methods": ["client_secret_post"], "grant_types": ["password"], "scopes": list(SCOPES),
                 "caller_audience": [self.relay_client.client_id]},
                {"client_id": self.relay_client.client_id, "client_secret": self.relay_client.client_secret,
                 "auth_methods": ["client_secret_basic", "client_secret_post"], "grant_types": [EXCHANGE_GRANT],
                 "scopes": list(SCOPES),
                 "exchange": {"audiences": self.exchange_audiences, "resources": self.exchange_resources,
                              "scopes": self.exchange_scopes}},
            ],
        }))
        self._spawn([IDP_PYTHON, str(HERE / "idp_idpyoidc_server.py"), "--dir", str(self.workdir), "--spec", str(spec),
                     "--host", self.host, "--port", "0"], STARTUP_SECONDS)
        return self

    # -- where things are ---------------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def token_url(self) -> str:
        return f"{self.url}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks.json"

    @property
    def discovery_url(self) -> str:
        return f"{self.url}/.well-known/openid-configuration"

    @property
    def introspection_url(self) -> str:
        return f"{self.url}/introspection"

    # -- relay configuration -------------------------------------------------------------------

    def identity(self, **options) -> dict:
        """An `identities` entry exchanging the caller's token as `orders-relay` (found by
        discovery from `issuer`), for the first exchange audience; `options` add or replace keys
        (None removes one)."""
        ident = {"issuer": self.issuer, "grant": EXCHANGE_GRANT, "subjectTokenFrom": "caller",
                 "clientId": self.relay_client.client_id, "clientSecret": self.relay_client.client_secret,
                 "audience": self.exchange_audiences[0], **options}
        return {k: v for k, v in ident.items() if v is not None}

    def inbound(self, **options) -> dict:
        """A route's `inbound` entry accepting the callers' tokens (aud = orders-relay)."""
        entry = {"issuer": self.issuer, "audiences": [self.relay_client.client_id], "jwksUrl": self.jwks_url, **options}
        return {k: v for k, v in entry.items() if v is not None}

    # -- tokens, asked directly -------------------------------------------------------------------

    def caller_token(self, username: str = "alice") -> str:
        """A caller's access token: the password grant of client A (frontend) for `username`."""
        resp = self.http.post(self.token_url, timeout=scaled(HTTP_SECONDS), data={
            "grant_type": "password", "username": username, "password": self.passwords[username],
            "client_id": self.frontend.client_id, "client_secret": self.frontend.client_secret,
            "scope": " ".join(SCOPES)})
        assert resp.status_code == 200, f"password grant for {username}: HTTP {resp.status_code} {resp.text[:300]}"
        return resp.json()["access_token"]

    def exchange(self, subject_token: str, client_auth: str = "basic", **form) -> requests.Response:
        """An RFC 8693 request of client B (orders-relay) for `subject_token`, asked directly (no
        relay); `client_auth` "basic" or "post"; `form` adds or replaces fields (`audience`,
        `resource`, `scope`, `subject_token_type`; None removes one)."""
        fields = {"grant_type": EXCHANGE_GRANT, "subject_token": subject_token,
                  "subject_token_type": ACCESS_TOKEN_TYPE, **form}
        fields = {k: v for k, v in fields.items() if v is not None}
        auth = None
        if client_auth == "basic":
            auth = (self.relay_client.client_id, self.relay_client.client_secret)
        else:
            fields.update(client_id=self.relay_client.client_id, client_secret=self.relay_client.client_secret)
        return self.http.post(self.token_url, data=fields, auth=auth, timeout=scaled(HTTP_SECONDS))

    def jwks(self) -> jwk.JWKSet:
        resp = self.http.get(self.jwks_url, timeout=scaled(HTTP_SECONDS))
        assert resp.status_code == 200, f"JWKS: HTTP {resp.status_code}"
        return jwk.JWKSet.from_json(resp.text)

    def verify(self, token: str) -> dict:
        """The claims of an access token this server signed (RS256, its JWKS), checked by
        jwcrypto: signature, `iss`, `exp`. Fails the test otherwise."""
        try:
            checked = jwt.JWT(jwt=token, key=self.jwks(), algs=["RS256"], expected_type="JWS",
                              check_claims={"iss": self.issuer, "exp": None})
        except Exception as err:  # jwcrypto's errors name the check that failed, never the token
            pytest.fail(f"not a token of this idpyoidc server: {type(err).__name__}: {err}")
        return json.loads(checked.claims)

    # -- observation and control -----------------------------------------------------------------

    def token_requests(self, **match) -> list[dict]:
        """The records of POST /token in order (idp_idpyoidc_recorder.py); keyword arguments keep
        only records whose fields equal them (status=200, client_auth="post")."""
        records = self.control("GET", "/_test/token-requests")["requests"]
        return [r for r in records if all(r.get(k) == v for k, v in match.items())]

    def exchanges(self, **match) -> list[dict]:
        """The token-exchange requests the server answered (any status), in order."""
        return self.token_requests(grant_type=EXCHANGE_GRANT, **match)

    def exchange_count(self, **match) -> int:
        return len(self.exchanges(**match))

    def wait_for_exchanges(self, count: int, timeout: float = 10) -> list[dict]:
        """Polls until at least `count` exchanges were answered (bounded); returns them."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            found = self.exchanges()
            if len(found) >= count:
                return found
            if time.monotonic() >= deadline:
                pytest.fail(f"idpyoidc answered {len(found)} exchanges, not {count}, within {scaled(timeout):.1f}s")
            time.sleep(0.02)

    def hold(self, ms: int) -> None:
        """Every later token request waits `ms` at the server before idpyoidc handles it."""
        self.control("POST", "/_test/hold", {"ms": ms})

    def sensitive_values(self) -> dict[str, str]:
        """The client secrets, the users' passwords and every access token the server issued
        (each JWT also by its signature: their headers repeat). Read while the server runs; after
        it stopped, the last answer stands."""
        values = {"frontend client secret": self.frontend.client_secret,
                  "orders-relay client secret": self.relay_client.client_secret}
        values.update({f"password of {name}": password for name, password in self.passwords.items()})
        if self.running():
            issued = self.control("GET", "/_test/token-requests")["issued"]
            self._last_sensitive = {}
            for i, token in enumerate(issued, 1):
                self._last_sensitive[f"access token issued by idpyoidc ({i})"] = token
                self._last_sensitive[f"access token signature issued by idpyoidc ({i})"] = token.rpartition(".")[2]
        return {**values, **self._last_sensitive}
