import Endpoints
import OAuth2

/// Makes the identities of the routes with `"identity": "auto"`: one per distinct upstream,
/// named for it (`AutoIdentityName`), from the `auto` object (`AutoDefaults.identity`). They are
/// added to `identities` before the checks across sections run, so that a browser login's
/// default redirect URI and the rule on listeners other machines reach apply to them as to any
/// person's identity (`InteractiveIdentityChecks`). Refused: a configured identity named `auto`
/// (`checkReservedName`), or named as one made here; two upstreams that give one name; routes to one upstream with
/// different `tls` (the identity asks its resource with one); an upstream whose certificate is not
/// verified without `auto.allowedIssuers` (`checkUpstream`).
struct AutoIdentities {
    let context: DecodingContext

    /// Refuses a configured identity named `auto`, routes or not: `"identity": "auto"` could not
    /// name it.
    func checkReservedName(_ identitiesField: Field) {
        guard case .object(let members) = identitiesField.value.kind,
              let reserved = members.first(where: { $0.key == AutoIdentityName.keyword }) else { return }
        context.report("the identity name \"auto\" is reserved: a route with \"identity\": \"auto\" gets an identity made for "
                       + "its upstream; rename this one", at: identitiesField.path.key(reserved.key), offset: reserved.keyOffset)
    }

    /// Adds the identities to `config.identities` (each auto route's `identity` already names
    /// its own), and answers where each one's problems are reported. `configuredNames` are the
    /// keys of `identities` (valid or not).
    func addIdentities(to config: inout RelayConfig, autoRoutes: [AutoRoute], configuredNames: [String],
                       autoField: Field?) -> [String: IdentityOrigin] {
        let defaults = config.auto ?? AutoDefaults()
        var firstByUpstream: [UpstreamURL: Route] = [:]
        var upstreamByName: [String: Route] = [:]
        var origins: [String: IdentityOrigin] = [:]
        for autoRoute in autoRoutes {
            guard let route = config.routes.first(where: { $0.index == autoRoute.index }), let name = route.identity else { continue }
            let field = autoRoute.identityField
            if let first = firstByUpstream[route.upstream] {
                if first.tls != route.tls {
                    context.report("\(first.name) has the same upstream with other tls settings; the identity made for an upstream "
                                   + "asks it with one TLS configuration: give the routes the same tls", at: field)
                }
                continue
            }
            firstByUpstream[route.upstream] = route
            checkUpstream(of: route, at: field, defaults: defaults)
            if configuredNames.contains(name) {
                context.report("\"auto\" makes identity \(name) for \(route.upstream), but identities.\(name) is configured too; "
                               + "rename that identity", at: field)
                continue
            }
            if let other = upstreamByName[name] {
                context.report("\"auto\" makes identity \(name) for \(route.upstream), the name \(other.name) gets for "
                               + "\(other.upstream): one identity cannot stand for two upstreams; configure one of them as an "
                               + "identity of its own", at: field)
                continue
            }
            upstreamByName[name] = route
            config.identities[name] = defaults.identity(named: name, for: route.upstream, tls: route.tls)
            origins[name] = .auto(route: field, autoObject: autoField)
        }
        return origins
    }

    /// What the upstream of an auto route must be for the identity to learn anything from it
    /// safely: https (plain http only to a loopback host: the chain refuses anything else, so it
    /// would fail forever with `insecure_url`); and with `tls.insecureSkipVerify`, whoever
    /// answers in the upstream's place could name any authorization server, so
    /// `auto.allowedIssuers` must say which.
    private func checkUpstream(of route: Route, at field: Field, defaults: AutoDefaults) {
        if route.upstream.scheme == .http && !HostSyntax.isLoopback(route.upstream.host) {
            context.report("identity \"auto\" needs an https upstream (plain http only to a loopback host), not \(route.upstream)",
                           at: field)
        }
        if route.tls?.insecureSkipVerify == true && defaults.allowedIssuers.isEmpty {
            context.report("identity \"auto\" on a route with tls.insecureSkipVerify needs auto.allowedIssuers: the upstream's "
                           + "certificate is not verified, so whoever answers in its place could name any authorization server",
                           at: field)
        }
    }

    /// The rule `InteractiveIdentityChecks` has not: on a listener other machines reach, the
    /// upstream must not send the relay to any authorization server it names, so
    /// `auto.allowedIssuers` must list them. Reported once, for the first auto route.
    func checkIssuersOnExposedListeners(_ config: RelayConfig, origins: [String: IdentityOrigin]) {
        guard (config.auto?.allowedIssuers ?? []).isEmpty,
              let exposed = config.loginListeners.first(where: { !HostSyntax.isLoopback($0.host) }),
              let route = config.routes.first(where: { $0.identity.map { origins[$0] != nil } ?? false }),
              let name = route.identity, let origin = origins[name] else { return }
        context.report("route \(route.name) offers the token of identity \(name) (\"identity\": \"auto\") on \(exposed), which other "
                       + "machines can reach: list the authorization servers it may use in auto.allowedIssuers (any https issuer "
                       + "the upstream names is accepted only when every listener is loopback)",
                       at: origin.path(of: "allowedIssuers"), offset: origin.offset(of: "allowedIssuers"))
    }
}
