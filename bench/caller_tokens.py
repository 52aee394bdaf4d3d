"""Callers' tokens for bench/caller-cpu.sh: an ES256 key, its JWKS, and signed access tokens, one
per caller, as an authorization server would issue them (iss, aud, sub, scope, iat, exp in 1 h).
Benchmarks only: the key is generated here and thrown away with the run's directory.

    python bench/caller_tokens.py DIR ISSUER AUDIENCE CALLERS

writes DIR/jwks.json (served by bench/token_issuer.py --jwks) and DIR/tokens.txt (one token a line).
"""
import json
import sys
import time

from jwcrypto import jwk, jwt

directory, issuer, audience, callers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
key = jwk.JWK.generate(kty="EC", crv="P-256", kid="bench-1", use="sig", alg="ES256")
with open(f"{directory}/jwks.json", "w") as out:
    out.write(json.dumps({"keys": [json.loads(key.export_public())]}))
now = int(time.time())
with open(f"{directory}/tokens.txt", "w") as out:
    for n in range(callers):
        claims = {"iss": issuer, "aud": audience, "sub": f"caller-{n}", "scope": "orders.read",
                  "iat": now, "exp": now + 3600}
        token = jwt.JWT(header={"alg": "ES256", "kid": "bench-1", "typ": "at+jwt"}, claims=claims)
        token.make_signed_token(key)
        out.write(token.serialize() + "\n")
