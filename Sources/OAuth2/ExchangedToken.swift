/// One token of an RFC 8693 exchange: the `subject_token`/`actor_token` form field and its
/// `…_token_type`. Either may be nil when `params` gives it.

import SafeText

public struct ExchangedToken: Sendable, Equatable {
    public var token: Secret?
    /// A token type URI such as `urn:ietf:params:oauth:token-type:jwt`.
    public var type: String?

    public init(token: Secret? = nil, type: String? = nil) {
        self.token = token
        self.type = type
    }
}
