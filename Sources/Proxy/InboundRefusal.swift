import OAuth2

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
    /// The issuer's keys could not be read: 503 with `Retry-After`. `reason` (here and for
    /// introspection) is one of the relay's fixed sentences, never the IdP's words: the answer
    /// goes to a caller the relay has not authenticated.
    case keysUnavailable(reason: String, retryAfterSeconds: Int)
    /// The introspection endpoint gave no usable answer (or too many tokens are being asked
    /// about): 503 with `Retry-After`.
    case introspectionUnavailable(reason: String, retryAfterSeconds: Int)
    /// The DPoP proof is missing, not one, or refused (`why`: a fixed sentence naming the rule):
    /// 401 `invalid_dpop_proof` (RFC 9449 §7.1).
    case invalidProof(String)
    /// The proof's `jti` was seen before within its window: 401 `invalid_dpop_proof`.
    case replayedProof
    /// Too many proofs are remembered to tell a replay (`ProofReplayMemory.full`): 503.
    case proofMemoryFull(retryAfterSeconds: Int)
    /// The token's binding does not fit how it came (a `cnf.jkt`-bound token as Bearer, a proof
    /// of another key, a proof with an unbound token): 401 `invalid_token` (RFC 9449 §7.2).
    case bindingMismatch(TokenBindingMismatch)
    /// A Bearer token on a route with `dpop: "required"`: 401 `invalid_token`, DPoP challenge.
    case dpopRequired

    /// The label of `oauth_relay_inbound_validations_total{outcome}`.
    var metricOutcome: String {
        switch self {
        case .noToken, .malformedRequest: "missing"
        case .invalidToken(.inactive): "inactive"
        case .invalidToken: "invalid"
        case .insufficientScope: "insufficient_scope"
        case .keysUnavailable: "keys_unavailable"
        case .introspectionUnavailable: "introspection_unavailable"
        case .invalidProof, .proofMemoryFull, .bindingMismatch, .dpopRequired: "dpop_refused"
        case .replayedProof: "replayed"
        }
    }

    /// Whether the refusal is about DPoP whatever the scheme the caller used: it is answered
    /// with a `DPoP` challenge.
    var concernsDPoP: Bool {
        switch self {
        case .invalidProof, .replayedProof, .bindingMismatch, .dpopRequired: true
        default: false
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
    /// `cnf` without a string `jkt`: bound by a means the relay cannot check (RFC 7800).
    case uncheckableBinding = "the token is bound (cnf) to a key or certificate the relay cannot check"
    /// Introspection: the issuer says the token is not active (expired, revoked, unknown).
    case inactive = "the token is not active"

    /// An introspected token's refusal, in these fixed words.
    init(_ refusal: IntrospectionRefusal) {
        switch refusal {
        case .inactive: self = .inactive
        case .expired: self = .expired
        case .notYetValid: self = .notYetValid
        case .issuedInTheFuture: self = .issuedInTheFuture
        case .issuerMismatch: self = .wrongIssuer
        case .audienceMismatch: self = .wrongAudience
        case .uncheckableBinding: self = .uncheckableBinding
        // The gate judges the binding itself, per request: an answer is judged without it.
        case .binding: self = .malformedClaims
        }
    }
}
