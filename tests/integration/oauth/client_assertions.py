"""Client assertions (RFC 7523 §3, RFC 7521 §4.2) checked the way an authorization server checks
them, with jwcrypto (a JOSE implementation the relay did not write): for the stub IdP, which
refuses a token request whose assertion fails (401 invalid_client), and for the tests.

`AssertionPolicy.from_json({"client_id", "audience", "key": {JWK} | "secret": str, "algs": [...]})`
holds what the IdP knows about the client; `check(form, now)` returns the verified header and
claims or raises AssertionRejected naming the rule (never the assertion or the key).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from jwcrypto import jwk, jws

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
MAX_LIFETIME = 60  # what the relay promises; a real IdP may allow more
CLOCK_SKEW = 5


class AssertionRejected(Exception):
    pass


@dataclass
class AssertionPolicy:
    client_id: str
    audience: str
    key: jwk.JWK
    algs: list[str]
    seen_jtis: set[str] = field(default_factory=set)

    @classmethod
    def from_json(cls, spec: dict) -> "AssertionPolicy":
        if "secret" in spec:
            key = jwk.JWK(kty="oct", k=jwk.base64url_encode(spec["secret"].encode()))
            algs = ["HS256"]
        else:
            key = jwk.JWK(**spec["key"])
            algs = spec.get("algs") or ["RS256", "PS256", "ES256"]
        return cls(spec["client_id"], spec["audience"], key, algs)

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
        token = jws.JWS()
        try:
            token.deserialize(assertions[0])
            token.verify(self.key)
        except Exception as error:  # jwcrypto raises several types; all mean "not verified"
            raise AssertionRejected(f"the signature does not verify ({type(error).__name__})") from None
        header = token.jose_header
        if header.get("alg") not in self.algs:
            raise AssertionRejected(f"alg {header.get('alg')} is not allowed for this client")
        claims = json.loads(token.payload)
        if claims.get("iss") != self.client_id or claims.get("sub") != self.client_id:
            raise AssertionRejected("iss and sub must both be the client id")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.audience not in audiences:
            raise AssertionRejected(f"aud {audiences} does not name {self.audience}")
        iat, exp, jti = claims.get("iat"), claims.get("exp"), claims.get("jti")
        if not isinstance(iat, int) or not isinstance(exp, int):
            raise AssertionRejected("iat and exp must be integers")
        if exp <= now - CLOCK_SKEW:
            raise AssertionRejected("the assertion has expired")
        if iat > now + CLOCK_SKEW:
            raise AssertionRejected("the assertion is issued in the future")
        if exp - iat > MAX_LIFETIME:
            raise AssertionRejected(f"the assertion lives {exp - iat} s, more than {MAX_LIFETIME}")
        if not isinstance(jti, str) or len(jti) < 16:
            raise AssertionRejected("jti is missing or too short")
        if jti in self.seen_jtis:
            raise AssertionRejected("jti replayed")
        self.seen_jtis.add(jti)
        return header, claims
