import Endpoints
import OAuth2

// The keys of interactive identities (a person logs in: authorization code, device code) and
// the rules that tie them to the rest of the configuration: the redirect URI must be served by
// one of the relay's listeners, and a person's token must not be offered on a network listener
// unless the operator says so.

extension DecodingContext {
    /// The path of the relay's built-in login callback, the default redirect URI's path.
    public static let defaultCallbackPath = "/.oauth-relay/callback"

    /// Keys only interactive grants use, and endpoints a grant needs when no `issuer` can
    /// supply them by discovery.
    func checkInteractiveKeys(_ identity: Identity, object: ObjectReader) {
        let grant = identity.grant.type
        let onlyFor: [(key: String, grants: [GrantType], usedBy: String)] = [
            ("authorizationUrl", [.authorizationCode], "the authorization_code grant"),
            ("redirectUri", [.authorizationCode], "the authorization_code grant"),
            ("deviceAuthorizationUrl", [.deviceCode], "the device_code grant"),
            ("loginTimeoutSeconds", [.authorizationCode, .deviceCode], "the authorization_code and device_code grants"),
            ("allowRemoteUse", [.authorizationCode, .deviceCode], "the authorization_code and device_code grants"),
        ]
        for (key, grants, usedBy) in onlyFor where !grants.contains(grant) {
            if let field = object.field(key) { report("\(key) is only used by \(usedBy), not by the \(grant) grant", at: field) }
        }
        if case .authorizationCode = identity.grant, identity.requestsIDToken, identity.issuer == nil {
            report("required when the scope asks for openid: the ID token's iss is checked against it",
                   at: object.path.key("issuer"), offset: object.lastOffset)
        }
        guard identity.issuer == nil else { return }
        // The endpoints the grant needs are OAuth2's `requiredEndpoints`, which discovery checks
        // too; `tokenUrl` has its own check, shared with the other grants. A key present but
        // invalid has its error already.
        for endpoint in identity.requiredEndpoints where endpoint != .token && object.field(endpoint.configKey) == nil {
            let why = endpoint == .jwks ? "to check the ID token a scope with \"openid\" asks for" : "for the \(grant) grant"
            report("required \(why) (or \"issuer\", to discover it)", at: object.path.key(endpoint.configKey), offset: object.lastOffset)
        }
    }

    /// Rules across identities, routes and listeners, once all are decoded: every browser-login
    /// identity gets its redirect URI (by default the callback on the plain listener), which must
    /// name a listener of this relay; an interactive identity on a route is refused when a
    /// listener is reachable from other machines, unless it sets `allowRemoteUse`.
    func checkInteractiveIdentities(_ config: inout RelayConfig, identitiesPath: JSONPath, offset: Int) {
        let listeners = config.loginListeners
        for name in config.identities.keys.sorted() {
            guard var identity = config.identities[name], identity.grant.isInteractive else { continue }
            let path = identitiesPath.key(name)
            if case .authorizationCode = identity.grant {
                if let redirect = identity.redirectUri {
                    if !listeners.contains(where: { $0.serves(redirect) }) {
                        let served = listeners.map(\.description).joined(separator: " and ")
                        report("\(redirect) is served by no listener of this relay (it listens on \(served)); the relay serves the "
                               + "login callback itself, so the redirect URI must name its listen or listenTls address and port",
                               at: path.key("redirectUri"), offset: offset)
                    }
                } else if config.listen.port == 0 {
                    report("the default redirect URI needs a fixed listen port (listen has port 0); set redirectUri",
                           at: path.key("redirectUri"), offset: offset)
                } else {
                    identity.redirectUri = HTTPURL(scheme: .http, host: LoginListener.urlHost(config.listen.host),
                                                   port: config.listen.port, path: Self.defaultCallbackPath)
                    config.identities[name] = identity
                }
            }
            let exposed = listeners.filter { !HostSyntax.isLoopback($0.host) }
            let onRoutes = config.routes.filter { $0.identity == name }.map(\.name)
            if !identity.allowRemoteUse, !exposed.isEmpty, !onRoutes.isEmpty {
                report("identity \(name) acts for a person (\(identity.grant) grant) and route \(onRoutes[0]) offers its token on "
                       + "\(exposed[0]), which other machines can reach: anyone who reaches that listener would act as the person "
                       + "logged in. Listen on a loopback address, or set \"allowRemoteUse\": true to accept that",
                       at: path, offset: offset)
            }
        }
    }
}

/// A listener of the relay as a login URL names it.
struct LoginListener: CustomStringConvertible {
    let scheme: URLScheme
    let host: String
    let port: UInt16

    /// True when `url` is on this listener: same scheme and port, and a host that reaches it
    /// (its address; any name for a wildcard address; any loopback name for a loopback one).
    func serves(_ url: HTTPURL) -> Bool {
        guard url.scheme == scheme, url.port == port else { return false }
        let wanted = url.host.lowercased()
        if wanted == host.lowercased() || host == "0.0.0.0" || host == "::" { return true }
        return HostSyntax.isLoopback(host) && HostSyntax.isLoopback(wanted)
    }

    /// The host a URL uses for a listener's address: `localhost` for a wildcard address.
    static func urlHost(_ address: String) -> String {
        address == "0.0.0.0" || address == "::" ? "localhost" : address
    }

    var description: String {
        "\(scheme.rawValue)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }
}

extension RelayConfig {
    /// The listeners that serve routes (and so login pages): the plain one and the TLS one.
    var loginListeners: [LoginListener] {
        var listeners = [LoginListener(scheme: .http, host: listen.host, port: listen.port)]
        if let tls = listenTls { listeners.append(LoginListener(scheme: .https, host: tls.address.host, port: tls.address.port)) }
        return listeners
    }
}
