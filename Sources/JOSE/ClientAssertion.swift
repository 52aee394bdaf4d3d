/// A client assertion for `private_key_jwt` and `client_secret_jwt` (RFC 7523 §3, RFC 7521 §4.2,
/// OpenID Connect Core §9): `iss` = `sub` = the client id, `aud` the token endpoint (or the
/// issuer), a random `jti`, `iat` now and `exp` shortly after.
///
/// A pure function of its inputs: the clock and the random source are the caller's.
public enum ClientAssertion {
    /// What goes in the token request's `client_assertion_type`.
    public static let type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

    /// The longest lifetime an assertion gets: it is used once, straight away.
    public static let maximumLifetime: Int64 = 60

    /// The lifetime an assertion gets unless told otherwise: ten seconds under the cap, so an IdP
    /// that allows at most 60 s (Glewlwyd's `request-maximum-exp`, measured as `exp` minus *its*
    /// now) still accepts it when its clock trails ours. Even on one host it can: glibc's
    /// `time()` reads the coarse clock, up to a tick behind `gettimeofday`, and a relay that
    /// signed at x.000 s was refused by an IdP that still read x−1.
    public static let defaultLifetime: Int64 = 50

    /// The compact JWS for `client_assertion`.
    ///
    /// - Parameters:
    ///   - signer: the client's private key (RS256, PS256, ES256, EdDSA) or its secret (HS256).
    ///   - keyID: the `kid` the IdP knows the key by, if it needs one.
    ///   - certificate: the header members naming the key's certificate (`x5t#S256`, `x5t`,
    ///     `x5c`), for an IdP that registered a certificate rather than a key.
    ///   - lifetime: seconds until `exp`, at most `maximumLifetime`.
    public static func make(clientID: String, audience: String, signer: JWSSigner, keyID: String? = nil,
                            certificate: JWSCertificateReference? = nil, now: Int64, lifetime: Int64 = defaultLifetime,
                            random: inout some RandomNumberGenerator) throws(JOSEError) -> String {
        var claims = JWTClaims()
        claims.issuer = clientID
        claims.subject = clientID
        claims.audience = [audience]
        claims.jwtID = Base64URL.encode(random.bytes(16))
        claims.issuedAt = now
        claims.expiry = now + min(max(lifetime, 1), maximumLifetime)
        var header = JWSHeader(algorithm: signer.algorithm, type: "JWT", keyID: keyID)
        certificate?.add(to: &header)
        return try JWS.sign(claims.payload, header: header, with: signer).compactSerialization
    }
}
