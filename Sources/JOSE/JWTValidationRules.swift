/// What `JWTClaims.validate` demands beyond the time checks.
public struct JWTValidationRules: Sendable, Equatable {
    public var issuer: String?
    /// A value `aud` must contain (an ID token's client id).
    public var audience: String?
    /// The nonce sent in the authorization request.
    public var nonce: String?
    public var requiresExpiry: Bool

    public init(issuer: String? = nil, audience: String? = nil, nonce: String? = nil, requiresExpiry: Bool = true) {
        self.issuer = issuer
        self.audience = audience
        self.nonce = nonce
        self.requiresExpiry = requiresExpiry
    }
}
