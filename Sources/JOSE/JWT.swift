/// A signed JWT read in one step, as an ID token is: the compact JWS is parsed, its signature
/// verified, and only then are its claims read and checked. Nothing of an unverified token is
/// returned.
public enum JWT {
    /// The claims of `compact`, verified against the key its `kid` names in `keys` (an IdP's
    /// JWKS) and checked against `rules` at `now`. `.keyNotFound` means the JWKS may have rotated:
    /// refetch it once and call again.
    public static func verifiedClaims(_ compact: String, keys: JWKSet, allowing algorithms: Set<JWSAlgorithm>,
                                      rules: JWTValidationRules, now: Int64, leeway: Int64 = 60) throws(JOSEError) -> JWTClaims {
        let jws = try JWS(compact: compact)
        try keys.verify(jws, allowing: algorithms)
        return try checkedClaims(of: jws, rules: rules, now: now, leeway: leeway)
    }

    /// The claims of `compact`, verified with `key` and checked against `rules` at `now`.
    public static func verifiedClaims(_ compact: String, key: JWSVerificationKey,
                                      rules: JWTValidationRules, now: Int64, leeway: Int64 = 60) throws(JOSEError) -> JWTClaims {
        let jws = try JWS(compact: compact)
        try jws.verify(with: key)
        return try checkedClaims(of: jws, rules: rules, now: now, leeway: leeway)
    }

    private static func checkedClaims(of jws: JWS, rules: JWTValidationRules, now: Int64, leeway: Int64) throws(JOSEError) -> JWTClaims {
        let claims = try JWTClaims(payload: jws.payload)
        try claims.validate(rules, now: now, leeway: leeway)
        return claims
    }
}
