/// What a client assertion's `aud` names (RFC 7523 §3): the token endpoint, which every IdP
/// accepts, or the issuer, which some (OpenID Connect Core §9 allows either) require.
public enum ClientAssertionAudience: String, Sendable, Equatable {
    /// The token URL, as the request is sent to it.
    case tokenEndpoint = "tokenUrl"
    /// The identity's `issuer`.
    case issuer
}
