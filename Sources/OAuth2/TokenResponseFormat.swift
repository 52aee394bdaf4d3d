
/// How an identity's token responses are read: the field names (`responseFields`, standard by
/// default) and the lifetime assumed when a response gives none.
public struct TokenResponseFormat: Sendable, Equatable {
    public var fields: ResponseFields
    public var defaultExpiresInSeconds: Double

    public init(fields: ResponseFields = ResponseFields(), defaultExpiresInSeconds: Double = 3600) {
        self.fields = fields
        self.defaultExpiresInSeconds = defaultExpiresInSeconds
    }

    public init(identity: Identity) {
        self.init(fields: identity.responseFields, defaultExpiresInSeconds: identity.defaultExpiresInSeconds)
    }
}
