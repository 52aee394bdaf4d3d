// A person's login shared by replicas: an interactive identity asks the IdP nothing before it
// holds a refresh token, so no fetch would ever read the shared entry for it. Each replica reads
// it when the identity starts, and again whenever another replica writes that entry (the
// entries' channel says so), so a person logged in through one replica is logged in on all,
// started before or after. At start the link is usually still connecting: the first read waits
// for it at most the store's timeout, then the identity starts without (like a Redis outage).

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

    init(shared: SharedTokens, loop: EventLoop, waitMilliseconds: UInt64) {
        self.shared = shared
        self.loop = loop
        self.waitMilliseconds = waitMilliseconds
    }

    /// Reads the shared entry of `tokens` now and after each write of it by another replica;
    /// `found` gets it (nil: none, unreadable, or Redis did not answer in time).
    func watch(_ tokens: IdentityTokens, found: @escaping Found) {
        watched[keys(of: tokens).entry] = (tokens, found)
        guard !shared.link.isReady else { return send(tokens, found) }
        waiting.append((tokens, found))
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

    func linkReady() {
        let ready = waiting
        waiting.removeAll()
        deadline?.stop()
        for (tokens, found) in ready { send(tokens, found) }
    }

    /// Redis is not there: each identity waiting for its first read starts with what this
    /// replica has.
    func giveUp() {
        let given = waiting
        waiting.removeAll()
        deadline?.stop()
        for (_, found) in given { found(nil) }
    }

    func close() {
        giveUp()
        watched.removeAll()
        deadline?.close()
        deadline = nil
    }

    private func keys(of tokens: IdentityTokens) -> SharedEntryKeys {
        SharedEntryKeys(prefix: shared.settings.keyPrefix, identity: tokens.identity.name, fingerprint: SettingsFingerprint(tokens.identity))
    }

    private func send(_ tokens: IdentityTokens, _ found: @escaping Found) {
        let fingerprint = SettingsFingerprint(tokens.identity)
        let key = shared.settings.key
        let sent = shared.link.send(SharedEntryCommands.read(keys(of: tokens))) { result in
            guard case .success(let reply) = result, let read = SharedEntryRead(reply), let bytes = read.entry else { return found(nil) }
            found(try? StoreEntry.decode(bytes, identity: tokens.identity.name, fingerprint: fingerprint, key: key))
        }
        if !sent { found(nil) }
    }
}
