"""Client assertions (RFC 7523 §3, RFC 7521 §4.2) checked the way an authorization server checks
them, with jwcrypto (a JOSE implementation the relay did not write): for the stub IdP, which
refuses a token request whose assertion fails (401 invalid_client), and for the tests.

`AssertionPolicy.from_json({"client_id", "audience", "key": {JWK} | "secret": str, "algs": [...]})`
holds what the IdP knows about the client; `check(form, now)` returns the verified header and
claims or raises AssertionRejected naming the rule (never the assertion or the key).

A certificate credential as Microsoft Entra ID checks it ("certificate": PEM instead of "key"):
the signature is checked with the certificate's public key; the header has typ JWT and names the
certificate by x5t#S256 (base64url SHA-256 of its DER) or x5t (SHA-1), every one present matching,
and an x5c, when sent, starts with the certificate; algs RS256 and PS256 unless given. Optional
for any policy: "max_lifetime" (exp - iat, 60 s unless given; Entra allows 10 min),
"client_id_in_form" (true: client_id must be sent and equal iss, as Entra requires; false: must
not be sent), "form" ({name: value}: the form must hold exactly these fields besides the
assertion's and client_id, with these values: grant_type, scope, ...).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.hazmat.primitives import serialization
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
    certificate_der: bytes | None = None
    max_lifetime: int = MAX_LIFETIME
    client_id_in_form: bool | None = None
    form: dict[str, str] | None = None
    seen_jtis: set[str] = field(default_factory=set)

    @classmethod
    def from_json(cls, spec: dict) -> "AssertionPolicy":
        certificate_der = None
        if "secret" in spec:
            key = jwk.JWK(kty="oct", k=jwk.base64url_encode(spec["secret"].encode()))
            algs = ["HS256"]
        elif "certificate" in spec:
            certificate = x509.load_pem_x509_certificate(spec["certificate"].encode())
            certificate_der = certificate.public_bytes(serialization.Encoding.DER)
            key = jwk.JWK.from_pyca(certificate.public_key())
            algs = spec.get("algs") or ["RS256", "PS256"]
        else:
            key = jwk.JWK(**spec["key"])
            algs = spec.get("algs") or ["RS256", "PS256", "ES256"]
        return cls(spec["client_id"], spec["audience"], key, algs, certificate_der,
                   spec.get("max_lifetime", MAX_LIFETIME), spec.get("client_id_in_form"), spec.get("form"))

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
        self.check_form(fields)
        token = jws.JWS()
        try:
            token.deserialize(assertions[0])
            token.verify(self.key)
        except Exception as error:  # jwcrypto raises several types; all mean "not verified"
            raise AssertionRejected(f"the signature does not verify ({type(error).__name__})") from None
        header = token.jose_header
        if header.get("alg") not in self.algs:
            raise AssertionRejected(f"alg {header.get('alg')} is not allowed for this client")
        if self.certificate_der is not None:
            self.check_certificate_header(header)
        claims = json.loads(token.payload)
        if claims.get("iss") != self.client_id or claims.get("sub") != self.client_id:
            raise AssertionRejected("iss and sub must both be the client id")
        if self.client_id_in_form and fields.get("client_id") != [claims["iss"]]:
            raise AssertionRejected("client_id in the form is missing or not the assertion's iss")
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
        if exp - iat > self.max_lifetime:
            raise AssertionRejected(f"the assertion lives {exp - iat} s, more than {self.max_lifetime}")
        if not isinstance(jti, str) or len(jti) < 16:
            raise AssertionRejected("jti is missing or too short")
        if jti in self.seen_jtis:
            raise AssertionRejected("jti replayed")
        self.seen_jtis.add(jti)
        return header, claims

    def check_form(self, fields: dict[str, list[str]]) -> None:
        """client_id as `client_id_in_form` says; with `form`, exactly its fields (each once, with
        its value) besides client_id and the assertion's two."""
        if self.client_id_in_form is False and "client_id" in fields:
            raise AssertionRejected("a client_id this client must not send")
        if self.client_id_in_form and len(fields.get("client_id", [])) != 1:
            raise AssertionRejected("client_id is missing from the form (or sent twice)")
        if self.form is None:
            return
        expected = {"client_assertion_type", "client_assertion", *self.form, *(["client_id"] if self.client_id_in_form else [])}
        if set(fields) != expected:
            raise AssertionRejected(f"form fields {sorted(fields)}, expected {sorted(expected)}")
        for name, value in self.form.items():
            if fields[name] != [value]:
                raise AssertionRejected(f"{name} is {fields[name]}, expected {value!r}")

    def check_certificate_header(self, header: dict) -> None:
        """typ JWT and the certificate named by x5t#S256 or x5t (every one sent matching), and an x5c
        that starts with it."""
        if header.get("typ") != "JWT":
            raise AssertionRejected(f"typ is {header.get('typ')!r}, not JWT")
        thumbprints = {"x5t#S256": b64url(hashlib.sha256(self.certificate_der).digest()),
                       "x5t": b64url(hashlib.sha1(self.certificate_der).digest())}
        sent = [name for name in thumbprints if name in header]
        if not sent:
            raise AssertionRejected("neither x5t#S256 nor x5t names the certificate")
        for name in sent:
            if header[name] != thumbprints[name]:
                raise AssertionRejected(f"{name} is not the thumbprint of the registered certificate")
        if "x5c" in header:
            chain = header["x5c"]
            if not isinstance(chain, list) or not chain or base64.b64decode(chain[0], validate=True) != self.certificate_der:
                raise AssertionRejected("x5c does not start with the registered certificate")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
