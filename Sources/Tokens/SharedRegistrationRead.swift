// SharedRegistrationRead: `oauth-relay check --resolve` reads the registration an `auto` identity
// keeps in Redis (`store.redis`, `PREFIX client:NAME`, RegisteredClients.swift) once, on a loop
// of its own, and writes nothing: one GET once the link is up, then the link is closed. Bounded
// by the store's timeout (twice: connecting, then the answer). Never a secret in what it says.

import EventLoop
import Logging
import OAuth2
import RedisProtocol
import TokenStore

public enum SharedRegistrationRead {
    /// What the read found.
    public enum Outcome: Sendable, Equatable {
        case found(RegisteredClient)
        /// No registration kept for the identity in Redis.
        case none
        /// One is kept, but not for this key (another issuer, callback or client authentication;
        /// another store key; damaged): why.
        case unusable(String)
        /// Redis could not be asked: why.
        case unavailable(String)
    }

    /// The registration kept in the shared store of `settings` for `key`. Blocks the calling thread.
    public static func read(_ key: RegistrationKey, settings: SharedStoreSettings) -> Outcome {
        let loop: EventLoop
        do {
            loop = try EventLoop()
        } catch {
            return .unavailable("no event loop: \(error)")
        }
        defer { try? loop.close() }
        // The link's own lines (connected, unavailable) are not the check's: its outcome says it.
        let quiet = Logger(label: "oauth-relay.check", factory: { _ in SwiftLogNoOpLogHandler() })
        let link = RedisLink(loop: loop, topology: settings.topology, timeoutMilliseconds: settings.timeoutMilliseconds, tls: settings.tls,
                             channel: SharedEntryKeys.channel(prefix: settings.keyPrefix), logger: quiet,
                             passwordFile: settings.passwordFile.flatMap { path in
                                 settings.topology.password.map { RedisPasswordFile(path: path, loaded: $0) }
                             })
        let reading = Reading(link: link)
        let deadline = LoopTimer(loop: loop) { reading.end(.unavailable("no answer within \(settings.timeoutMilliseconds * 2) ms")) }
        reading.deadline = deadline
        link.onReady = {
            let command = RedisCommand(["GET", .bytes(RegisteredClients.redisKey(prefix: settings.keyPrefix, identity: key.identity))])
            let sent = link.send(command) { result in
                switch result {
                case .success(.null):
                    reading.end(.none)
                case .success(.bulk(let bytes)):
                    do throws(ClientRecord.ReadFailure) {
                        reading.end(.found(try ClientRecord.decode(bytes, for: key, keys: settings.keys.snapshot)))
                    } catch {
                        reading.end(.unusable(error.description))
                    }
                case .success(.error(let text)):
                    reading.end(.unavailable("Redis refused the read: \(text)"))
                case .success:
                    reading.end(.unavailable("Redis answered something else than a value"))
                case .failure(let failure):
                    reading.end(.unavailable("\(failure)"))
                }
            }
            if !sent { reading.end(.unavailable("not connected")) }
        }
        link.onLost = { reading.end(.unavailable("Redis cannot be reached")) }
        deadline.start(afterMilliseconds: settings.timeoutMilliseconds * 2)
        link.start()
        loop.run()
        return reading.outcome ?? .unavailable("no answer")
    }

    /// The read under way: its outcome, once, ends the link and the deadline (and so the loop).
    private final class Reading {
        let link: RedisLink
        var deadline: LoopTimer?
        private(set) var outcome: Outcome?

        init(link: RedisLink) {
            self.link = link
        }

        func end(_ ended: Outcome) {
            guard outcome == nil else { return }
            outcome = ended
            link.stop()
            // The link's callbacks hold this reading: let go of them.
            link.onReady = {}
            link.onLost = {}
            deadline?.close()
        }
    }
}
