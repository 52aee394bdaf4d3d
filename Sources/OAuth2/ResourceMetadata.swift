import Endpoints
import JSON

/// A protected resource's metadata (RFC 9728 §2), read and checked: its `resource` is the
/// upstream URL the relay forwards to (§3.3; compared after RFC 3986 normalization of scheme,
/// host and default port, an empty path equal to "/"), and every URL in it is https (plain http
/// only on a loopback host). Fetching is the caller's (`AutoResolution`); this type only reads.
public struct ResourceMetadata: Sendable, Equatable {
    public let resource: String
    /// Issuer identifiers, in the resource's order (may be empty: then nothing can be learnt).
    public let authorizationServers: [String]
    public let scopesSupported: [String]
    public let bearerMethodsSupported: [String]
    public let resourceName: String?

    public init(resource: String, authorizationServers: [String], scopesSupported: [String] = [],
                bearerMethodsSupported: [String] = [], resourceName: String? = nil) {
        self.resource = resource
        self.authorizationServers = authorizationServers
        self.scopesSupported = scopesSupported
        self.bearerMethodsSupported = bearerMethodsSupported
        self.resourceName = resourceName
    }
}

extension ResourceMetadata {
    /// RFC 9728 §3.1: `/.well-known/oauth-protected-resource` inserted between the host and the
    /// resource's path (a trailing "/" of the path dropped), query and fragment dropped.
    public static func wellKnownURL(for resource: HTTPURL) -> HTTPURL {
        fatalError("contract: built by the OAuth2 helper")
    }

    /// Reads the metadata document `members`, fetched from `url`, for `expectedResource`.
    public init(members: [String: JSONValue], from url: String, expectedResource: HTTPURL) throws(AutoSetupError) {
        fatalError("contract: built by the OAuth2 helper")
    }
}
