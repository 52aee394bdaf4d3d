import SafeText

/// What `store.redis` names: one server (`redis://`), the seed nodes of a Redis Cluster
/// (`redis-cluster://`, RedisClusterSeeds.swift), or the sentinels that name a master
/// (`redis-sentinel://`, SentinelTopology.swift). Each form parses in its own file; this one
/// only chooses by the scheme.
public enum RedisTopology: Sendable, Equatable, CustomStringConvertible {
    case server(RedisEndpoint)
    case cluster(RedisClusterSeeds)
    /// A master found through Redis Sentinel, which moves it on failover.
    case sentinel(SentinelTopology)

    /// Parses `store.redis`. Errors never quote the URL: it may hold a password.
    public init(parsing text: String) throws(RedisURLError) {
        if RedisClusterSeeds.names(text) {
            self = .cluster(try RedisClusterSeeds(parsing: text))
        } else if SentinelTopology.names(text) {
            self = .sentinel(try SentinelTopology(parsing: text))
        } else {
            self = .server(try RedisEndpoint(parsing: text))
        }
    }

    /// The URL with the password replaced by `…`.
    public var description: String {
        switch self {
        case .server(let endpoint): endpoint.description
        case .cluster(let seeds): seeds.description
        case .sentinel(let sentinel): sentinel.description
        }
    }

    /// A Redis Cluster: keys are hash-tagged and commands routed by slot.
    public var isCluster: Bool {
        if case .cluster = self { return true }
        return false
    }

    /// TLS to every node (`rediss://`, `rediss-cluster://`, `rediss-sentinel://`): the
    /// connections take `store.tls`.
    public var usesTLS: Bool {
        switch self {
        case .server(let endpoint): endpoint.usesTLS
        case .cluster(let seeds): seeds.seeds[0].usesTLS
        case .sentinel(let sentinel): sentinel.usesTLS
        }
    }

    /// The password, to tell a reload that changed only it (it takes a restart).
    public var password: Secret? {
        switch self {
        case .server(let endpoint): endpoint.password
        case .cluster(let seeds): seeds.seeds[0].password
        case .sentinel(let sentinel): sentinel.password
        }
    }
}
