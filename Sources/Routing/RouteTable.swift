// Routing: which route takes a request. Pure and allocation-free on the request path: the
// table is built once per config from the routes' matches, and a request is matched with raw
// Host-header and normalized-path bytes. Config decodes JSON into `RouteMatch` and
// `HostPattern`; the proxy builds a `RouteTable` from them and keeps its own per-route plans
// at the positions the table answers.

/// Picks the route for a request, precomputed from the routes' matches so that matching is a
/// hash lookup of the host and one walk down a trie of its path prefixes (`PrefixTries`): no
/// String, no allocation, and about the same cost with 10 routes as with 10,000.
///
/// Precedence (CONFIG.md): a route matches when its host pattern matches the Host header and
/// its `pathPrefix` is a byte prefix of the normalized path. Among matching routes, an exact
/// host beats a wildcard (the longest wildcard suffix first: `*.b.example.com` before
/// `*.example.com`), which beats a route without `host`; then the longest `pathPrefix` wins;
/// then the lower position (file order). So a request for an exact host whose routes have no
/// matching prefix still falls through to wildcard and host-less routes (on the reverse
/// listener; the forward proxy's `matchIndexNamingHost` stops before host-less routes).
public struct RouteTable: Sendable {
    private let exactHosts: HostIndex
    private let wildcardSuffixes: HostIndex
    /// Group of the routes without `host`, if any.
    private let anyHostGroup: Int?
    /// Each group's path prefixes, valued with their route's position.
    private let prefixes: PrefixTries

    /// `matches` in file order; `matchIndex` answers positions in this array.
    public init(_ matches: [RouteMatch]) {
        var groupByHost: [HostPattern?: Int] = [:]
        groupByHost.reserveCapacity(matches.count)
        var groups: [[(prefix: [UInt8], value: Int)]] = []
        var exactKeys: [(String, Int)] = []
        var wildcardKeys: [(String, Int)] = []
        var anyHostGroup: Int?
        for (position, match) in matches.enumerated() {
            let group: Int
            if let known = groupByHost[match.host] {
                group = known
            } else {
                group = groups.count
                groupByHost[match.host] = group
                groups.append([])
                switch match.host {
                case .exact(let name)?: exactKeys.append((name, group))
                case .wildcard(let suffix)?: wildcardKeys.append((suffix, group))
                case nil: anyHostGroup = group
                }
            }
            groups[group].append((Array(match.pathPrefix.utf8), position))
        }
        self.prefixes = PrefixTries(groups)
        self.anyHostGroup = anyHostGroup
        self.exactHosts = HostIndex(exactKeys)
        self.wildcardSuffixes = HostIndex(wildcardKeys)
    }

    /// The position in `matches` of the route for a request, or nil (answer 404).
    ///
    /// - `host`: the raw Host header value (empty when there is none). A `:port` is ignored,
    ///   case is ignored, `[::1]:8180` is the IPv6 host `::1`, one trailing dot is ignored.
    /// - `path`: the request path as normalized by `RequestPath.normalize`, without query.
    public func matchIndex(host: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer) -> Int? {
        lookup(host: host, path: path, fallsBackToAnyHost: true)
    }

    /// As `matchIndex(host:path:)`, but only routes whose `host` covers the request's host
    /// (exact or wildcard) may match: a route without `host` never does. For the forward
    /// proxy, where the host names a site on the internet, not this relay.
    public func matchIndexNamingHost(host: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer) -> Int? {
        lookup(host: host, path: path, fallsBackToAnyHost: false)
    }

    // Inlined into both entry points with `fallsBackToAnyHost` a constant: the reverse
    // listener's lookup pays nothing for the forward proxy's mode.
    @inline(__always)
    private func lookup(host: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer, fallsBackToAnyHost: Bool) -> Int? {
        // A table without `host` routes (a relay in front of one upstream) does not read the
        // Host at all (its bounds were 90 instructions a request, callgrind).
        if !(exactHosts.isEmpty && wildcardSuffixes.isEmpty), let route = hostGroupMatch(host: host, path: path) {
            return route
        }
        guard fallsBackToAnyHost else { return nil }
        return anyHostGroup.flatMap { firstMatch(in: $0, path: path) }
    }

    /// The route of the exact host, or else of the longest wildcard suffix, that `host` names.
    @inline(__always)
    private func hostGroupMatch(host: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer) -> Int? {
        let bounds = HostIndex.hostBounds(in: host)
        guard !bounds.isEmpty else { return nil }
        if let group = exactHosts.lookup(host, bounds), let route = firstMatch(in: group, path: path) {
            return route
        }
        guard !wildcardSuffixes.isEmpty else { return nil }
        // Each dot starts a shorter suffix: `a.b.example.com` tries `b.example.com`,
        // then `example.com`, then `com`, so the longest wildcard wins.
        var dot = bounds.lowerBound
        while dot < bounds.upperBound - 1 {
            if host[dot] == UInt8(ascii: "."),
               let group = wildcardSuffixes.lookup(host, (dot + 1)..<bounds.upperBound),
               let route = firstMatch(in: group, path: path) {
                return route
            }
            dot += 1
        }
        return nil
    }

    /// Convenience for tests and tools (copies the strings); `path` must be normalized.
    /// `namingHost`: `matchIndexNamingHost`'s mode.
    public func matchIndex(host: String, path: String, namingHost: Bool = false) -> Int? {
        var host = host, path = path
        return host.withUTF8 { hostBytes in
            path.withUTF8 { pathBytes in
                let (host, path) = (UnsafeRawBufferPointer(hostBytes), UnsafeRawBufferPointer(pathBytes))
                return namingHost ? matchIndexNamingHost(host: host, path: path) : matchIndex(host: host, path: path)
            }
        }
    }

    /// The route of the longest of a host group's prefixes that `path` starts with (the first
    /// in file order among equal ones).
    private func firstMatch(in group: Int, path: UnsafeRawBufferPointer) -> Int? {
        prefixes.longestPrefix(in: group, of: path)
    }
}
