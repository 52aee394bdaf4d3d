import FoundationEssentials
import OAuth2
import RedisProtocol
import SafeText
import WatchedFiles

/// Reads `store`: the directory, the Redis shared by replicas and the keys that go with it, and
/// the key that encrypts the tokens (checked by its length, never shown).
struct StoreDecoding {
    let context: DecodingContext

    func decodeStore(_ field: Field) -> StoreConfig? {
        guard let object = ObjectReader(field, knownKeys: StoreConfig.knownKeys, in: context) else { return nil }
        let pathField = object.field("path")
        let path = pathField.flatMap(context.nonEmptyString).map(context.files.resolvePath)
        let redisField = object.field("redis")
        if pathField == nil && redisField == nil {
            context.report("required: \"path\" (a directory), \"redis\" (a redis:// URL shared by replicas), or both",
                           at: object.path.key("path"), offset: object.lastOffset)
        }
        let keyField = object.field("key") ?? object.field("keyFile")
        if keyField == nil {
            context.report("required: \"key\" or \"keyFile\" (32 random bytes, base64: `openssl rand -base64 32`)",
                           at: object.path.key("key"), offset: object.lastOffset)
        }
        // A new key in the file is put in force on the fly (entries under the old one stay readable).
        // Watched (its identity recorded) before it is read.
        let keyFile = object.field("keyFile").flatMap { field in context.nonEmptyString(field).map { (field, $0) } }
        if let (fileField, path) = keyFile, object.field("key") == nil, FileIdentity.observe(path: context.files.resolvePath(path)) != nil {
            context.watch(fileField, path: context.files.resolvePath(path))
        }
        let key = object.secret("key")
        if let key, let keyField {
            // Words about the key's length only: never its text.
            let bytes = Data(base64Encoded: key.value)
            if bytes == nil {
                context.report("the key is not base64 (create one with `openssl rand -base64 32`)", at: keyField)
            } else if let bytes, bytes.count != 32 {
                context.report("the key decodes to \(bytes.count) bytes, not 32 (create one with `openssl rand -base64 32`)", at: keyField)
            }
        }
        let redis = decodeRedisStore(object, redisField: redisField)
        guard pathField == nil || path != nil, redisField == nil || redis != nil, pathField != nil || redisField != nil,
              let key else { return nil }
        return StoreConfig(path: path, key: key, redis: redis)
    }

    /// `redis`, `keyPrefix`, `timeoutMilliseconds`, `tls`: the last three only beside the first.
    private func decodeRedisStore(_ object: ObjectReader, redisField: Field?) -> RedisStoreConfig? {
        let prefixField = object.field("keyPrefix")
        let timeoutField = object.field("timeoutMilliseconds")
        guard let redisField else {
            for field in [prefixField, timeoutField, object.field("tls")].compactMap({ $0 }) {
                context.report("only with \"redis\" (the shared store)", at: field)
            }
            RedisCredentialsDecoding(context: context).reportWithoutRedis(object)
            return nil
        }
        let topology = context.parsed(redisField) { text throws(InvalidValue) -> RedisTopology in
            do throws(RedisURLError) {
                return try RedisTopology(parsing: text)
            } catch {
                throw InvalidValue(error.description)
            }
        }
        var config = topology.map { RedisStoreConfig(topology: $0) }
        if let tlsField = object.field("tls") {
            // The settings and checks of a route's or an identity's `tls`; only for a TLS URL, so
            // that the URL in the logs says whether the connection is TLS.
            if let topology, !topology.usesTLS {
                context.report("tls is set but store.redis is not a TLS URL: write rediss:// (rediss-cluster://, rediss-sentinel://) for TLS", at: tlsField)
                config = nil
            }
            let settings = TLSSettingsDecoding(context: context).decodeTLS(tlsField, endpoint: nil, endpointName: "store.redis")
            if settings == nil { config = nil }
            config?.tls = settings
        }
        if let prefixField {
            if let prefix = context.nonEmptyString(prefixField) {
                if prefix.utf8.count > 100 || !prefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
                    context.report("must be at most 100 printable ASCII characters without spaces", at: prefixField)
                    config = nil
                } else if topology?.isCluster == true, prefix.contains("{") || prefix.contains("}") {
                    // The relay's keys in a cluster are hash-tagged with braces (SharedEntryKeys).
                    context.report("must not hold \"{\" or \"}\" with a redis-cluster:// store (the relay's keys use them as hash tags)",
                                   at: prefixField)
                    config = nil
                } else {
                    config?.keyPrefix = prefix
                }
            } else {
                config = nil
            }
        }
        if let timeoutField {
            if let timeout = context.integer(timeoutField, in: 1...60_000, rangeDescription: "milliseconds from 1 to 60000") {
                config?.timeoutMilliseconds = timeout
            } else {
                config = nil
            }
        }
        return RedisCredentialsDecoding(context: context).decode(object, into: config)
    }
}
