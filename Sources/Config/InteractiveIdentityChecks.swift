import Endpoints
import OAuth2

/// The rules that tie interactive identities (a person logs in: authorization code, device
/// code) to the rest of the configuration, checked once everything is decoded: the redirect URI
/// must be served by one of the relay's listeners, and a person's token must not be offered on a
/// network listener unless the operator says so. (The keys such an identity may set are
/// `IdentityKeyChecks`'s.) The identities made for `"identity": "auto"` routes follow the same
/// rules with their `auto` settings; `origins` says where their problems are reported.
struct InteractiveIdentityChecks {
    let context: DecodingContext

    /// The path of the relay's built-in login callback, the default redirect URI's path.
    static let defaultCallbackPath = "/.oauth-relay/callback"

    /// Rules across identities, routes and listeners, once all are decoded: every browser-login
    /// identity gets its redirect URI (by default the callback on the plain listener), which must
    /// name a listener of this relay; an interactive identity on a route is refused when a
    /// listener is reachable from other machines, unless it sets `allowRemoteUse`. An identity
    /// not in `autoOrigins` is a configured one, at `identitiesPath` (which starts at `offset`).
    func checkInteractiveIdentities(_ config: inout RelayConfig, identitiesPath: JSONPath, offset: Int,
                                    autoOrigins: [String: IdentityOrigin] = [:]) {
        let listeners = config.loginListeners
        for name in config.identities.keys.sorted() {
            guard var identity = config.identities[name], identity.grant.isInteractive else { continue }
            let origin = autoOrigins[name] ?? .configured(path: identitiesPath.key(name), offset: offset)
            if case .authorizationCode = identity.grant {
                if let redirect = identity.redirectUri {
                    if !listeners.contains(where: { $0.serves(redirect) }) {
                        let served = listeners.map(\.description).joined(separator: " and ")
                        context.report("\(redirect) is served by no listener of this relay (it listens on \(served)); the relay serves the "
                                       + "login callback itself, so the redirect URI must name its listen or listenTls address and port",
                                       at: origin.path(of: "redirectUri"), offset: origin.offset(of: "redirectUri"))
                    }
                } else if config.listen.port == 0 {
                    context.report("the default redirect URI needs a fixed listen port (listen has port 0); set "
                                   + origin.name(of: "redirectUri"), at: origin.path(of: "redirectUri"), offset: origin.offset(of: "redirectUri"))
                } else {
                    identity.redirectUri = HTTPURL(scheme: .http, host: LoginListener.urlHost(config.listen.host),
                                                   port: config.listen.port, path: Self.defaultCallbackPath)
                    config.identities[name] = identity
                }
            }
            let exposed = listeners.filter { !HostSyntax.isLoopback($0.host) }
            let onRoutes = config.routes.filter { $0.identity == name }.map(\.name)
            if !identity.allowRemoteUse, !exposed.isEmpty, !onRoutes.isEmpty {
                context.report("identity \(name) acts for a person (\(identity.grant) grant) and route \(onRoutes[0]) offers its token on "
                               + "\(exposed[0]), which other machines can reach: anyone who reaches that listener would act as the person "
                               + "logged in. Listen on a loopback address, or set \"\(origin.name(of: "allowRemoteUse"))\": true to accept that",
                               at: origin.path, offset: origin.offset)
            }
        }
    }
}
