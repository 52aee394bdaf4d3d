import Routing

extension RelayConfig {
    /// What `check` and `run` warn of when `forward` is set: a forward proxy that intercepts
    /// nothing (no route names a `match.host`, so every `CONNECT` is tunnelled or refused), and
    /// each route with an identity whose `match.host` is an IP address, which the forward proxy
    /// never intercepts (its CA signs for names only). Not errors: the reverse listener serves
    /// those routes as before.
    public var forwardProxyWarnings: [String] {
        guard forward != nil else { return [] }
        var warnings: [String] = []
        if interceptedHosts.isEmpty {
            warnings.append("\(JSONPath.root.key("forward")): the forward proxy intercepts nothing: no route names match.host")
        }
        for route in routes where route.identity != nil {
            guard let host = route.match.host, !host.isName else { continue }
            warnings.append("\(JSONPath.root.key("routes").index(route.index).key("match").key("host")): \(host) is not intercepted "
                            + "by the forward proxy: the CA signs for names only (route \(route.name) is served on the other listeners)")
        }
        return warnings
    }
}
