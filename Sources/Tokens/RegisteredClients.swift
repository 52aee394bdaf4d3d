// RegisteredClients: the token loop's side of the `auto` identities' kept registrations: in the
// file store (TokenStore+Clients.swift) and, with `store.redis`, in Redis as well, under
// `PREFIX client:NAME` (the same sealed record, ClientRecord.swift: Redis never sees a secret), so
// that replicas share one registration. Read from Redis first, then from the file store; written
// to and removed from both. Each outcome that is not plain is logged once (a record moved aside, a
// store failure), never a secret. With no store, a registration lives as long as the process.

import Logging
import OAuth2
import RedisProtocol
import TokenStore

/// Runs on the token loop only.
final class RegisteredClients {
    private let persistence: TokenPersistence?
    /// The replicas' shared store, when configured.
    private let shared: () -> SharedTokens?
    private let logger: Logger

    init(persistence: TokenPersistence?, shared: @escaping () -> SharedTokens? = { nil }, logger: Logger) {
        self.persistence = persistence
        self.shared = shared
        self.logger = logger
    }

    /// A store keeps logins (and registrations).
    var hasStore: Bool { persistence != nil || shared() != nil }

    /// Where `identity`'s registration is in Redis.
    static func redisKey(prefix: String, identity: String) -> [UInt8] {
        Array((prefix + "client:" + identity).utf8)
    }

    /// The registration kept for `key`, nil when none (or none usable): Redis's, else the file store's.
    func read(_ key: RegistrationKey, completion: @escaping (RegisteredClient?) -> Void) {
        guard let shared = shared() else { return readFile(key, completion: completion) }
        let command = RedisCommand(["GET", .bytes(Self.redisKey(prefix: shared.settings.keyPrefix, identity: key.identity))])
        let sent = shared.link.send(command) { [self] result in
            if case .success(.bulk(let bytes)) = result {
                do throws(ClientRecord.ReadFailure) {
                    return completion(try ClientRecord.decode(bytes, for: key, keys: shared.settings.keys.snapshot))
                } catch {
                    logger.info("registered client in the shared store not used", metadata: [
                        "identity": .string(key.identity), "reason": .string(error.description),
                    ])
                }
            } else if case .success(.null) = result {
                // None shared: the file store's, if any.
            } else {
                logger.warning("registered client read from the shared store failed", metadata: ["identity": .string(key.identity)])
            }
            readFile(key, completion: completion)
        }
        if !sent { readFile(key, completion: completion) }
    }

    private func readFile(_ key: RegistrationKey, completion: @escaping (RegisteredClient?) -> Void) {
        guard let store = persistence?.store else { return completion(nil) }
        let fields: Logger.Metadata = ["identity": .string(key.identity)]
        do {
            let read = try store.readClient(key)
            switch read {
            case .movedAside(let reason, let movedTo):
                var metadata = fields
                metadata["reason"] = .string(reason)
                metadata["moved_to"] = .string(movedTo)
                logger.warning("registered client record moved aside", metadata: metadata)
            case .otherKey:
                logger.info("registered client record is under another store key; registering anew", metadata: fields)
            case .otherRegistration:
                logger.info("registered client record is for another issuer, callback or client authentication; registering anew",
                            metadata: fields)
            case .empty, .found:
                break
            }
            completion(read.client)
        } catch {
            var metadata = fields
            metadata["error"] = .string("\(error)")
            logger.warning("registered client read failed", metadata: metadata)
            completion(nil)
        }
    }

    /// The registration kept for `identity`, whatever its key; nil when none (or none usable).
    func readKept(identity: String) -> RegisteredClient? {
        guard let store = persistence?.store else { return nil }
        do {
            return try store.readClient(identity: identity)?.1
        } catch {
            logger.warning("registered client read failed", metadata: ["identity": .string(identity), "error": .string("\(error)")])
            return nil
        }
    }

    /// Keeps `client` for `key` in both stores. A failure is logged: the client is used, only not kept.
    func write(_ client: RegisteredClient, for key: RegistrationKey) {
        if let shared = shared() {
            do {
                let bytes = try ClientRecord.encode(client, for: key, key: shared.settings.keys.current)
                let command = RedisCommand(["SET", .bytes(Self.redisKey(prefix: shared.settings.keyPrefix, identity: key.identity)), .bytes(bytes)])
                let sent = shared.sendCounted(command) { [self] result in
                    if shared.answer(result, { $0.text }) == nil {
                        logger.warning("registered client write to the shared store failed", metadata: ["identity": .string(key.identity)])
                    }
                }
                if !sent { logger.warning("registered client not written to the shared store: not connected", metadata: ["identity": .string(key.identity)]) }
            } catch {
                logger.warning("registered client not sealed for the shared store", metadata: ["identity": .string(key.identity), "error": .string("\(error)")])
            }
        }
        guard let store = persistence?.store else { return }
        do {
            try store.writeClient(client, for: key)
        } catch {
            logger.warning("registered client write failed", metadata: ["identity": .string(key.identity), "error": .string("\(error)")])
        }
    }

    /// Removes the registration kept for `identity` from both stores.
    func remove(identity: String) {
        if let shared = shared() {
            let command = RedisCommand(["DEL", .bytes(Self.redisKey(prefix: shared.settings.keyPrefix, identity: identity))])
            let sent = shared.sendCounted(command) { [self] result in
                if shared.answer(result, { $0.integer }) == nil {
                    logger.warning("registered client removal from the shared store failed", metadata: ["identity": .string(identity)])
                }
            }
            if !sent { logger.warning("registered client not removed from the shared store: not connected", metadata: ["identity": .string(identity)]) }
        }
        guard let store = persistence?.store else { return }
        do {
            try store.removeClient(identity: identity)
        } catch {
            logger.warning("registered client removal failed", metadata: ["identity": .string(identity), "error": .string("\(error)")])
        }
    }

    /// Deletes `KEYS[1]` only when it still holds `ARGV[1]` (the record read): 1 when deleted.
    static let removeIfUnchangedScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """

    /// Removes the registration kept for `identity` from both stores only where it is the client
    /// `clientId` (compare and delete): a replica or process that registered anew meanwhile keeps
    /// its client.
    func remove(identity: String, clientId: String) {
        if let shared = shared() {
            let key = Self.redisKey(prefix: shared.settings.keyPrefix, identity: identity)
            let sent = shared.link.send(RedisCommand(["GET", .bytes(key)])) { [self] result in
                guard case .success(.bulk(let bytes)) = result,
                      let (_, kept) = try? ClientRecord.decode(bytes, identity: identity, keys: shared.settings.keys.snapshot),
                      kept.clientId == clientId else { return }
                let command = RedisCommand(["EVAL", .text(Self.removeIfUnchangedScript), "1", .bytes(key), .bytes(bytes)])
                let removing = shared.sendCounted(command) { [self] result in
                    if shared.answer(result, { $0.integer }) == nil {
                        logger.warning("registered client removal from the shared store failed", metadata: ["identity": .string(identity)])
                    }
                }
                if !removing {
                    logger.warning("registered client not removed from the shared store: not connected", metadata: ["identity": .string(identity)])
                }
            }
            if !sent { logger.warning("registered client not removed from the shared store: not connected", metadata: ["identity": .string(identity)]) }
        }
        guard let store = persistence?.store else { return }
        do {
            try store.removeClient(identity: identity, clientId: clientId)
        } catch {
            logger.warning("registered client removal failed", metadata: ["identity": .string(identity), "error": .string("\(error)")])
        }
    }

    /// The identity learnt another client (or lost it, or a step-up widened its scope to
    /// `identity`'s): its entry's settings changed, in the file store and in Redis (whose entry
    /// and login watch are the old settings' until then).
    func settingsChanged(_ tokens: IdentityTokens, to identity: Identity? = nil) {
        persistence?.settingsChanged(slot: tokens.slot, to: identity)
        shared()?.settingsChanged(slot: tokens.slot)
    }
}
