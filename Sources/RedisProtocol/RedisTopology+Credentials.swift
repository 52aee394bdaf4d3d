import SafeText

extension RedisTopology {
    /// The ACL user every connection logs in as (the URL's); nil for the `default` user.
    public var user: String? {
        switch self {
        case .server(let endpoint): endpoint.user
        case .cluster(let seeds): seeds.seeds[0].user
        case .sentinel(let sentinel): sentinel.user
        }
    }

    /// The same server, seed nodes or sentinels' master, every connection to Redis logging in as
    /// `user` with `password` (`store.username`, and `store.passwordFile`'s content as the relay
    /// reads it now).
    public func withCredentials(user: String?, password: Secret?) -> RedisTopology {
        func credited(_ endpoint: RedisEndpoint) -> RedisEndpoint {
            var endpoint = endpoint
            endpoint.user = user
            endpoint.password = password
            return endpoint
        }
        switch self {
        case .server(let endpoint): return .server(credited(endpoint))
        case .cluster(let seeds): return .cluster(RedisClusterSeeds(seeds: seeds.seeds.map(credited)))
        case .sentinel(var sentinel):
            sentinel.user = user
            sentinel.password = password
            return .sentinel(sentinel)
        }
    }
}
