/// The fields an extension grant may set from dedicated config keys.

import SafeText

public struct ExtensionFields: Sendable, Equatable {
    public var assertion: Secret?
    public var subject: ExchangedToken
    public var actor: ExchangedToken

    public init(assertion: Secret? = nil, subject: ExchangedToken = ExchangedToken(), actor: ExchangedToken = ExchangedToken()) {
        self.assertion = assertion
        self.subject = subject
        self.actor = actor
    }
}
