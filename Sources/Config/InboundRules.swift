import Endpoints
import JOSE

/// `routes[].inbound`: the route takes only requests whose caller shows a JWT access token of
/// `issuer`, signed with one of the issuer's keys (its JWKS, at `jwksUrl` or found by
/// discovery), addressed to one of `audiences`, unexpired and carrying every scope of
/// `requiredScopes` (with `introspection`, an opaque token the issuer calls active does too);
/// as a bearer token, or DPoP-bound with a proof of its key (`dpop`). A request without one is answered 401 (403 for missing scopes) and never
/// forwarded; one with it may pass the caller on to the upstream as headers (`claimHeaders`).
public struct InboundRules: Sendable, Equatable {
    /// The `iss` a token must carry, exactly; also where the JWKS is discovered without `jwksUrl`.
    public var issuer: String
    /// The token's `aud` must contain at least one of them.
    public var audiences: [String]
    /// The issuer's JWK Set; nil: its `jwks_uri`, read from the issuer's metadata (OpenID Connect
    /// discovery, else RFC 8414).
    public var jwksUrl: HTTPURL?
    /// The signature algorithms a token may use; never HS256 (the JWKS publishes public keys) nor
    /// `none`.
    public var algorithms: [JWSAlgorithm]
    /// Scopes the token must all carry (`scope`, space-separated, or an `scp` array).
    public var requiredScopes: [String]
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
    public var clockSkewSeconds: Int
    /// The claims passed on to the upstream, each as a header field; in document order.
    public var claimHeaders: [ClaimHeader]
    /// The caller's `Authorization` does not reach the upstream.
    public var stripAuthorization: Bool
    /// How many validated tokens the route remembers (so each signature is checked once).
    public var maxTokens: Int
    /// TLS options for the issuer's discovery document and JWKS.
    public var tls: TLSSettings?
    /// Opaque tokens asked about at the issuer's introspection endpoint; nil: a token that is
    /// not a JWT is refused.
    public var introspection: InboundIntrospection?
    /// DPoP-bound presentations (`Authorization: DPoP` with a proof).
    public var dpop: InboundDPoP

    public static let defaultAlgorithms: [JWSAlgorithm] = [.rs256, .ps256, .es256, .edDSA]
    public static let defaultClockSkewSeconds = 60
    public static let maxClockSkewSeconds = 300
    public static let defaultMaxTokens = 10_000
    public static let maxMaxTokens = 1_000_000

    public init(issuer: String, audiences: [String], jwksUrl: HTTPURL? = nil, algorithms: [JWSAlgorithm] = Self.defaultAlgorithms,
                requiredScopes: [String] = [], clockSkewSeconds: Int = Self.defaultClockSkewSeconds, claimHeaders: [ClaimHeader] = [],
                stripAuthorization: Bool = false, maxTokens: Int = Self.defaultMaxTokens, tls: TLSSettings? = nil,
                introspection: InboundIntrospection? = nil, dpop: InboundDPoP = InboundDPoP()) {
        self.issuer = issuer
        self.audiences = audiences
        self.jwksUrl = jwksUrl
        self.algorithms = algorithms
        self.requiredScopes = requiredScopes
        self.clockSkewSeconds = clockSkewSeconds
        self.claimHeaders = claimHeaders
        self.stripAuthorization = stripAuthorization
        self.maxTokens = maxTokens
        self.tls = tls
        self.introspection = introspection
        self.dpop = dpop
    }

    /// Header names a claim may not be written to: hop-by-hop and framing fields, those the relay
    /// writes itself (Host, Via, X-Forwarded-*, Forwarded), and the credentials of the request.
    static let forbiddenClaimHeaders: Set<String> = HeaderRules.framingHeaders.union([
        "host", "authorization", "proxy-authorization", "cookie", "dpop", "via", "forwarded", "x-forwarded-for",
        "x-forwarded-proto", "x-forwarded-host", "max-forwards", "expect", "content-type", "content-encoding",
    ])
}

/// One entry of `inbound.claimHeaders`: the token claim `claim` goes to the upstream as the header
/// field `header` (client-sent fields of that name are always removed first).
public struct ClaimHeader: Sendable, Equatable {
    public var claim: String
    public var header: String

    public init(claim: String, header: String) {
        self.claim = claim
        self.header = header
    }
}
