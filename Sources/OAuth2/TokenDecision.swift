/// What a request on a route with an identity does about its token, as `TokenLifecycle`
/// answers it.
public enum TokenDecision: Sendable, Equatable, CustomStringConvertible {
    /// Put this token on the request: it is valid now.
    case inject(AccessToken)
    /// A fetch is in flight or due and nothing has failed yet: park the request until the
    /// identity's next fetch result, then ask again.
    case wait
    /// Answer the request with this problem right away.
    case fail(TokenUnavailable)

    public var description: String {
        switch self {
        case .inject(let token): "inject \(token)"
        case .wait: "wait for the token fetch"
        case .fail(let problem): "fail: \(problem)"
        }
    }
}

/// Why an identity has no token for a request, as the relay answers it (DESIGN.md error
/// model): 502 when the token endpoint refused (`oauthError` tells how), 503 with
/// `Retry-After` when it is unreachable, slow or overloaded, 401 when a person must log in; for
/// a grant on behalf of the caller, 401 or 403 when the token endpoint refused that caller
/// (`CallerRefusal`).
public struct TokenUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        /// The token endpoint refused the grant or answered nonsense: 502.
        case refused
        /// The token endpoint is unreachable, timing out, 5xx or 429: 503 + Retry-After.
        case unavailable
        /// An interactive identity without a token or refresh token: 401.
        case needsLogin
        /// The token endpoint refused the caller's own token (`CallerRefusal`): 401.
        case callerUnauthorized
        /// The token endpoint would not issue a token on behalf of this caller: 403.
        case callerForbidden
        /// An `auto` identity could not learn how to get a token, and only configuration can
        /// help (no resource metadata, no registration endpoint, no allowed issuer): 502.
        case needsConfiguration
    }

    public var identity: String
    public var reason: Reason
    /// Whole seconds until the relay tries again (at least 1), for `Retry-After`; set for
    /// `unavailable` only.
    public var retryAfterSeconds: Int?
    /// The RFC 6749 §5.2 code, when the token endpoint sent one.
    public var oauthError: String?
    public var oauthErrorDescription: String?
    /// For the problem's `detail`: what happened, with no token or secret in it.
    public var detail: String
    /// A device login under way: the code the person enters, and where.
    public var deviceLogin: DevicePrompt?

    public init(identity: String, reason: Reason, retryAfterSeconds: Int? = nil, oauthError: String? = nil,
                oauthErrorDescription: String? = nil, detail: String, deviceLogin: DevicePrompt? = nil) {
        self.deviceLogin = deviceLogin
        self.identity = identity
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
        self.oauthError = oauthError
        self.oauthErrorDescription = oauthErrorDescription
        self.detail = detail
    }

    /// The status the relay answers with.
    public var status: Int {
        switch reason {
        case .refused, .needsConfiguration: 502
        case .unavailable: 503
        case .needsLogin, .callerUnauthorized: 401
        case .callerForbidden: 403
        }
    }

    public var description: String {
        "\(status) for identity \(identity): \(detail)" + (retryAfterSeconds.map { " (Retry-After \($0))" } ?? "")
    }
}
