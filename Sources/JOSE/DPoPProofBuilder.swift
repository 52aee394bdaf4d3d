import TLS

/// Makes DPoP proofs (RFC 9449 §4.2) for one key: the header (`typ: dpop+jwt`, `alg`, the public
/// `jwk`) is encoded once, so a proof per forwarded request costs the claims and one signature.
///
/// Each proof is a pure function of its inputs; the clock and the random source are the caller's.
public struct DPoPProofBuilder: Sendable {
    public let signer: JWSSigner
    public let header: JWSHeader
    private let encodedHeader: String
    /// The RFC 7638 thumbprint of the key, what a DPoP-bound token's `cnf.jkt` holds.
    public let keyThumbprint: String

    /// A builder for `signer`, which must hold a private key (DPoP has no HMAC form).
    public init(signer: JWSSigner) throws(JOSEError) {
        guard let jwk = try signer.publicJWK() else { throw .algorithmNotAllowed("DPoP proofs need an asymmetric key, not HS256") }
        self.signer = signer
        self.header = JWSHeader(algorithm: signer.algorithm, type: "dpop+jwt", jwk: jwk)
        self.encodedHeader = Base64URL.encode(Array(header.jsonValue.serialized.utf8))
        self.keyThumbprint = jwk.thumbprint
    }

    /// A proof for a request.
    ///
    /// - Parameters:
    ///   - method: the request method (`htm`), e.g. `POST`.
    ///   - url: the target URI; query and fragment are left out of `htu` (§4.2).
    ///   - accessToken: the token the request carries, for `ath` (the SHA-256 of its ASCII, base64url).
    ///   - nonce: the server's latest `DPoP-Nonce`, if it sent one.
    public func proof(method: String, url: String, accessToken: String? = nil, nonce: String? = nil,
                      now: Int64, random: inout some RandomNumberGenerator) throws(JOSEError) -> String {
        var claims = JWTClaims()
        claims.jwtID = Base64URL.encode(random.bytes(16))
        claims["htm"] = .string(method)
        claims["htu"] = .string(Self.targetURI(url))
        claims.issuedAt = now
        if let accessToken { claims["ath"] = .string(Base64URL.encode(SHA256.hash(Array(accessToken.utf8)))) }
        if let nonce { claims.nonce = nonce }
        return try JWS(header: header, encodedHeader: encodedHeader, payload: claims.payload, signer: signer).compactSerialization
    }

    /// `url` without its query and fragment.
    static func targetURI(_ url: String) -> String {
        String(url.prefix { $0 != "?" && $0 != "#" })
    }
}
