import FoundationEssentials
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

    static let knownKeys = ["path", "key", "keyFile", "redis", "keyPrefix", "timeoutMilliseconds", "tls"]
}

/// `store.redis` and the keys that go with it.
public struct RedisStoreConfig: Sendable, Equatable {
    public static let defaultKeyPrefix = "oauth-relay:"
    public static let defaultTimeoutMilliseconds = 200

    /// The server (its password, if any, is a `Secret`; descriptions redact it).
    public var endpoint: RedisEndpoint
    /// Prepended to every key and to the channel, so several fleets can share one Redis.
    public var keyPrefix: String
    /// Longer than this without an answer and Redis counts as down: the fetch goes on without it.
    public var timeoutMilliseconds: Int

    public init(endpoint: RedisEndpoint, keyPrefix: String = Self.defaultKeyPrefix,
                timeoutMilliseconds: Int = Self.defaultTimeoutMilliseconds) {
        self.endpoint = endpoint
        self.keyPrefix = keyPrefix
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}

extension DecodingContext {
    func decodeStore(_ field: Field) -> StoreConfig? {
        guard let object = ObjectReader(field, knownKeys: StoreConfig.knownKeys, in: self) else { return nil }
        let pathField = object.field("path")
        let path = pathField.flatMap(nonEmptyString).map(resolvePath)
        let redisField = object.field("redis")
        if pathField == nil && redisField == nil {
            report("required: \"path\" (a directory), \"redis\" (a redis:// URL shared by replicas), or both",
                   at: object.path.key("path"), offset: object.lastOffset)
        }
        let keyField = object.field("key") ?? object.field("keyFile")
        if keyField == nil {
            report("required: \"key\" or \"keyFile\" (32 random bytes, base64: `openssl rand -base64 32`)",
                   at: object.path.key("key"), offset: object.lastOffset)
        }
        let key = object.secret("key")
        if let key, let keyField {
            // Words about the key's length only: never its text.
            let bytes = Data(base64Encoded: key.value)
            if bytes == nil {
                report("the key is not base64 (create one with `openssl rand -base64 32`)", at: keyField)
            } else if let bytes, bytes.count != 32 {
                report("the key decodes to \(bytes.count) bytes, not 32 (create one with `openssl rand -base64 32`)", at: keyField)
            }
        }
        let redis = decodeRedisStore(object, redisField: redisField)
        if let tls = object.field("tls") {
            // Accepted by the schema for the day hiredis brings TLS; refused with the reason until then.
            report("\(RedisURLError.noTLS)", at: tls)
        }
        guard pathField == nil || path != nil, redisField == nil || redis != nil, pathField != nil || redisField != nil,
              let key else { return nil }
        return StoreConfig(path: path, key: key, redis: redis)
    }

    /// `redis`, `keyPrefix`, `timeoutMilliseconds`: the last two only beside the first.
    private func decodeRedisStore(_ object: ObjectReader, redisField: Field?) -> RedisStoreConfig? {
        let prefixField = object.field("keyPrefix")
        let timeoutField = object.field("timeoutMilliseconds")
        guard let redisField else {
            for field in [prefixField, timeoutField].compactMap({ $0 }) {
                report("only with \"redis\" (the shared store)", at: field)
            }
            return nil
        }
        let endpoint = parsed(redisField) { text throws(InvalidValue) -> RedisEndpoint in
            do throws(RedisURLError) {
                return try RedisEndpoint(parsing: text)
            } catch {
                throw InvalidValue(error.description)
            }
        }
        var config = endpoint.map { RedisStoreConfig(endpoint: $0) }
        if let prefixField {
            if let prefix = nonEmptyString(prefixField) {
                if prefix.utf8.count > 100 || !prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
                    report("must be at most 100 printable ASCII characters without spaces", at: prefixField)
                    config = nil
                } else {
                    config?.keyPrefix = prefix
                }
            } else {
                config = nil
            }
        }
        if let timeoutField {
            if let timeout = integer(timeoutField, in: 1...60_000, rangeDescription: "milliseconds from 1 to 60000") {
                config?.timeoutMilliseconds = timeout
            } else {
                config = nil
            }
        }
        return config
    }
}
