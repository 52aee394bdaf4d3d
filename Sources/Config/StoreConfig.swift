import Endpoints
import OAuth2
import RedisProtocol
import SafeText

/// `store`: where the relay keeps its tokens across restarts — a directory (the TokenStore
/// module), a Redis shared by replicas (`redis`), or both — and the key that encrypts them.
/// Restart-only.
public struct StoreConfig: Sendable, Equatable {
    /// The directory, resolved against the config file's directory; nil with `redis` alone.
    public var path: String?
    /// The 32-byte key as base64 text (checked to decode to 32 bytes), from `key` or `keyFile`.
    public var key: Secret
    /// The store shared by replicas, when `redis` is set.
    public var redis: RedisStoreConfig?

    public init(path: String?, key: Secret, redis: RedisStoreConfig? = nil) {
        self.path = path
        self.key = key
        self.redis = redis
    }

    static let knownKeys = ["path", "key", "keyFile", "redis", "keyPrefix", "timeoutMilliseconds", "tls", "username", "passwordFile"]
}

/// `store.redis` and the keys that go with it.
public struct RedisStoreConfig: Sendable, Equatable {
    public static let defaultKeyPrefix = "oauth-relay:"
    public static let defaultTimeoutMilliseconds = 200

    /// The server, the cluster's seed nodes, or the sentinels that name the master (a password
    /// is a `Secret`; descriptions redact it).
    public var topology: RedisTopology
    /// Prepended to every key and to the channel, so several fleets can share one Redis.
    public var keyPrefix: String
    /// Longer than this without an answer and Redis counts as down: the fetch goes on without it.
    public var timeoutMilliseconds: Int
    /// `store.tls`, with the defaults (the system's CAs, the URL's host verified) when it is not
    /// given: set exactly when the URL is `rediss://`.
    public var tls: TLSSettings?
    /// `passwordFile`, resolved: the endpoint's password was read from it at load, and the token
    /// thread reads it again at every connection (a rotated password applies without a reload).
    public var passwordFile: String?

    /// `tls` defaults to the default settings for a TLS topology (`rediss://`,
    /// `rediss-cluster://`), to none otherwise.
    public init(topology: RedisTopology, keyPrefix: String = Self.defaultKeyPrefix,
                timeoutMilliseconds: Int = Self.defaultTimeoutMilliseconds, tls: TLSSettings? = nil, passwordFile: String? = nil) {
        self.topology = topology
        self.keyPrefix = keyPrefix
        self.timeoutMilliseconds = timeoutMilliseconds
        self.tls = tls ?? (topology.usesTLS ? TLSSettings() : nil)
        self.passwordFile = passwordFile
    }

    public init(endpoint: RedisEndpoint, keyPrefix: String = Self.defaultKeyPrefix,
                timeoutMilliseconds: Int = Self.defaultTimeoutMilliseconds, tls: TLSSettings? = nil) {
        self.init(topology: .server(endpoint), keyPrefix: keyPrefix, timeoutMilliseconds: timeoutMilliseconds, tls: tls)
    }
}
