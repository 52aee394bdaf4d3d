import SafeText

/// A grant whose subject is the caller: each request's own bearer token (`subjectTokenFrom:
/// "caller"`, `assertionFrom: "caller"`) is exchanged at the token endpoint for a token of this
/// identity, one per caller. The identity has no token of its own: nothing is fetched at start-up
/// or refreshed in the background, and each caller's token is asked for when that caller's first
/// request arrives (`TokenRequest.exchange(for:callerToken:at:)`).
public enum CallerGrant: Sendable, Equatable, CustomStringConvertible {
    /// RFC 8693 token exchange: `subject_token` is the caller's token, of type
    /// `subjectTokenType`; an `actor` token, when the identity sets one, goes with it.
    case tokenExchange(subjectTokenType: String, actor: ExchangedToken)
    /// Microsoft Entra ID's on-behalf-of flow: the RFC 7523 jwt-bearer grant with the caller's
    /// token as `assertion` and `requested_token_use=on_behalf_of`.
    case onBehalfOf

    /// RFC 8693 §3: the type of an OAuth access token, what a caller's bearer token is.
    public static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    /// The grant as the token endpoint names it.
    public var type: GrantType {
        switch self {
        case .tokenExchange: .tokenExchange
        case .onBehalfOf: .jwtBearer
        }
    }

    /// The identity's actor token (RFC 8693 `actor_token`), if it sends one.
    public var actorToken: Secret? {
        if case .tokenExchange(_, let actor) = self { actor.token } else { nil }
    }

    /// The config key that made this grant take the caller's token.
    public var configKey: String {
        switch self {
        case .tokenExchange: "subjectTokenFrom"
        case .onBehalfOf: "assertionFrom"
        }
    }

    public var description: String { "\(type) on behalf of the caller" }

    /// When a caller's `token` expires (its `exp`, seconds since 1970) if it is a JWT, read
    /// without verifying it: for a route that does not validate its callers' tokens, the exchanged
    /// token is not reused past it. Safe unverified: an entry is keyed by the digest of these
    /// very bytes, which the token endpoint accepted (a token with another `exp` is another
    /// entry, exchanged on its own).
    public static func unverifiedExpiry(ofCallerToken token: String) -> Double? {
        TokenLifetime.unverifiedExpiry(ofToken: token)
    }
}
