import Endpoints

/// Whether an identity's token URL may be used: `https://` always; `http://` on a loopback
/// host (a local IdP in development); any other `http://` only with `allowInsecureTokenUrl`,
/// which the relay logs as a warning, since client secrets and tokens would cross the
/// network in clear text.
public enum TokenEndpointSecurity: Sendable, Equatable {
    case https
    case loopbackHTTP
    /// `http://` to a host that is not loopback, allowed by `allowInsecureTokenUrl`: warn.
    case insecureHTTPAllowed

    /// Checks every IdP URL the identity configures (the token endpoint and the others a login
    /// uses; a GitHub App's token endpoint is under its `githubApiUrl`); the answer is the weakest
    /// of them.
    public static func check(_ identity: Identity) throws(InsecureTokenURL) -> TokenEndpointSecurity {
        let tokenKey = identity.grant.type == .gitHubAppInstallation ? "githubApiUrl" : "tokenUrl"
        let urls: [(String, HTTPURL?)] = [
            (tokenKey, identity.tokenUrl), ("authorizationUrl", identity.authorizationUrl),
            ("deviceAuthorizationUrl", identity.deviceAuthorizationUrl), ("jwksUrl", identity.jwksUrl),
            ("revocationUrl", identity.revocationUrl),
        ]
        var weakest = TokenEndpointSecurity.https
        for case let (key, url?) in urls {
            let security = try check(url, key: key, of: identity)
            if security.rank > weakest.rank { weakest = security }
        }
        return weakest
    }

    /// Checks one of the identity's IdP URLs (configured under `key`, or discovered for it).
    public static func check(_ url: HTTPURL, key: String, of identity: Identity) throws(InsecureTokenURL) -> TokenEndpointSecurity {
        guard url.scheme == .http else { return .https }
        if HostSyntax.isLoopback(url.host) { return .loopbackHTTP }
        guard identity.allowInsecureTokenUrl else { throw InsecureTokenURL(identity: identity.name, key: key, url: redactedURL(url)) }
        return .insecureHTTPAllowed
    }

    private var rank: Int {
        switch self {
        case .https: 0
        case .loopbackHTTP: 1
        case .insecureHTTPAllowed: 2
        }
    }
}

/// An `http://` token URL on a host that is not loopback, without `allowInsecureTokenUrl`.
public struct InsecureTokenURL: Error, Sendable, Equatable, CustomStringConvertible {
    public let identity: String
    /// The key that named the URL (`tokenUrl`, `authorizationUrl`, `githubApiUrl`, …).
    public let key: String
    public let url: String

    public init(identity: String, key: String = "tokenUrl", url: String) {
        self.identity = identity
        self.key = key
        self.url = url
    }

    /// The config path of the offending value, for `oauth-relay check` (a name with a `.` or a
    /// leading digit in brackets, as Config writes paths).
    public var path: String {
        let plain = identity.first.map { !$0.isNumber } ?? false && !identity.contains(".")
        return "$.identities" + (plain ? ".\(identity)" : "[\"\(identity)\"]") + ".\(key)"
    }

    public var description: String {
        "\(path): \(url) is plain http:// to a host that is not loopback, so the client credentials and tokens "
            + "would cross the network unencrypted; use https://, or set \"allowInsecureTokenUrl\": true to accept the risk"
    }
}
