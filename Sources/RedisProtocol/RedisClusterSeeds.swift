// `redis-cluster://[user:password@]host:port[,host:port…]` (or `rediss-cluster://` for TLS to every
// node): the nodes of a Redis Cluster the relay
// asks for the slot map (`CLUSTER SLOTS`), in turn, until one answers. Every node of the cluster,
// seed or found in the map, is logged in to with the same user and password. A cluster has
// database 0 only, so the path is empty or `/0`.

import Endpoints
import SafeText

/// The seed nodes of a Redis Cluster and the credentials every node takes.
public struct RedisClusterSeeds: Sendable, Equatable, CustomStringConvertible {
    /// At least one; each with the URL's user and password, database 0.
    public let seeds: [RedisEndpoint]

    public init(seeds: [RedisEndpoint]) {
        precondition(!seeds.isEmpty, "a cluster has a seed node")
        self.seeds = seeds
    }

    /// A node the slot map names: the seeds' credentials at `host`:`port`.
    public func node(host: String, port: UInt16) -> RedisEndpoint {
        RedisEndpoint(host: host, port: port, user: seeds[0].user, password: seeds[0].password, usesTLS: seeds[0].usesTLS)
    }

    /// The URL with the password replaced by `…`: what logs and errors show.
    public var description: String {
        var userInfo = ""
        if seeds[0].password != nil { userInfo = (seeds[0].user ?? "") + ":…@" }
        let nodes = seeds.map { "\(HostSyntax.bracketed($0.host)):\($0.port)" }.joined(separator: ",")
        return "\(seeds[0].usesTLS ? Self.tlsScheme : Self.scheme)://\(userInfo)\(nodes)"
    }

    static let scheme = "redis-cluster"
    static let tlsScheme = "rediss-cluster"

    /// `text` has the `redis-cluster` or `rediss-cluster` scheme (in any case).
    static func names(_ text: String) -> Bool {
        usesTLS(text) != nil
    }

    /// Whether `text`'s scheme is `rediss-cluster`; nil when it is neither cluster scheme.
    private static func usesTLS(_ text: String) -> Bool? {
        RedisURLParts.usesTLS(text, plain: scheme, tls: tlsScheme)
    }
}

extension RedisClusterSeeds {
    /// Parses `redis-cluster://[user:password@]host[:port][,host[:port]…][/0]`, or the same with
    /// `rediss-cluster://` (TLS to every node). User and password
    /// may be percent-encoded, as in `redis://`.
    public init(parsing text: String) throws(RedisURLError) {
        guard let separator = text.firstRange(of: "://"), let usesTLS = Self.usesTLS(text) else {
            throw RedisURLError("not a redis-cluster:// URL (expected redis-cluster://[user:password@]host:port[,host:port…])")
        }
        let parts = try RedisURLParts(afterScheme: text[separator.upperBound...], form: "redis-cluster://")
        guard try RedisEndpoint.parseDatabase(parts.path) == 0 else {
            throw RedisURLError("a Redis Cluster has database 0 only: leave the path out (or write /0)")
        }
        guard !parts.hosts.isEmpty else { throw RedisURLError("the URL has no host") }
        var seeds: [RedisEndpoint] = []
        for node in parts.hosts.split(separator: ",", omittingEmptySubsequences: false) {
            guard !node.isEmpty else {
                throw RedisURLError("the list of nodes has an empty entry (write host:port,host:port)")
            }
            let (host, port) = try RedisEndpoint.parseHostPort(node)
            seeds.append(RedisEndpoint(host: host, port: port, user: parts.user, password: parts.password, usesTLS: usesTLS))
        }
        guard seeds.count <= Self.seedsAtMost else {
            throw RedisURLError("more than \(Self.seedsAtMost) seed nodes (a few are enough: the others are found in the slot map)")
        }
        self.init(seeds: seeds)
    }

    /// Seeds are asked in turn at every connection: a long list only delays finding a dead cluster.
    public static let seedsAtMost = 16
}
