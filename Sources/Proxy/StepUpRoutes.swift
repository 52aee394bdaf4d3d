import Config

/// Which interactive identities may be stepped up by their upstreams' challenges: only one
/// whose routes all go to one origin (scheme, host, port). An identity shared by routes to
/// different upstreams would carry a scope one upstream asked for to the others, so there an
/// upstream's challenge goes to the client as it came.
public enum StepUpRoutes {
    /// The names of the identities used by routes to more than one upstream origin, sorted.
    public static func sharedAcrossOrigins(_ routes: [Route]) -> [String] {
        var origins: [String: Set<String>] = [:]
        for route in routes {
            guard let identity = route.identity else { continue }
            origins[identity, default: []].insert("\(route.upstream.scheme.rawValue)://\(route.upstream.authority.lowercased())")
        }
        return origins.filter { $0.value.count > 1 }.map(\.key).sorted()
    }
}
