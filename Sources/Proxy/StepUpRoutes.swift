import Config
import Endpoints

/// Which interactive identities may be stepped up by their upstreams' challenges: only one
/// whose routes all go to one origin (scheme, host, port). An identity shared by routes to
/// different upstreams would carry a scope one upstream asked for to the others, so there an
/// upstream's challenge goes to the client as it came.
public enum StepUpRoutes {
    /// The names of the identities used by routes to more than one upstream origin, sorted.
    public static func sharedAcrossOrigins(_ routes: [Route]) -> [String] {
        // Each identity's first origin, compared as a value: writing every route's origin as
        // text and keeping a set of them per identity was 7% of a start-up with 10,000 routes
        // (callgrind), and this runs at each start-up and reload.
        var firstOrigin: [String: Origin] = [:]
        var shared: Set<String> = []
        for route in routes {
            guard let identity = route.identity else { continue }
            let origin = Origin(route.upstream)
            if let first = firstOrigin[identity] {
                if first != origin { shared.insert(identity) }
            } else {
                firstOrigin[identity] = origin
            }
        }
        return shared.sorted()
    }

    /// An upstream's origin: `scheme://authority`, the host's case ignored.
    private struct Origin: Hashable {
        let scheme: URLScheme
        let host: String
        let port: UInt16

        init(_ upstream: UpstreamURL) {
            scheme = upstream.scheme
            host = upstream.host.lowercased()
            port = upstream.port
        }
    }
}
