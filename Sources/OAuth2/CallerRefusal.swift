/// What a caller is answered when its token could not be exchanged (`Grant.caller`), and for how
/// long that answer stands for the same caller token before it is exchanged again.
///
/// A refusal is the caller's, never the identity's or the route's: other callers go on being
/// exchanged. The token endpoint's RFC 6749 §5.2 error decides whose fault it is:
///
///   invalid_grant, invalid_token, invalid_request,   the caller's token was refused          401
///   interaction_required, login_required
///   invalid_scope, access_denied,                    the caller may not have this token    403
///   insufficient_scope, consent_required
///   unauthorized_client, invalid_target, any other   the relay's own request was refused    502
///   answer (invalid_client, a bare 4xx, an
///   unreadable one, a redirect)
///
/// `unauthorized_client` (this client may not use the grant) and `invalid_target` (RFC 8693
/// §2.2.2: no token for the `audience`/`resource` asked for) are about what the identity's
/// configuration asks, the same for every caller: the relay's misconfiguration, logged as a
/// warning. `invalid_scope` stays the caller's: a scope may exceed what the caller's resource
/// owner granted (RFC 6749 §5.2).
///   unreachable, timed out, 5xx, 429, server_error,   the token endpoint cannot answer now   503 + Retry-After
///   temporarily_unavailable
///
/// Refusals stand `refusalSeconds` (the same token is refused the same way: asking again at
/// once would let one caller make the relay hammer its IdP); an outage stands for its
/// `Retry-After` (at least 1 s, at most `maximumRetryAfterSeconds`).
public struct CallerRefusal: Sendable, Equatable {
    /// The answer: `reason` is `callerUnauthorized`, `callerForbidden`, `refused` or
    /// `unavailable`, with the IdP's error code and description when it sent them.
    public let problem: TokenUnavailable
    /// How long the answer stands for this caller token.
    public let seconds: Double

    /// How long a refusal stands for the caller token it refused.
    public static let refusalSeconds: Double = 10
    /// The longest an outage's `Retry-After` makes a caller wait.
    public static let maximumRetryAfterSeconds: Double = 30

    static let unauthorizedCodes: Set<String> = [
        "invalid_grant", "invalid_token", "invalid_request", "interaction_required", "login_required",
    ]
    static let forbiddenCodes: Set<String> = [
        "invalid_scope", "access_denied", "insufficient_scope", "consent_required",
    ]

    public init(problem: TokenUnavailable, seconds: Double) {
        self.problem = problem
        self.seconds = seconds
    }

    /// The answer to a caller whose token exchange for `identity` failed with `error`.
    public init(_ error: TokenEndpointError, identity: String) {
        let oauthError = error.oauthError
        if error.isTemporary {
            let seconds = min(Self.maximumRetryAfterSeconds, max(1, (error.retryAfter ?? 1).rounded(.up)))
            self.init(problem: TokenUnavailable(identity: identity, reason: .unavailable, retryAfterSeconds: Int(seconds),
                                                oauthError: oauthError?.code.rawValue,
                                                oauthErrorDescription: oauthError?.errorDescription,
                                                detail: "the caller's token could not be exchanged for identity \(identity) "
                                                    + "now: \(error)"),
                      seconds: seconds)
            return
        }
        let reason: TokenUnavailable.Reason
        let detail: String
        switch oauthError?.code.rawValue {
        case let code? where Self.unauthorizedCodes.contains(code):
            reason = .callerUnauthorized
            detail = "the token endpoint refused the caller's token for identity \(identity): \(error)"
        case let code? where Self.forbiddenCodes.contains(code):
            reason = .callerForbidden
            detail = "the token endpoint would not issue identity \(identity)'s token on behalf of this caller: \(error)"
        default:
            reason = .refused
            detail = "the token endpoint refused identity \(identity)'s exchange of the caller's token: \(error)"
        }
        self.init(problem: TokenUnavailable(identity: identity, reason: reason, oauthError: oauthError?.code.rawValue,
                                            oauthErrorDescription: oauthError?.errorDescription, detail: detail),
                  seconds: Self.refusalSeconds)
    }
}
