/// What a route asks of a caller's opaque token beyond being active (its `inbound` settings).
public struct IntrospectionRules: Sendable, Equatable {
    /// The issuer the answer's `iss` must be, when the answer has one: an introspection
    /// endpoint speaks for its own issuer, and DOT, for one, sends no `iss`.
    public var issuer: String?
    /// When not empty, `aud` must name one of these; an answer without `aud` is refused then
    /// (a token for another API of the same IdP is not a token for this route).
    public var audiences: [String]
    /// Every one must be among the token's scopes (else `insufficient_scope`, RFC 6750 §3.1).
    public var requiredScopes: [String]
    /// Tolerated clock difference with the IdP, either way, for `exp`, `nbf` and `iat`.
    public var clockSkewSeconds: Int64

    public init(issuer: String? = nil, audiences: [String] = [], requiredScopes: [String] = [], clockSkewSeconds: Int64 = 60) {
        self.issuer = issuer
        self.audiences = audiences
        self.requiredScopes = requiredScopes
        self.clockSkewSeconds = max(0, clockSkewSeconds)
    }
}

/// Whether a caller's opaque token is good for a route, from its introspection answer.
public enum IntrospectionVerdict: Sendable, Equatable {
    case accepted(IntrospectedToken)
    /// 401 with `error="invalid_token"`.
    case invalidToken(IntrospectionRefusal)
    /// 403 with `error="insufficient_scope"`: a valid token lacking `missing`, in the route's order.
    case insufficientScope(missing: [String])
}

/// Why an introspected token is refused as `invalid_token`. The descriptions name the rule and,
/// for `iss`, the configured issuer; never the token or a claim's value.
public enum IntrospectionRefusal: Sendable, Equatable, CustomStringConvertible {
    case inactive
    case expired
    case notYetValid
    case issuedInTheFuture
    case issuerMismatch(expected: String)
    case audienceMismatch
    case binding(TokenBindingMismatch)
    /// `cnf` without a string `jkt` (`x5t#S256`, RFC 8705): a binding the relay cannot check.
    case uncheckableBinding

    public var description: String {
        switch self {
        case .inactive: "the token is not active"
        case .expired: "the token has expired (exp)"
        case .notYetValid: "the token is not valid yet (nbf)"
        case .issuedInTheFuture: "the token was issued in the future (iat)"
        case .issuerMismatch(let expected): "the token's issuer is not \"\(expected)\""
        case .audienceMismatch: "the token's audience names none of the route's audiences"
        case .binding(let mismatch): mismatch.description
        case .uncheckableBinding: "the token is bound (cnf) to a key or certificate the relay cannot check"
        }
    }
}

extension IntrospectionResponse {
    /// The verdict on this answer's token for a route with `rules`, presented as `presentation`,
    /// at `now` (Unix seconds): inactive, then the times (`exp` passed, `nbf` or `iat` ahead,
    /// each with the clock skew), the issuer, the audience, the DPoP binding, and last the
    /// scopes (`insufficient_scope` is for a token that is otherwise good).
    public func verdict(_ rules: IntrospectionRules, presentedAs presentation: TokenPresentation, now: Int64) -> IntrospectionVerdict {
        guard case .active(let token) = self else { return .invalidToken(.inactive) }
        let skew = rules.clockSkewSeconds
        if let expiry = token.expiry, !(Self.saturating(now, minus: skew) < expiry) { return .invalidToken(.expired) }
        if let notBefore = token.notBefore, Self.saturating(notBefore, minus: skew) > now { return .invalidToken(.notYetValid) }
        if let issuedAt = token.issuedAt, Self.saturating(issuedAt, minus: skew) > now { return .invalidToken(.issuedInTheFuture) }
        if let expected = rules.issuer, let issuer = token.issuer, issuer != expected {
            return .invalidToken(.issuerMismatch(expected: expected))
        }
        if !rules.audiences.isEmpty, !token.audience.contains(where: rules.audiences.contains) {
            return .invalidToken(.audienceMismatch)
        }
        // Checked before how it came: such a token is no bearer token, nor one the proof's key can hold.
        if token.hasUncheckableBinding { return .invalidToken(.uncheckableBinding) }
        if let mismatch = presentation.mismatch(withTokenBoundTo: token.boundKeyThumbprint) {
            return .invalidToken(.binding(mismatch))
        }
        let missing = rules.requiredScopes.filter { !token.scopes.contains($0) }
        guard missing.isEmpty else { return .insufficientScope(missing: missing) }
        return .accepted(token)
    }

    /// `time - seconds`, held at `Int64.min` rather than wrapping (times come from the IdP).
    private static func saturating(_ time: Int64, minus seconds: Int64) -> Int64 {
        let (result, overflow) = time.subtractingReportingOverflow(seconds)
        return overflow ? .min : result
    }
}
