/// The JWT a GitHub App authenticates as itself with, to ask for an installation access token
/// (GitHub's "Generating a JSON Web Token (JWT) for a GitHub App"): signed with RS256 (the only
/// algorithm GitHub verifies), `iss` the App's ID or client ID, `iat` 60 s in the past (GitHub's
/// advice against clock drift) and `exp` 9 minutes ahead, under GitHub's limit of 10 minutes into
/// its future with a minute to spare for a clock that runs ahead of GitHub's; `exp − iat` is then
/// exactly the 10 minutes GitHub allows. No `aud`, `sub` or `jti`: GitHub reads none.
///
/// A pure function of its inputs: the clock is the caller's.
public enum GitHubAppJWT {
    /// How far before now `iat` is put.
    public static let issuedBeforeNow: Int64 = 60
    /// How far after now `exp` is put.
    public static let expiresAfterNow: Int64 = 9 * 60

    /// The compact JWS for `Authorization: Bearer`. Throws when `signer` does not sign RS256.
    public static func make(issuer: String, signer: JWSSigner, now: Int64) throws(JOSEError) -> String {
        guard signer.algorithm == .rs256 else {
            throw .algorithmNotAllowed("GitHub verifies App JWTs with RS256 only, not \(signer.algorithm.rawValue)")
        }
        var claims = JWTClaims()
        claims.issuedAt = now - issuedBeforeNow
        claims.expiry = now + expiresAfterNow
        claims.issuer = issuer
        return try JWS.sign(claims.payload, header: JWSHeader(algorithm: .rs256, type: "JWT"), with: signer).compactSerialization
    }
}
