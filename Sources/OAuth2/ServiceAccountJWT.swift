import JOSE
import JSON
import SafeText

/// The JWTs a Google service account signs with its key (`ServiceAccountGrant` says when each is
/// used): RS256, header `typ` JWT and `kid` = `private_key_id`, `iss` = `client_email`, `iat` the
/// caller's clock and `exp` exactly `lifetime` later. Pure functions of their inputs.
public enum ServiceAccountJWT {
    /// An hour: the longest lifetime Google's token endpoint accepts for an assertion, and the
    /// exact one AIP-4111 gives a self-signed access token.
    public static let lifetime: Int64 = 3600

    /// The jwt-bearer grant's assertion (RFC 7523 §2.1, Google's "Preparing to make an authorized
    /// API call"): `iss`, `sub` when acting for `subject` (domain-wide delegation), `scope`,
    /// `aud` = the token URL it is sent to, `iat`, `exp`.
    public static func assertion(_ key: ServiceAccountKey, scope: String, subject: String?, audience: String,
                                 issuedAt: Int64) throws(JOSEError) -> String {
        var claims = JWTClaims()
        claims.issuer = key.clientEmail
        claims.subject = subject
        claims["scope"] = .string(scope)
        claims.audience = [audience]
        return try signed(claims, with: key, issuedAt: issuedAt)
    }

    /// A self-signed access token for the API `audience` (AIP-4111): `iss` = `sub` =
    /// `client_email`, `aud`, `iat`, `exp`.
    public static func accessToken(_ key: ServiceAccountKey, audience: String, issuedAt: Int64) throws(JOSEError) -> String {
        var claims = JWTClaims()
        claims.issuer = key.clientEmail
        claims.subject = key.clientEmail
        claims.audience = [audience]
        return try signed(claims, with: key, issuedAt: issuedAt)
    }

    /// A self-signed access token with a `scope` claim instead of an `aud` (AIP-4111: never both).
    public static func accessToken(_ key: ServiceAccountKey, scope: String, issuedAt: Int64) throws(JOSEError) -> String {
        var claims = JWTClaims()
        claims.issuer = key.clientEmail
        claims.subject = key.clientEmail
        claims["scope"] = .string(scope)
        return try signed(claims, with: key, issuedAt: issuedAt)
    }

    private static func signed(_ claims: JWTClaims, with key: ServiceAccountKey, issuedAt: Int64) throws(JOSEError) -> String {
        var claims = claims
        claims.issuedAt = issuedAt
        claims.expiry = issuedAt + lifetime
        let signer = key.signingKey.signer
        let header = JWSHeader(algorithm: signer.algorithm, type: "JWT", keyID: key.keyID)
        return try JWS.sign(claims.payload, header: header, with: signer).compactSerialization
    }
}

extension ServiceAccountGrant {
    /// The access token a self-signed service account makes for itself at `issuedAt` (the JWT's
    /// `iat`, wall-clock seconds), as the answer a token endpoint would have given: a Bearer token
    /// whose lifetime counts from `unixTime` (now, wall-clock) to its `exp`. Throws for a grant
    /// that goes to the token endpoint, and when the key cannot sign.
    public func selfSignedToken(issuedAt: Int64, unixTime: Double) throws(TokenEndpointError) -> TokenResponse {
        let jwt: String?
        do throws(JOSEError) {
            jwt = try selfSignedJWT(issuedAt: issuedAt)
        } catch {
            // JOSE errors name the rule or the step, never key material.
            throw .serviceAccountJWTFailed(reason: error.description)
        }
        guard let jwt else { throw .serviceAccountJWTFailed(reason: "this service account gets its tokens from its token endpoint") }
        return TokenResponse(accessToken: Secret(jwt), tokenType: "Bearer",
                             expiresIn: Double(issuedAt + ServiceAccountJWT.lifetime) - unixTime, expirySource: .jwtExp)
    }

    /// The self-signed JWT, nil for a grant that goes to the token endpoint.
    private func selfSignedJWT(issuedAt: Int64) throws(JOSEError) -> String? {
        switch token {
        case .selfSignedAudience(let audience): try ServiceAccountJWT.accessToken(key, audience: audience, issuedAt: issuedAt)
        case .selfSignedScope(let scope): try ServiceAccountJWT.accessToken(key, scope: scope, issuedAt: issuedAt)
        case .tokenEndpoint: nil
        }
    }
}

/// The jwt-bearer assertion a service account's token request still needs (its `assertion`
/// field), made only when the request is about to be sent (`TokenRequest.withGrantAssertion`),
/// like a client assertion: a retry gets a new one, and none is made under the lifecycle's lock.
struct PendingGrantAssertion: Sendable {
    let key: ServiceAccountKey
    let scope: String
    let subject: String?
    /// The token URL the request goes to.
    let audience: String

    func make(issuedAt: Int64) throws(TokenEndpointError) -> String {
        do throws(JOSEError) {
            return try ServiceAccountJWT.assertion(key, scope: scope, subject: subject, audience: audience, issuedAt: issuedAt)
        } catch {
            throw .serviceAccountJWTFailed(reason: error.description)
        }
    }
}
