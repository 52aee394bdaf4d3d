/// An error response of the token endpoint (RFC 6749 §5.2): `error`, and the optional
/// `error_description` and `error_uri`, cleaned for logs (at most 200 characters, no control
/// characters, no secret the request carried).
public struct OAuthError: Sendable, Equatable, CustomStringConvertible {
    public var code: OAuthErrorCode
    public var errorDescription: String?
    public var errorURI: String?

    public init(code: OAuthErrorCode, errorDescription: String? = nil, errorURI: String? = nil) {
        self.code = code
        self.errorDescription = errorDescription
        self.errorURI = errorURI
    }

    /// `invalid_grant (The refresh token has expired)`.
    public var description: String {
        code.rawValue + (errorDescription.map { " (\($0))" } ?? "")
    }

    /// True for the codes that say "try again later" rather than "no".
    public var isTemporary: Bool {
        code == .serverError || code == .temporarilyUnavailable || code == .slowDown
    }
}

/// The `error` code of a token endpoint's error response: every code the OAuth2 RFCs define
/// for the token endpoint, and any other as `other`.
public enum OAuthErrorCode: Sendable, Hashable, CustomStringConvertible {
    // RFC 6749 §5.2
    case invalidRequest
    case invalidClient
    case invalidGrant
    case unauthorizedClient
    case unsupportedGrantType
    case invalidScope
    // RFC 6749 §4.1.2.1, also seen from token endpoints
    case accessDenied
    case unsupportedResponseType
    case serverError
    case temporarilyUnavailable
    // RFC 8707 resource indicators, RFC 8693 token exchange
    case invalidTarget
    // RFC 8628 device authorization
    case authorizationPending
    case slowDown
    case expiredToken
    // RFC 9449 DPoP
    case invalidDPoPProof
    case useDPoPNonce
    /// A code no RFC above defines.
    case other(String)

    private static let known: [(OAuthErrorCode, String)] = [
        (.invalidRequest, "invalid_request"), (.invalidClient, "invalid_client"), (.invalidGrant, "invalid_grant"),
        (.unauthorizedClient, "unauthorized_client"), (.unsupportedGrantType, "unsupported_grant_type"),
        (.invalidScope, "invalid_scope"), (.accessDenied, "access_denied"),
        (.unsupportedResponseType, "unsupported_response_type"), (.serverError, "server_error"),
        (.temporarilyUnavailable, "temporarily_unavailable"), (.invalidTarget, "invalid_target"),
        (.authorizationPending, "authorization_pending"), (.slowDown, "slow_down"), (.expiredToken, "expired_token"),
        (.invalidDPoPProof, "invalid_dpop_proof"), (.useDPoPNonce, "use_dpop_nonce"),
    ]

    public init(_ code: String) {
        self = Self.known.first { $0.1 == code }?.0 ?? .other(code)
    }

    /// The code as sent on the wire.
    public var rawValue: String {
        if case .other(let code) = self { return code }
        return Self.known.first { $0.0 == self }!.1
    }

    public var description: String { rawValue }

    /// The code as a metric label (`oauth_relay_logins_total{outcome="failed_..."}`): a code an
    /// RFC above defines as sent, any other `idp_error`. An IdP may send any text as its error, and
    /// a label takes every value it is given (a new series each), so the set must stay closed.
    public var metricLabel: String {
        if case .other = self { return Self.otherMetricLabel }
        return rawValue
    }

    /// The label of every code no RFC above defines.
    public static let otherMetricLabel = "idp_error"
}
