/// Why a token request did not produce a token. Every case says what the token endpoint did
/// (HTTP status, content type, at most the first 200 bytes of a body that cannot hold a
/// secret), never what it was sent.
public enum TokenEndpointError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An RFC 6749 §5.2 error response (`{"error": "invalid_grant", …}`), with any status.
    case oauth(OAuthError, status: Int, retryAfter: Double?)
    /// An answer that is neither a token nor an OAuth error: a bare 400/403/5xx, an HTML page,
    /// non-JSON text, an empty body. `excerpt` is nil when the body was empty or could hold a
    /// token.
    case unexpectedStatus(status: Int, contentType: String?, excerpt: String?, retryAfter: Double?)
    /// GitHub's REST API refused (`{"message": …, "documentation_url": …}`, any status but 2xx
    /// and 3xx): a GitHub App's installation token request.
    case gitHubAPI(GitHubAPIError, retryAfter: Double?)
    /// A 3xx: the token endpoint is never followed elsewhere. `location` is shown without its
    /// query or fragment.
    case redirect(status: Int, location: String?)
    /// A 2xx whose body is not a usable token response (no `access_token`, not JSON, a token
    /// that cannot go in a header, a JWT that has already expired).
    case invalidTokenResponse(status: Int, contentType: String?, reason: String)
    /// Reported by the HTTP client: no connection (DNS, refused, reset, TLS handshake).
    case unreachable(reason: String)
    /// Reported by the HTTP client: no complete answer within its timeout.
    case timedOut(seconds: Double)
    /// The client assertion could not be made, so no request was sent. `reason` names the
    /// rule or the step, never the key or the secret.
    case clientAssertionFailed(reason: String)
    /// The identity's endpoints could not be discovered from its `issuer`, so no request was
    /// sent. (Also the login's other steps that are not token requests: a JWKS that cannot be
    /// read, an ID token that fails its checks.)
    case discovery(DiscoveryError)
    case idToken(reason: String)
    /// The DPoP proof could not be made, so no request was sent. `reason` names the step, never
    /// the key.
    case dpopProofFailed(reason: String)
    /// A service account's JWT (a grant assertion, or a self-signed access token) could not be
    /// signed, so no request was sent and no token made. `reason` names the step, never the key.
    case serviceAccountJWTFailed(reason: String)
    /// A credential file holds a JWT past its `exp` (a projected service-account token the
    /// platform stopped rotating), so no request was sent: the IdP would refuse it.
    case expiredCredential(ExpiredCredential)
    /// An `auto` identity could not learn its authorization server or client
    /// (`AutoResolution`), so no token request can be made yet.
    case autoSetup(AutoSetupError)

    /// The HTTP status the token endpoint answered with, if it answered.
    public var status: Int? {
        switch self {
        case .oauth(_, let status, _), .unexpectedStatus(let status, _, _, _), .redirect(let status, _),
             .invalidTokenResponse(let status, _, _):
            status
        case .gitHubAPI(let error, _):
            error.status
        case .unreachable, .timedOut, .clientAssertionFailed, .discovery, .idToken, .dpopProofFailed, .serviceAccountJWTFailed, .expiredCredential,
             .autoSetup:
            nil
        }
    }

    /// `Retry-After` in seconds from the answer, if it had one.
    public var retryAfter: Double? {
        switch self {
        case .oauth(_, _, let retryAfter), .unexpectedStatus(_, _, _, let retryAfter), .gitHubAPI(_, let retryAfter): retryAfter
        case .discovery(let error): error.retryAfter
        case .autoSetup(let error): error.retryAfter
        default: nil
        }
    }

    public var oauthError: OAuthError? {
        if case .oauth(let error, _, _) = self { return error }
        return nil
    }

    /// True when the token endpoint is unreachable, slow or overloaded (the relay answers 503
    /// and retries); false when it refused or answered nonsense (502).
    public var isTemporary: Bool {
        switch self {
        case .unreachable, .timedOut:
            return true
        case .expiredCredential:
            // The platform writes the next one: tried again after the backoff.
            return true
        case .oauth(let error, let status, _):
            return error.isTemporary || Self.isTemporary(status: status)
        case .unexpectedStatus(let status, _, _, _):
            return Self.isTemporary(status: status)
        case .gitHubAPI(let error, _):
            return error.isRateLimit || Self.isTemporary(status: error.status)
        case .discovery(let error):
            return error.isTemporary
        case .autoSetup(let error):
            return error.isTemporary
        case .redirect, .invalidTokenResponse, .clientAssertionFailed, .idToken, .dpopProofFailed, .serviceAccountJWTFailed:
            return false
        }
    }

    private static func isTemporary(status: Int) -> Bool {
        status >= 500 || status == 429 || status == 408
    }

    /// A short code for logs, metrics and the `/identities` view: the OAuth error code, or
    /// `http_503` (also for GitHub's API), `redirect`, `invalid_token_response`, `unreachable`, `timeout`.
    public var code: String {
        switch self {
        case .oauth(let error, _, _): error.code.rawValue
        case .unexpectedStatus(let status, _, _, _): "http_\(status)"
        case .gitHubAPI(let error, _): "http_\(error.status)"
        case .redirect: "redirect"
        case .invalidTokenResponse: "invalid_token_response"
        case .unreachable: "unreachable"
        case .timedOut: "timeout"
        case .clientAssertionFailed: "client_assertion_failed"
        case .discovery(let error): error.code
        case .idToken: "invalid_id_token"
        case .dpopProofFailed: "dpop_proof_failed"
        case .serviceAccountJWTFailed: "service_account_jwt_failed"
        case .expiredCredential: "credential_expired"
        case .autoSetup(let error): error.code
        }
    }

    /// `code` as a metric label: the same, except that an OAuth error code no RFC defines is
    /// `idp_error` (`OAuthErrorCode.metricLabel`); every other code here is one of a closed set.
    public var metricLabel: String {
        oauthError?.code.metricLabel ?? code
    }

    public var description: String {
        description(endpoint: "the token endpoint")
    }

    /// The description with the endpoint that answered named as `endpoint` ("the device
    /// authorization endpoint"): the errors of the IdP's other endpoints are these too.
    public func description(endpoint: String) -> String {
        switch self {
        case .oauth(let error, let status, let retryAfter):
            return "\(endpoint) answered HTTP \(status) with OAuth error \(error)" + Self.retryText(retryAfter)
        case .unexpectedStatus(let status, let contentType, let excerpt, let retryAfter):
            let body = excerpt.map { ": \"\($0)\"" } ?? ""
            return "\(endpoint) answered HTTP \(status) (\(contentType ?? "no content type")) without an OAuth error"
                + Self.retryText(retryAfter) + body
        case .gitHubAPI(let error, let retryAfter):
            return "\(endpoint) answered HTTP \(error.status)" + Self.retryText(retryAfter) + ": \(error)"
        case .redirect(let status, let location):
            return "\(endpoint) answered HTTP \(status), a redirect" + (location.map { " to \($0)" } ?? "")
                + "; redirects are not followed"
        case .invalidTokenResponse(let status, let contentType, let reason):
            return "\(endpoint) answered HTTP \(status) (\(contentType ?? "no content type")) but not with a usable answer: \(reason)"
        case .unreachable(let reason):
            return "\(endpoint) is unreachable: \(reason)"
        case .timedOut(let seconds):
            return "\(endpoint) did not answer within \(SecondsText.format(seconds)) s"
        case .clientAssertionFailed(let reason):
            return "the client assertion could not be made, so no request was sent to \(endpoint): \(reason)"
        case .discovery(let error):
            return error.description
        case .idToken(let reason):
            return reason
        case .dpopProofFailed(let reason):
            return "the DPoP proof could not be made, so no request was sent to \(endpoint): \(reason)"
        case .serviceAccountJWTFailed(let reason):
            return "the service account's JWT could not be signed: \(reason)"
        case .expiredCredential(let expired):
            return "\(expired), so no request was sent to \(endpoint)"
        case .autoSetup(let error):
            return error.description
        }
    }

    private static func retryText(_ retryAfter: Double?) -> String {
        retryAfter.map { ", Retry-After \(SecondsText.format($0)) s" } ?? ""
    }
}
