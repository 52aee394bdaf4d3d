/// A `Bearer` (or `DPoP`) challenge in an upstream's `WWW-Authenticate` (RFC 6750 §3, RFC 9449
/// §7.1), with what RFC 9728 §5.1 (`resource_metadata`) and RFC 9470 §3 (`acr_values`,
/// `max_age`) add. Read from the header's values as the upstream sent them: several challenges
/// in one value, several values, quoted strings with escapes, any case of the scheme and the
/// parameter names. Values are kept as sent (unquoted); nothing here is trusted yet.
public struct BearerChallenge: Sendable, Equatable {
    /// `Bearer` or `DPoP`, as spelled in the header.
    public var scheme: String
    public var realm: String?
    /// RFC 9728 §5.1: where the resource's metadata is.
    public var resourceMetadata: String?
    public var error: String?
    public var errorDescription: String?
    /// The space-separated `scope` split into its tokens (empty: none sent).
    public var scope: [String]
    /// RFC 9470 §3: the authentication context classes the resource wants (empty: none sent).
    public var acrValues: [String]
    /// RFC 9470 §3: the greatest age of the authentication the resource accepts, in seconds.
    public var maxAge: Int?
    /// The `scope` or `acr_values` sent held a character RFC 6749 §3.3's `scope-token` does not
    /// allow (a space-separated list of %x21 / %x23-5B / %x5D-7E): that one is left empty, and
    /// the challenge asks for no step-up.
    public internal(set) var malformedScopeTokens = false

    public init(scheme: String = "Bearer", realm: String? = nil, resourceMetadata: String? = nil, error: String? = nil,
                errorDescription: String? = nil, scope: [String] = [], acrValues: [String] = [], maxAge: Int? = nil) {
        self.scheme = scheme
        self.realm = realm
        self.resourceMetadata = resourceMetadata
        self.error = error
        self.errorDescription = errorDescription
        self.scope = scope
        self.acrValues = acrValues
        self.maxAge = maxAge
    }

    /// The login a challenge asks for (RFC 6750 §3.1 `insufficient_scope` with a `scope`, RFC
    /// 9470 `insufficient_user_authentication` with `acr_values` or `max_age`); nil for any
    /// other challenge.
    public var stepUp: StepUp? {
        // An upstream cannot make a login ask for an unbounded list: past the limits, no step-up.
        guard !malformedScopeTokens, StepUp.fitsLimits(scope), StepUp.fitsLimits(acrValues) else { return nil }
        switch error {
        case "insufficient_scope" where !scope.isEmpty:
            return StepUp(scope: scope)
        case "insufficient_user_authentication" where !acrValues.isEmpty || maxAge != nil:
            return StepUp(scope: scope, acrValues: acrValues, maxAge: maxAge)
        default:
            return nil
        }
    }
}

/// What an upstream's challenge asks of a person's next login: more scope, or a stronger or
/// fresher authentication.
public struct StepUp: Sendable, Equatable, CustomStringConvertible {
    /// Scopes the token must carry (added to those it has).
    public var scope: [String]
    public var acrValues: [String]
    public var maxAge: Int?

    public init(scope: [String] = [], acrValues: [String] = [], maxAge: Int? = nil) {
        self.scope = scope
        self.acrValues = acrValues
        self.maxAge = maxAge
    }

    /// The most tokens a step-up's `scope` (or `acr_values`) may hold, in a challenge and in the
    /// pending step-up they join into.
    public static let maxTokens = 32
    /// The most bytes of a step-up's `scope` (or `acr_values`) written space-separated.
    public static let maxBytes = 1024

    /// Whether `tokens` stay within `maxTokens` and `maxBytes`.
    public static func fitsLimits(_ tokens: [String]) -> Bool {
        tokens.count <= maxTokens && tokens.reduce(max(0, tokens.count - 1)) { $0 + $1.utf8.count } <= maxBytes
    }

    public var description: String {
        var parts: [String] = []
        if !scope.isEmpty { parts.append("scope \(scope.joined(separator: " "))") }
        if !acrValues.isEmpty { parts.append("acr_values \(acrValues.joined(separator: " "))") }
        if let maxAge { parts.append("max_age \(maxAge)") }
        return parts.joined(separator: ", ")
    }
}
