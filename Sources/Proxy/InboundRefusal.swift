/// Why a route with `inbound` did not take a request, as the caller is told (RFC 6750 §3.1). The
/// descriptions are fixed sentences: no part of the token, nor anything its sender chose (a `kid`,
/// an `iss`), ever reaches a response or a log line.
enum InboundRefusal: Equatable {
    /// No bearer token (none, or another scheme): 401 without an error code.
    case noToken
    /// The request is malformed (two Authorization fields, no token68): 400 `invalid_request`.
    case malformedRequest(String)
    /// 401 `invalid_token`.
    case invalidToken(InvalidToken)
    /// 403 `insufficient_scope`: the token lacks `missing` of the route's `required` scopes.
    case insufficientScope(missing: [String], required: [String])
    /// The issuer's keys could not be read: 503 with `Retry-After`.
    case keysUnavailable(reason: String, retryAfterSeconds: Int)

    /// The label of `oauth_relay_inbound_validations_total{outcome}`.
    var metricOutcome: String {
        switch self {
        case .noToken, .malformedRequest: "missing"
        case .invalidToken: "invalid"
        case .insufficientScope: "insufficient_scope"
        case .keysUnavailable: "keys_unavailable"
        }
    }
}

/// What is wrong with a token, in words fit for `error_description` (RFC 6750 §3: printable ASCII
/// without `"` and `\`).
enum InvalidToken: String, Equatable {
    case notAJWT = "the token is not a well-formed signed JWT"
    case algorithmNotAllowed = "the token's signature algorithm is not accepted"
    case unknownKey = "no key of the issuer matches the token"
    case badSignature = "the token's signature does not verify"
    case expired = "the token has expired"
    case notYetValid = "the token is not valid yet"
    case issuedInTheFuture = "the token was issued in the future"
    case wrongIssuer = "the token is not from the accepted issuer"
    case wrongAudience = "the token is not meant for this service (aud)"
    case missingExpiry = "the token has no expiry (exp)"
    case malformedClaims = "the token's claims are malformed"
}
