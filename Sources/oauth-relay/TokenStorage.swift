import ArgumentParser
import Config
import FoundationEssentials
import Logging
import Tokens
import TokenStore

/// Where the token thread keeps tokens: the directory store, the Redis shared by replicas, and
/// the keys both encrypt with (one `StoreKeys`, which a reload rotates).
struct TokenStorage {
    var store: TokenStore?
    var shared: SharedStoreSettings?
    /// The keys of `store.key` / `store.keyFile`; nil without `store` (the default store has a key of its own).
    var keys: StoreKeys?

    /// Opens what `config` names. A store that cannot be used (a wrong key, a directory others
    /// may write to) is a start-up error naming it, never a crash.
    static func open(_ config: RelayConfig, logger: Logger) throws -> TokenStorage {
        guard let settings = config.store else { return TokenStorage(store: try openDefaultStore(config, logger: logger)) }
        let keys: StoreKeys
        do throws(StoreError) {
            keys = StoreKeys(try TokenStore.key(base64: settings.key.value))
        } catch {
            // `check` reported the key already; the words name its length only.
            FileHandleOutput.standardError("oauth-relay: \(error)\n")
            throw ExitCode(1)
        }
        var storage = TokenStorage(keys: keys)
        if let redis = settings.redis {
            storage.shared = SharedStoreSettings(topology: redis.topology, keyPrefix: redis.keyPrefix,
                                                 timeoutMilliseconds: UInt64(redis.timeoutMilliseconds), keys: keys,
                                                 passwordFile: redis.passwordFile)
        }
        if let path = settings.path {
            do throws(StoreError) {
                storage.store = try TokenStore(path: path, keys: keys)
            } catch {
                logger.critical("cannot open the token store", metadata: ["store": .string(path), "error": .string("\(error)")])
                FileHandleOutput.standardError("oauth-relay: cannot open the token store: \(error)\n")
                throw ExitCode(1)
            }
        }
        return storage
    }
}

/// Without `store`, a configuration with an identity a person logs in to keeps its logins in
/// the default store (`$XDG_STATE_HOME/oauth-relay`), unless it says `"store": null`. A default
/// store that cannot be used is logged and the relay runs without one: it is a convenience.
private func openDefaultStore(_ config: RelayConfig, logger: Logger) throws -> TokenStore? {
    guard config.defaultStoreAllowed, config.identities.values.contains(where: { $0.grant.isInteractive }),
          let directory = DefaultStore.directory(environment: ProcessInfo.processInfo.environment) else { return nil }
    do throws(StoreError) {
        let store = try DefaultStore.store(in: directory)
        logger.info("logins kept in the default token store", metadata: ["store": .string(directory)])
        return store
    } catch {
        logger.warning("the default token store cannot be used; logins last until the relay stops",
                       metadata: ["store": .string(directory), "error": .string("\(error)")])
        return nil
    }
}
