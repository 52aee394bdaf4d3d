import Routing

extension RelayConfig {
    /// What `check` and `run` warn of when `forward` is set: a forward proxy that intercepts
    /// nothing (no route names a `match.host`, so every `CONNECT` is tunnelled or refused); each
    /// wildcard over a one-label suffix (`*.com`), which lets the CA sign for a whole top-level
    /// domain; and each route with an identity whose `match.host` is an IP address, which the
    /// forward proxy never intercepts (its CA signs for names only). Not errors: the reverse
    /// listener serves those routes as before.
    public var forwardProxyWarnings: [String] {
        guard forward != nil else { return [] }
        var warnings: [String] = []
        if interceptedHosts.isEmpty {
            warnings.append("\(JSONPath.root.key("forward")): the forward proxy intercepts nothing: no route names match.host")
        }
        for route in routes {
            guard case .wildcard(let suffix)? = route.match.host, route.match.host?.isName == true, !suffix.contains(".") else { continue }
            warnings.append("\(JSONPath.root.key("routes").index(route.index).key("match").key("host")): *.\(suffix) lets the forward "
                            + "proxy's CA sign for every name under \(suffix) (route \(route.name)); name the hosts, or a longer suffix")
        }
        for route in routes where route.identity != nil {
            guard let host = route.match.host, !host.isName else { continue }
            warnings.append("\(JSONPath.root.key("routes").index(route.index).key("match").key("host")): \(host) is not intercepted "
                            + "by the forward proxy: the CA signs for names only (route \(route.name) is served on the other listeners)")
        }
        return warnings
    }
}
