/// Picks the route for a request, precomputed from the routes so that matching is a hash
/// lookup plus a few byte comparisons: no String, no allocation.
///
/// Precedence (CONFIG.md): a route matches when its host pattern matches the Host header and
/// its `pathPrefix` is a byte prefix of the normalized path. Among matching routes, an exact
/// host beats a wildcard (the longest wildcard suffix first: `*.b.example.com` before
/// `*.example.com`), which beats a route without `host`; then the longest `pathPrefix` wins;
/// then the lower `Route.index` (file order). So a request for an exact host whose routes
/// have no matching prefix still falls through to wildcard and host-less routes.
public struct RouteTable: Sendable {
    /// The routes as given (file order); `matchIndex` returns positions in this array.
    public let routes: [Route]
    private let exactHosts: HostIndex
    private let wildcardSuffixes: HostIndex
    /// Group of the routes without `host`, if any.
    private let anyHostGroup: Int?
    /// Each group's range in `candidates`.
    private let groups: [Range<Int>]
    /// Per group, most specific first: longest prefix, then file order.
    private let candidates: [Candidate]
    /// The path prefixes, back to back.
    private let prefixBytes: [UInt8]

    private struct Candidate: Sendable {
        var prefixStart: Int
        var prefixCount: Int
        var route: Int
    }

    public init(_ routes: [Route]) {
        self.routes = routes
        var positionsByHost: [HostPattern?: [Int]] = [:]
        var hostOrder: [HostPattern?] = []
        for (position, route) in routes.enumerated() {
            if positionsByHost[route.match.host] == nil { hostOrder.append(route.match.host) }
            positionsByHost[route.match.host, default: []].append(position)
        }
        var groups: [Range<Int>] = []
        var candidates: [Candidate] = []
        var prefixBytes: [UInt8] = []
        var exactKeys: [(String, Int)] = []
        var wildcardKeys: [(String, Int)] = []
        var anyHostGroup: Int?
        for host in hostOrder {
            let positions = positionsByHost[host]!.sorted { a, b in
                let (ra, rb) = (routes[a], routes[b])
                if ra.match.pathPrefix.utf8.count != rb.match.pathPrefix.utf8.count {
                    return ra.match.pathPrefix.utf8.count > rb.match.pathPrefix.utf8.count
                }
                return (ra.index, a) < (rb.index, b)
            }
            let first = candidates.count
            for position in positions {
                let prefix = routes[position].match.pathPrefix.utf8
                candidates.append(Candidate(prefixStart: prefixBytes.count, prefixCount: prefix.count, route: position))
                prefixBytes.append(contentsOf: prefix)
            }
            let group = groups.count
            groups.append(first..<candidates.count)
            switch host {
            case .exact(let name)?: exactKeys.append((name, group))
            case .wildcard(let suffix)?: wildcardKeys.append((suffix, group))
            case nil: anyHostGroup = group
            }
        }
        self.groups = groups
        self.candidates = candidates
        self.prefixBytes = prefixBytes
        self.anyHostGroup = anyHostGroup
        self.exactHosts = HostIndex(exactKeys)
        self.wildcardSuffixes = HostIndex(wildcardKeys)
    }

    /// The position in `routes` of the route for a request, or nil (answer 404).
    ///
    /// - `host`: the raw Host header value (empty when there is none). A `:port` is ignored,
    ///   case is ignored, `[::1]:8180` is the IPv6 host `::1`, one trailing dot is ignored.
    /// - `path`: the request path as normalized by `RequestPath.normalize`, without query.
    public func matchIndex(host: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer) -> Int? {
        let bounds = HostIndex.hostBounds(in: host)
        if !bounds.isEmpty {
            if let group = exactHosts.lookup(host, bounds), let route = firstMatch(in: group, path: path) {
                return route
            }
            if !wildcardSuffixes.isEmpty {
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
            }
        }
        return anyHostGroup.flatMap { firstMatch(in: $0, path: path) }
    }

    /// The route for a request (see `matchIndex(host:path:)`), or nil.
    public func match(host: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer) -> Route? {
        matchIndex(host: host, path: path).map { routes[$0] }
    }

    /// Convenience for tests and tools (copies the strings); `path` must be normalized.
    public func match(host: String, path: String) -> Route? {
        var host = host, path = path
        return host.withUTF8 { hostBytes in
            path.withUTF8 { pathBytes in
                match(host: UnsafeRawBufferPointer(hostBytes), path: UnsafeRawBufferPointer(pathBytes))
            }
        }
    }

    private func firstMatch(in group: Int, path: UnsafeRawBufferPointer) -> Int? {
        prefixBytes.withUnsafeBufferPointer { prefixes in
            for candidate in candidates[groups[group]] where candidate.prefixCount <= path.count {
                var index = 0
                while index < candidate.prefixCount && path[index] == prefixes[candidate.prefixStart + index] {
                    index += 1
                }
                if index == candidate.prefixCount { return candidate.route }
            }
            return nil
        }
    }
}
