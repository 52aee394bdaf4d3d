"""DPoP proofs (RFC 9449 §4.3) checked the way a server checks them, with jwcrypto (a JOSE
implementation the relay did not write): for the stub IdP (token requests), the DPoP resource
server (forwarded requests) and the tests.

`ProofChecker().check(proof, method, url, access_token=None, nonce=None, jkt=None)` returns the
verified (header, claims) or raises ProofRejected naming the rule (never the proof or a token).
It remembers every `jti` it accepted, so a replayed proof is refused; a proof whose only fault is
its nonce raises NonceMissing (and its `jti` is not remembered).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from urllib.parse import urlsplit, urlunsplit

from jwcrypto import jwk, jws

ASYMMETRIC_ALGS = {"ES256", "RS256", "PS256", "EdDSA"}
IAT_WINDOW = 60  # seconds either way


class ProofRejected(Exception):
    pass


class NonceMissing(ProofRejected):
    """The proof is good but for its nonce: the server answers `use_dpop_nonce` with the current one."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def access_token_hash(token: str) -> str:
    """`ath`: the base64url SHA-256 of the token's ASCII."""
    return b64url(hashlib.sha256(token.encode("ascii")).digest())


def without_query(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def unverified_claims(token: str) -> dict | None:
    """The claims of a JWT access token (for its `cnf`), or None when it is not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        return json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None


class ProofChecker:
    def __init__(self) -> None:
        self.seen_jtis: set[str] = set()

    def check(self, proof: str | None, method: str, url: str, access_token: str | None = None,
              nonce: str | None = None, jkt: str | None = None, now: float | None = None) -> tuple[dict, dict]:
        """The verified (header, claims) of `proof` for a `method` request to `url` (its query and
        fragment are left out, §4.2); `access_token`: `ath` must be its hash; `nonce`: the proof
        must carry it; `jkt`: the key must have this thumbprint (a bound token's `cnf.jkt`)."""
        now = time.time() if now is None else now
        if not proof:
            raise ProofRejected("no DPoP proof")
        token = jws.JWS()
        try:
            token.deserialize(proof)
            header = token.jose_header
        except Exception as error:  # jwcrypto raises several types; all mean "not a JWS"
            raise ProofRejected(f"not a compact JWS ({type(error).__name__})") from None
        if header.get("typ") != "dpop+jwt":
            raise ProofRejected(f"typ is {header.get('typ')!r}, not dpop+jwt")
        if header.get("alg") not in ASYMMETRIC_ALGS:
            raise ProofRejected(f"alg {header.get('alg')!r} is not an asymmetric algorithm")
        if not isinstance(header.get("jwk"), dict):
            raise ProofRejected("no jwk in the header")
        if any(member in header["jwk"] for member in ("d", "p", "q", "dp", "dq", "qi", "k")):
            raise ProofRejected("the header's jwk holds private key material")
        key = jwk.JWK(**header["jwk"])
        try:
            token.verify(key, alg=header["alg"])
        except Exception as error:
            raise ProofRejected(f"the signature does not verify with the header's jwk ({type(error).__name__})") from None
        claims = json.loads(token.payload)
        jti, iat = claims.get("jti"), claims.get("iat")
        if not isinstance(jti, str) or len(jti) < 16:
            raise ProofRejected("jti is missing or too short")
        if claims.get("htm") != method:
            raise ProofRejected(f"htm {claims.get('htm')!r} is not {method}")
        if claims.get("htu") != without_query(url):
            raise ProofRejected(f"htu {claims.get('htu')!r} is not {without_query(url)!r}")
        if not isinstance(iat, int) or abs(iat - now) > IAT_WINDOW:
            raise ProofRejected(f"iat {iat!r} is not within {IAT_WINDOW} s of now")
        if access_token is not None:
            if claims.get("ath") != access_token_hash(access_token):
                raise ProofRejected("ath is not the hash of the access token")
        elif "ath" in claims:
            raise ProofRejected("ath in a proof without an access token")
        if nonce is not None and claims.get("nonce") != nonce:
            raise NonceMissing("the proof does not carry the current nonce" if "nonce" in claims else "no nonce")
        thumbprint = key.thumbprint()
        if jkt is not None and thumbprint != jkt:
            raise ProofRejected("the proof's key is not the one the token is bound to (cnf.jkt)")
        if jti in self.seen_jtis:
            raise ProofRejected("jti replayed")
        self.seen_jtis.add(jti)
        return {**header, "thumbprint": thumbprint}, claims
