"""Workload identity federation, both sides, with jwcrypto (a JOSE library the relay did not write):

- `WorkloadIssuer`: the test plays a cluster's OIDC issuer (what Kubernetes serves at its service
  account issuer URL): an RSA key, its discovery document and JWKS over HTTP on loopback, and
  `token(...)`, a signed workload JWT like a projected service-account token (iss, sub
  `system:serviceaccount:NS:NAME`, aud, iat, nbf, exp, jti, the `kubernetes.io` claim).
- `WorkloadAssertionPolicy`: what a federating IdP (Entra, Google's STS, Okta) checks of such a JWT
  sent as `client_assertion` (RFC 7523 §3, RFC 7521 §4.2): the assertion type, the signature with the
  issuer's published key (by kid), iss, sub, aud, exp and nbf, `client_id` when the policy names one,
  and, when the test names it, that it is the current token (its `jti`). The stub IdP holds one
  (`stub.script(workload_assertion={...})`, idp_stub.py) and refuses a failing request with 401
  invalid_client; it fetches the JWKS from the issuer's discovery document, as an IdP does.
`check` raises AssertionRejected naming the rule, never the assertion or the key.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto import jwk, jws, jwt

from client_assertions import ASSERTION_TYPE, CLOCK_SKEW, AssertionRejected

LOOPBACK = "127.0.0.1"


class WorkloadIssuer:
    """A cluster's OIDC issuer on a free loopback port: discovery and JWKS; signs workload JWTs."""

    def __init__(self) -> None:
        self.key = jwk.JWK.from_pyca(rsa.generate_private_key(public_exponent=65537, key_size=2048))
        self.kid = self.key.thumbprint()
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/openid/v1/jwks",
                            "response_types_supported": ["id_token"], "subject_types_supported": ["public"],
                            "id_token_signing_alg_values_supported": ["RS256"]}
                elif self.path == "/openid/v1/jwks":
                    body = {"keys": [{**issuer.key.export_public(as_dict=True), "kid": issuer.kid, "use": "sig", "alg": "RS256"}]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer((LOOPBACK, 0), Handler)
        self.url = f"http://{LOOPBACK}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def token(self, subject: str, audience: str, lifetime: int = 3600, issued: float | None = None) -> str:
        """A projected-token-like JWT, RS256 with this issuer's key, valid `lifetime` s from `issued`."""
        now = int(time.time() if issued is None else issued)
        claims = {"aud": [audience], "exp": now + lifetime, "iat": now, "nbf": now, "iss": self.url, "sub": subject,
                  "jti": secrets.token_hex(16),
                  "kubernetes.io": {"namespace": subject.split(":")[2], "serviceaccount": {"name": subject.split(":")[3]}}}
        token = jwt.JWT(header={"alg": "RS256", "kid": self.kid, "typ": "JWT"}, claims=claims)
        token.make_signed_token(self.key)
        return token.serialize()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@dataclass
class WorkloadAssertionPolicy:
    issuer: str
    keys: jwk.JWKSet
    subject: str
    audience: str
    client_id: str | None = None
    jti: str | None = None

    @classmethod
    def from_json(cls, spec: dict, jwks: dict) -> "WorkloadAssertionPolicy":
        return cls(spec["issuer"], jwk.JWKSet.from_json(json.dumps(jwks)), spec["subject"], spec["audience"],
                   spec.get("client_id"), spec.get("jti"))

    def check(self, form: list[tuple[str, str]], now: float | None = None) -> tuple[dict, dict]:
        """The verified (header, claims) of the request's one client assertion."""
        now = time.time() if now is None else now
        fields: dict[str, list[str]] = {}
        for name, value in form:
            fields.setdefault(name, []).append(value)
        if fields.get("client_assertion_type") != [ASSERTION_TYPE]:
            raise AssertionRejected("client_assertion_type is missing or not jwt-bearer")
        assertions = fields.get("client_assertion", [])
        if len(assertions) != 1:
            raise AssertionRejected(f"{len(assertions)} client_assertion fields, expected 1")
        if "client_secret" in fields:
            raise AssertionRejected("a client_secret next to a client assertion")
        if self.client_id is not None and fields.get("client_id") != [self.client_id]:
            raise AssertionRejected("client_id is missing or not the federated application's")
        token = jws.JWS()
        try:
            token.deserialize(assertions[0])
            header = token.jose_header
            key = self.keys.get_key(header.get("kid"))
            if key is None:
                raise AssertionRejected("the kid is not in the issuer's JWKS")
            token.verify(key, alg="RS256")
        except AssertionRejected:
            raise
        except Exception as error:  # jwcrypto raises several types; all mean "not verified"
            raise AssertionRejected(f"the signature does not verify ({type(error).__name__})") from None
        claims = json.loads(token.payload)
        if claims.get("iss") != self.issuer:
            raise AssertionRejected("iss is not the trusted issuer")
        if claims.get("sub") != self.subject:
            raise AssertionRejected("sub is not the federated subject")
        audience = claims.get("aud")
        if self.audience not in (audience if isinstance(audience, list) else [audience]):
            raise AssertionRejected("aud does not name this IdP")
        exp, nbf = claims.get("exp"), claims.get("nbf", claims.get("iat"))
        if not isinstance(exp, int) or exp <= now - CLOCK_SKEW:
            raise AssertionRejected("the assertion has expired")
        if isinstance(nbf, int) and nbf > now + CLOCK_SKEW:
            raise AssertionRejected("the assertion is not valid yet")
        if self.jti is not None and claims.get("jti") != self.jti:
            raise AssertionRejected("not the current workload token (another jti)")
        return header, claims
