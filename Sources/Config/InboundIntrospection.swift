import Endpoints

/// `inbound.introspectionUrl` and its companions: the route takes opaque (non-JWT) tokens too,
/// asking the issuer's RFC 7662 introspection endpoint about each (once per token, the answer
/// reused at most `cacheSeconds`), as the client of identity `identity`.
public struct InboundIntrospection: Sendable, Equatable {
    /// The configured endpoint; nil: the issuer's metadata's `introspection_endpoint`.
    public var url: HTTPURL?
    /// The identity whose client (its `clientId` and `clientAuth`) the relay asks as:
    /// `introspectionIdentity`, else the route's own identity.
    public var identity: String
    /// How long an active token's answer is reused at most (before its `exp` anyway).
    public var cacheSeconds: Int

    public static let defaultCacheSeconds = 300
    public static let maxCacheSeconds = 86_400

    public init(url: HTTPURL? = nil, identity: String, cacheSeconds: Int = Self.defaultCacheSeconds) {
        self.url = url
        self.identity = identity
        self.cacheSeconds = cacheSeconds
    }
}
