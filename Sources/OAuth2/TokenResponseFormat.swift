
/// How an identity's token responses are read: the field names (`responseFields`, standard by
/// default), the lifetime assumed when a response gives none, and whether a `DPoP` token can be
/// used (only with a key to prove possession of).
public struct TokenResponseFormat: Sendable, Equatable {
    public var fields: ResponseFields
    public var defaultExpiresInSeconds: Double
    public var acceptsDPoP: Bool

    public init(fields: ResponseFields = ResponseFields(), defaultExpiresInSeconds: Double = 3600, acceptsDPoP: Bool = false) {
        self.fields = fields
        self.defaultExpiresInSeconds = defaultExpiresInSeconds
        self.acceptsDPoP = acceptsDPoP
    }

    public init(identity: Identity) {
        self.init(fields: identity.responseFields, defaultExpiresInSeconds: identity.defaultExpiresInSeconds,
                  acceptsDPoP: identity.dpop != nil)
    }
}
