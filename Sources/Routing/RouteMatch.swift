/// Which requests a route takes.
public struct RouteMatch: Sendable, Equatable, Hashable {
    /// Nil matches any host.
    public var host: HostPattern?
    /// A plain byte prefix of the normalized path, like nginx `location /api/`: `/api`
    /// also matches `/apis`, so end a prefix with `/` to match whole segments.
    public var pathPrefix: String

    public init(host: HostPattern? = nil, pathPrefix: String = "/") {
        self.host = host
        self.pathPrefix = pathPrefix
    }
}
