// A person's login shared by replicas: an interactive identity asks the IdP nothing before it
// holds a refresh token, so no fetch would ever read the shared entry for it. Each replica reads
// it once when the identity starts (and Redis answers), so a person logged in through one
// replica is logged in on all. At start the link is usually still connecting: the read waits for
// it at most the store's timeout, then the identity starts without (like a Redis outage).

import EventLoop
import OAuth2
import TokenStore

/// Runs on the token loop only.
final class SharedLoginReads {
    private unowned let shared: SharedTokens
    private let loop: EventLoop
    private let waitMilliseconds: UInt64
    private var waiting: [(tokens: IdentityTokens, found: (StoredToken?) -> Void)] = []
    private var deadline: LoopTimer?

    init(shared: SharedTokens, loop: EventLoop, waitMilliseconds: UInt64) {
        self.shared = shared
        self.loop = loop
        self.waitMilliseconds = waitMilliseconds
    }

    /// Reads the shared entry of `tokens`; `found` gets it (nil: none, unreadable, or Redis
    /// did not answer in time).
    func read(_ tokens: IdentityTokens, found: @escaping (StoredToken?) -> Void) {
        guard !shared.link.isReady else { return send(tokens, found) }
        waiting.append((tokens, found))
        let timer = deadline ?? LoopTimer(loop: loop) { [unowned self] in giveUp() }
        deadline = timer
        timer.start(afterMilliseconds: waitMilliseconds)
    }

    func linkReady() {
        let ready = waiting
        waiting.removeAll()
        deadline?.stop()
        for (tokens, found) in ready { send(tokens, found) }
    }

    /// Redis is not there: each identity starts with what this replica has.
    func giveUp() {
        let given = waiting
        waiting.removeAll()
        deadline?.stop()
        for (_, found) in given { found(nil) }
    }

    func close() {
        giveUp()
        deadline?.close()
        deadline = nil
    }

    private func send(_ tokens: IdentityTokens, _ found: @escaping (StoredToken?) -> Void) {
        let fingerprint = SettingsFingerprint(tokens.identity)
        let keys = SharedEntryKeys(prefix: shared.settings.keyPrefix, identity: tokens.identity.name, fingerprint: fingerprint)
        let key = shared.settings.key
        let sent = shared.link.send(SharedEntryCommands.read(keys)) { result in
            guard case .success(let reply) = result, let read = SharedEntryRead(reply), let bytes = read.entry else { return found(nil) }
            found(try? StoreEntry.decode(bytes, identity: tokens.identity.name, fingerprint: fingerprint, key: key))
        }
        if !sent { found(nil) }
    }
}
