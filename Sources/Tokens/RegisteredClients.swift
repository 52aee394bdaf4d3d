// RegisteredClients: the token loop's side of the `auto` identities' kept registrations
// (TokenStore+Clients.swift): read, kept and removed in the file store, each outcome that is not
// plain logged once (a record moved aside, a store failure), never a secret. With no store, a
// registration lives as long as the process.

import Logging
import OAuth2
import TokenStore

/// Runs on the token loop only.
final class RegisteredClients {
    private let persistence: TokenPersistence?
    private let logger: Logger

    init(persistence: TokenPersistence?, logger: Logger) {
        self.persistence = persistence
        self.logger = logger
    }

    /// A store keeps logins (and registrations).
    var hasStore: Bool { persistence != nil }

    /// The registration kept for `key`, nil when none (or none usable).
    func read(_ key: RegistrationKey, completion: @escaping (RegisteredClient?) -> Void) {
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

    /// Keeps `client` for `key`. A failure is logged: the client is used, only not kept.
    func write(_ client: RegisteredClient, for key: RegistrationKey) {
        guard let store = persistence?.store else { return }
        do {
            try store.writeClient(client, for: key)
        } catch {
            logger.warning("registered client write failed", metadata: ["identity": .string(key.identity), "error": .string("\(error)")])
        }
    }

    /// Removes the registration kept for `identity`.
    func remove(identity: String) {
        guard let store = persistence?.store else { return }
        do {
            try store.removeClient(identity: identity)
        } catch {
            logger.warning("registered client removal failed", metadata: ["identity": .string(identity), "error": .string("\(error)")])
        }
    }

    /// The identity learnt another client: its entry's settings changed.
    func settingsChanged(_ tokens: IdentityTokens) {
        persistence?.settingsChanged(slot: tokens.slot)
    }
}
