
/// How an identity's token responses are read: their shape (OAuth's, or a GitHub App's), the
/// field names (`responseFields`, standard by default), the lifetime assumed when a response gives
/// none, and whether a `DPoP` token can be used (only with a key to prove possession of).
public struct TokenResponseFormat: Sendable, Equatable {
    /// The kinds of answer a token request gets.
    public enum Shape: Sendable, Equatable {
        /// RFC 6749 §5: `access_token`, `expires_in`, … or an OAuth error.
        case oauth
        /// GitHub's installation token: `token` and `expires_at`, or GitHub's error object.
        case gitHubInstallationToken
    }

    public var shape: Shape
    public var fields: ResponseFields
    public var defaultExpiresInSeconds: Double
    public var acceptsDPoP: Bool

    public init(shape: Shape = .oauth, fields: ResponseFields = ResponseFields(), defaultExpiresInSeconds: Double = 3600,
                acceptsDPoP: Bool = false) {
        self.shape = shape
        self.fields = fields
        self.defaultExpiresInSeconds = defaultExpiresInSeconds
        self.acceptsDPoP = acceptsDPoP
    }

    public init(identity: Identity) {
        if case .gitHubAppInstallation = identity.grant {
            self = GitHubTokenAnswer.format
        } else {
            self.init(fields: identity.responseFields, defaultExpiresInSeconds: identity.defaultExpiresInSeconds,
                      acceptsDPoP: identity.dpop != nil)
        }
    }
}
