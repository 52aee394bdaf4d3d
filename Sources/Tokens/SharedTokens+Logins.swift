// A person's login shared by replicas: an interactive identity asks the IdP nothing before it
// holds a refresh token, so no fetch would ever read the shared entry for it. Each replica reads
// it when the identity starts, and again whenever another replica writes that entry (the
// entries' channel says so), so a person logged in through one replica is logged in on all,
// started before or after. At start the link is usually still connecting: the first read waits
// for it at most the store's timeout, then the identity starts without (like a Redis outage).
//
// A logout through one replica removes the entry and says so on the channel (a message of its
// own: reading a missing entry takes nothing away), so every other replica forgets the login at
// once rather than serving its tokens until they expire (SharedRemovalNotice; the same goes for
// a client's token). A removal right after start (`oauth-relay
// logout` without a running relay) waits for the link like a first read; one that cannot be sent
// or answered is reported to the logout, which tells the operator that the replicas keep it.

import EventLoop
import OAuth2
import TokenStore

/// Runs on the token loop only.
final class SharedLoginReads {
    typealias Found = (StoredToken?) -> Void

    private unowned let shared: SharedTokens
    private let loop: EventLoop
    private let waitMilliseconds: UInt64
    /// First reads waiting for the link to come up.
    private var waiting: [(tokens: IdentityTokens, found: Found)] = []
    private var deadline: LoopTimer?
    /// The interactive identities in force, by their entry's key: read again when it is written.
    private var watched: [[UInt8]: (tokens: IdentityTokens, found: Found)] = [:]
    /// Removals waiting for the link's first connection.
    private var removals: [(keys: SharedEntryKeys, done: (SharedStoreRemoval) -> Void)] = []

    init(shared: SharedTokens, loop: EventLoop, waitMilliseconds: UInt64) {
        self.shared = shared
        self.loop = loop
        self.waitMilliseconds = waitMilliseconds
    }

    /// Reads the shared entry of `tokens` now and after each write of it by another replica;
    /// `found` gets it (nil: none, unreadable, or Redis did not answer in time).
    func watch(_ tokens: IdentityTokens, found: @escaping Found) {
        // One watch per identity: one under keys of its earlier settings (before an `auto`
        // identity learnt another client) would read and forget for the old entry.
        forget(slot: tokens.slot)
        watched[keys(of: tokens).entry] = (tokens, found)
        guard !shared.link.isReady else { return send(tokens, found) }
        waiting.append((tokens, found))
        armDeadline()
    }

    /// Gives whatever waits for the link's first connection `waitMilliseconds` from now.
    private func armDeadline() {
        let timer = deadline ?? LoopTimer(loop: loop) { [unowned self] in giveUp() }
        deadline = timer
        timer.start(afterMilliseconds: waitMilliseconds)
    }

    /// A reload retired the identity.
    func forget(slot: Int) {
        watched = watched.filter { $0.value.tokens.slot != slot }
    }

    /// An entry was written (a message on the entries' channel).
    func entryWritten(_ key: [UInt8]) {
        guard let (tokens, found) = watched[key] else { return }
        send(tokens, found)
    }

    /// The interactive identity in force whose shared entry is `entry`.
    func watchedIdentity(entry: [UInt8]) -> IdentityTokens? {
        watched[entry]?.tokens
    }

    /// Removes the shared entry of `tokens` and tells the replicas; `done` hears whether it went.
    func remove(_ tokens: IdentityTokens, done: @escaping (SharedStoreRemoval) -> Void) {
        let keys = keys(of: tokens)
        switch shared.link.health.link {
        case .ready:
            sendRemoval(keys, done)
        case .opening:
            removals.append((keys, done))
            armDeadline()
        case .down:
            shared.count("skipped")
            done(.failed(reason: "Redis is unavailable"))
        }
    }

    func linkReady() {
        let ready = waiting
        let removing = removals
        waiting.removeAll()
        removals.removeAll()
        deadline?.stop()
        for (tokens, found) in ready { send(tokens, found) }
        for (keys, done) in removing { sendRemoval(keys, done) }
    }

    /// Redis is not there: each identity waiting for its first read starts with what this
    /// replica has; each removal waiting for it did not happen.
    func giveUp() {
        let given = waiting
        let removing = removals
        waiting.removeAll()
        removals.removeAll()
        deadline?.stop()
        for (_, found) in given { found(nil) }
        for (_, done) in removing {
            shared.count("skipped")
            done(.failed(reason: "Redis did not become reachable within \(waitMilliseconds) ms"))
        }
    }

    func close() {
        giveUp()
        watched.removeAll()
        deadline?.close()
        deadline = nil
    }

    private func keys(of tokens: IdentityTokens) -> SharedEntryKeys {
        SharedEntryKeys(prefix: shared.settings.keyPrefix, identity: tokens.identity.name, fingerprint: SettingsFingerprint(tokens.identity),
                        hashTagged: shared.settings.topology.isCluster)
    }

    private func send(_ tokens: IdentityTokens, _ found: @escaping Found) {
        let fingerprint = SettingsFingerprint(tokens.identity)
        let storeKeys = shared.settings.keys
        let sent = shared.link.send(SharedEntryCommands.read(keys(of: tokens))) { result in
            guard case .success(let reply) = result, let read = SharedEntryRead(reply), let bytes = read.entry else { return found(nil) }
            found(try? StoreEntry.decode(bytes, identity: tokens.identity.name, fingerprint: fingerprint, keys: storeKeys.snapshot))
        }
        if !sent { found(nil) }
    }

    private func sendRemoval(_ keys: SharedEntryKeys, _ done: @escaping (SharedStoreRemoval) -> Void) {
        let sent = shared.link.send(SharedEntryCommands.remove(keys, by: shared.holder)) { [unowned shared] result in
            if shared.answer(result, { $0.integer }) != nil { return done(.removed) }
            switch result {
            case .success(.error(let text)): done(.failed(reason: "Redis refused it: \(text)"))
            case .success: done(.failed(reason: "Redis answered something else than a count"))
            case .failure(let failure): done(.failed(reason: "Redis: \(failure)"))
            }
        }
        if !sent {
            shared.count("skipped")
            done(.failed(reason: "Redis is unavailable"))
        }
    }
}
