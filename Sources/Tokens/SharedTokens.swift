// SharedTokens: the token loop's side of the shared token store in Redis (`store.redis`), so that
// replicas of a service make one IdP call per refresh for the whole fleet and never burn each
// other's rotated refresh tokens. Only the token loop calls it; no request path touches Redis.
//
// Each identity's fetch follows SharedFetch (the steps and their order are drawn there): read
// the shared entry, take the lease if it is still needed, fetch and write (compare-and-set), or
// wait for the holder's message. The entry is TokenStore's encrypted format under the store's
// key, so Redis never sees a token; it names the identity and its settings (SharedEntryKeys).
//
// Degraded mode: whenever Redis cannot answer (down, slower than `timeoutMilliseconds`, refusing
// commands), a fetch goes on alone exactly as without Redis (the file store's lock when there is
// one, else straight to the IdP), counted as `skipped`; RedisLink logs once per outage and
// reconnects. No request waits for Redis beyond the first connection at start-up (bounded by
// the timeout) and, while another replica holds the lease, that replica's fetch.
//
// With `store.path` as well, Redis comes first: the file store is this machine's cache, written
// with every token obtained or taken from Redis, and read (under its lock) only when a fetch
// goes alone.

import Crypto
import EventLoop
import FoundationEssentials
import Logging
import OAuth2
import RedisClient
import RedisProtocol
import SafeText
import TLS
import TokenStore

/// The shared store's settings: `store.redis`, `store.keyPrefix`, `store.timeoutMilliseconds`
/// and the store's keys: entries are written with the key in force and read with it or a key it
/// replaced (a rotated `store.keyFile`, StoreKeys), so a rotation needs no restart.
public struct SharedStoreSettings: Sendable {
    public var topology: RedisTopology
    public var keyPrefix: String
    public var timeoutMilliseconds: UInt64
    public var keys: StoreKeys
    /// The connections' TLS (`store.tls`), for a `rediss://` endpoint; nil for plain TCP.
    public var tls: TLSConfiguration?
    /// `store.passwordFile`: read again at each connection; `endpoint` holds its content at load.
    public var passwordFile: String?

    public init(topology: RedisTopology, keyPrefix: String, timeoutMilliseconds: UInt64, keys: StoreKeys,
                tls: TLSConfiguration? = nil, passwordFile: String? = nil) {
        self.topology = topology
        self.keyPrefix = keyPrefix
        self.timeoutMilliseconds = timeoutMilliseconds
        self.keys = keys
        self.tls = tls
        self.passwordFile = passwordFile
    }

    public init(endpoint: RedisEndpoint, keyPrefix: String, timeoutMilliseconds: UInt64, keys: StoreKeys,
                tls: TLSConfiguration? = nil) {
        self.init(topology: .server(endpoint), keyPrefix: keyPrefix, timeoutMilliseconds: timeoutMilliseconds, keys: keys, tls: tls)
    }

    public init(endpoint: RedisEndpoint, keyPrefix: String, timeoutMilliseconds: UInt64, key: SymmetricKey,
                tls: TLSConfiguration? = nil) {
        self.init(endpoint: endpoint, keyPrefix: keyPrefix, timeoutMilliseconds: timeoutMilliseconds, keys: StoreKeys(key), tls: tls)
    }
}

/// What SharedTokens needs of the token loop (TokenFetcher).
protocol SharedTokensDriver: AnyObject {
    /// Redis cannot help: fetch as if there were none.
    func fetchLocally(_ request: TokenRequest, for tokens: IdentityTokens)
    /// This replica holds the lease: send the token request.
    func send(_ request: TokenRequest, for tokens: IdentityTokens)
    /// A shared entry was read: the lifecycle takes what is newer and says what is left to do.
    func sharedEntryRead(_ token: AccessToken?, refreshToken: Secret?, for tokens: IdentityTokens) -> TokenLifecycle.StoredEntryOutcome
    /// The fetch ended without a token request.
    func fetchSatisfied(_ tokens: IdentityTokens)
    /// Another replica logged the identity out (SharedRemovalNotice): forget its tokens here.
    func sharedLoginRemoved(_ tokens: IdentityTokens)
}

/// Runs on the token loop only.
final class SharedTokens {
    let settings: SharedStoreSettings
    let loop: EventLoop
    let link: RedisLink
    let logger: Logger
    private let observer: (any TokenObserver)?
    private unowned let driver: any SharedTokensDriver
    /// This replica's lease id: random, so that only the holder renews or releases its lease
    /// (and a replica knows its own removals, SharedTokens+Logins.swift).
    let holder = randomHex()
    private var entries: [Int: SharedEntry] = [:]
    /// Pings Redis while a fetch waits for another replica's lease: a Redis that hangs then is
    /// noticed within a second (and the waiters go alone), not at the lease's expiry.
    private var heartbeat: LoopTimer?
    private var heartbeatRunning = false
    static let heartbeatMilliseconds: UInt64 = 1000
    /// Writes and releases under way (stopping waits for them).
    private var pendingCommands = 0
    private(set) var stopping = false
    /// Logins read at start (SharedTokens+Logins.swift).
    lazy var loginReads = SharedLoginReads(shared: self, loop: loop, waitMilliseconds: settings.timeoutMilliseconds)
    /// Per-caller identities' tokens (SharedCallerTokens.swift).
    lazy var callers = SharedCallerTokens(shared: self)

    init(settings: SharedStoreSettings, loop: EventLoop, logger: Logger, observer: (any TokenObserver)?, driver: any SharedTokensDriver) {
        self.settings = settings
        self.loop = loop
        self.logger = logger
        self.observer = observer
        self.driver = driver
        link = RedisLink(loop: loop, topology: settings.topology, timeoutMilliseconds: settings.timeoutMilliseconds, tls: settings.tls,
                         channel: SharedEntryKeys.channel(prefix: settings.keyPrefix), logger: logger,
                         passwordFile: settings.passwordFile.flatMap { path in
                             settings.topology.password.map { RedisPasswordFile(path: path, loaded: $0) }
                         })
        link.onReady = { [unowned self] in
            each { $0.fetch.linkReady() }
            // After the logins' removals waiting for the link: a callers' generation read then
            // finds what a logout left.
            loginReads.linkReady()
            callers.linkReady()
        }
        link.onLost = { [unowned self] in
            each { $0.fetch.linkLost() }
            loginReads.giveUp()
            callers.linkLost()
        }
        link.onMessage = { [unowned self] key in
            if let removed = identityToForget(message: key) {
                callers.removed(removed, byAnotherReplica: true)
                // `self.driver`, the unowned property: a bare `driver` in this initialiser is its
                // parameter, captured strongly, and the driver (SharedStoreFetch) holds this
                // SharedTokens: the cycle kept the token loop's objects alive after it stopped.
                return self.driver.sharedLoginRemoved(removed)
            }
            each(where: { $0.keys.entry == key }) { $0.fetch.messageHeard() }
            loginReads.entryWritten(key)
            callers.messageHeard(key)
        }
        link.start()
    }

    /// One identity's shared entry and where its fetch stands.
    private final class SharedEntry {
        let tokens: IdentityTokens
        let keys: SharedEntryKeys
        let fingerprint: SettingsFingerprint
        var fetch = SharedFetch()
        /// The token request the lifecycle wants sent now.
        var request: TokenRequest?
        var leaseMilliseconds: Int64 = 0
        var leaseTimer: LoopTimer?
        /// A reload retired the identity: forgotten once its fetch is over.
        var retired = false
        /// An unreadable entry was logged (once until one reads again).
        var warnedUnreadable = false

        init(tokens: IdentityTokens, settings: SharedStoreSettings) {
            self.tokens = tokens
            fingerprint = SettingsFingerprint(tokens.identity)
            keys = SharedEntryKeys(prefix: settings.keyPrefix, identity: tokens.identity.name, fingerprint: fingerprint,
                                   hashTagged: settings.topology.isCluster)
        }
    }

    // MARK: - What the token loop tells

    /// The lifecycle of `tokens` started a fetch that would send `request`; the lease, if
    /// taken, lasts `leaseMilliseconds` (LeaseDuration). `retired`: a reload retired the identity.
    func fetchDue(_ tokens: IdentityTokens, request: TokenRequest, retired: Bool, leaseMilliseconds: Int64) {
        let entry = entries[tokens.slot] ?? SharedEntry(tokens: tokens, settings: settings)
        // A retired identity still fetches for the requests that wait for it; then it goes again.
        entry.retired = retired
        entries[tokens.slot] = entry
        entry.request = request
        entry.leaseMilliseconds = leaseMilliseconds
        run(entry.fetch.begin(link: link.health.link), for: entry)
    }

    /// The token request of `tokens` ended; `held` is what its lifecycle holds now (its token,
    /// refresh token, and who logged in).
    func fetchEnded(_ tokens: IdentityTokens, obtained: Bool, refreshTokenDropped: Bool, held: HeldTokens) {
        guard let entry = entries[tokens.slot] else { return }
        switch entry.fetch.fetchEnded(obtained: obtained, refreshTokenDropped: refreshTokenDropped, linkReady: link.isReady) {
        case .write: write(held, for: entry, expected: entry.fetch.knownVersion)
        case .release: release(entry)
        case .reassert: reassert(entry)
        default: break
        }
        settle(entry)
        stopIfDone()
    }

    /// `DELETE /identities/NAME/token`: the shared entry goes too, for every replica
    /// (SharedTokens+Logins.swift); `done` hears whether it went.
    /// A per-caller identity's callers go with it (SharedCallerTokens.swift).
    func remove(_ tokens: IdentityTokens, done: @escaping (SharedStoreRemoval) -> Void) {
        loginReads.remove(tokens, done: done)
        callers.removed(tokens, byAnotherReplica: false)
    }

    /// The identity of `slot` has other settings (an `auto` identity learnt or lost its client, or
    /// a step-up widened its scope): its entry's keys name the old settings' fingerprint, so it is
    /// forgotten once its fetch is over (the next fetch makes the entry of the new settings), and
    /// its login is no longer watched under the old keys (the next `watch` uses the new ones).
    func settingsChanged(slot: Int) {
        loginReads.forget(slot: slot)
        guard let entry = entries[slot] else { return }
        entry.retired = true
        settle(entry)
    }

    /// A reload retired the slot: forget it once its fetch is over.
    func forget(slot: Int) {
        loginReads.forget(slot: slot)
        callers.retire(slot: slot)
        guard let entry = entries[slot] else { return }
        entry.retired = true
        settle(entry)
    }

    /// The identity in force that another replica's logout (a removal on the channel) names:
    /// a person's login (watched by SharedLoginReads) or any other identity fetching through
    /// this store.
    private func identityToForget(message: [UInt8]) -> IdentityTokens? {
        guard !stopping else { return nil }
        return SharedRemovalNotice.identityToForget(message: message, holder: holder) { entry in
            loginReads.watchedIdentity(entry: entry)
                ?? entries.values.first(where: { $0.keys.entry == entry && !$0.retired })?.tokens
                ?? callers.identity(entry: entry)
        }
    }

    func holdsLease(slot: Int) -> Bool {
        entries[slot]?.fetch.holdsLease ?? false
    }

    /// Stops: fetches waiting on Redis are dropped; a holder's request is let finish (as with the
    /// file store's lock) and its write sent, then the connections close.
    func stop() {
        stopping = true
        for entry in entries.values { entry.leaseTimer?.close() }
        heartbeat?.close()
        heartbeat = nil
        loginReads.close()
        callers.stop()
        stopIfDone()
    }

    private func stopIfDone() {
        guard stopping, pendingCommands == 0, !entries.values.contains(where: { $0.fetch.holdsLease }) else { return }
        link.stop()
    }

    // MARK: - Steps

    private func each(where include: (SharedEntry) -> Bool = { _ in true }, _ event: (SharedEntry) -> SharedFetch.Step) {
        // A step may start another fetch (and add an entry): go over a copy.
        for entry in Array(entries.values) where include(entry) { run(event(entry), for: entry) }
    }

    private func run(_ step: SharedFetch.Step, for entry: SharedEntry) {
        guard !stopping else { return }
        switch step {
        case .read:
            read(entry)
        case .acquire:
            acquire(entry, ifUnchanged: nil)
        case .acquireIfUnchanged(let version):
            acquire(entry, ifUnchanged: version)
        case .fetch:
            if let request = entry.request { driver.send(request, for: entry.tokens) }
        case .alone:
            count("skipped")
            if let request = entry.request { driver.fetchLocally(request, for: entry.tokens) }
        case .done(let releasing):
            if releasing { release(entry) }
            driver.fetchSatisfied(entry.tokens)
        case .wait(let until):
            waitForLease(entry, until: until)
        case .release:
            release(entry)
        case .reassert:
            reassert(entry)
        case .write, .nothing:
            break
        }
        settle(entry)
    }

    private func read(_ entry: SharedEntry) {
        let sent = link.send(SharedEntryCommands.read(entry.keys)) { [unowned self] result in
            guard !stopping else { return }
            guard let read = answer(result, SharedEntryRead.init) else { return run(entry.fetch.operationFailed(), for: entry) }
            let satisfied = offer(read, to: entry)
            run(entry.fetch.readDone(satisfied: satisfied), for: entry)
        }
        if !sent { run(entry.fetch.operationFailed(), for: entry) }
    }

    /// Counted with the writes and releases: stopping waits for its answer, so that a lease it
    /// grants then is given back rather than left to expire while other replicas wait for it.
    private func acquire(_ entry: SharedEntry, ifUnchanged version: EntryVersion?) {
        let command = SharedEntryCommands.acquire(entry.keys, holder: holder, leaseMilliseconds: entry.leaseMilliseconds,
                                                  ifUnchanged: version)
        pendingCommands += 1
        let sent = link.send(command) { [unowned self] result in
            pendingCommands -= 1
            let lease = answer(result, LeaseAnswer.init)
            if stopping {
                if lease?.took == true { release(entry) }
                return stopIfDone()
            }
            guard let lease else { return run(entry.fetch.operationFailed(), for: entry) }
            let satisfied = offer(lease.read, to: entry)
            run(entry.fetch.acquireDone(lease: lease.lease, remainingMilliseconds: lease.remainingMilliseconds,
                                        satisfied: satisfied, now: monotonicSeconds()), for: entry)
        }
        if !sent {
            pendingCommands -= 1
            run(entry.fetch.operationFailed(), for: entry)
        }
    }

    /// Gives the lifecycle what the entry holds; true when no token request is needed now.
    private func offer(_ read: SharedEntryRead, to entry: SharedEntry) -> Bool {
        let trusted = entry.fetch.entryRead(version: read.version)
        var stored: StoredToken?
        if let bytes = read.entry {
            do throws(StoreEntry.ReadFailure) {
                stored = try StoreEntry.decode(bytes, identity: entry.tokens.identity.name, fingerprint: entry.fingerprint,
                                               keys: settings.keys.snapshot)
                entry.warnedUnreadable = false
            } catch {
                if !entry.warnedUnreadable {
                    entry.warnedUnreadable = true
                    let reason = error == .otherKey ? "written with a store key this replica does not hold: the replicas' keys differ "
                        + "(or another replica took up a rotated store key file first)" : error.description
                    logger.warning("shared token store entry unreadable; it is replaced by the next token obtained",
                                   metadata: ["identity": .string(entry.tokens.identity.name), "reason": .string(reason)])
                }
            }
        }
        let token = stored?.access.map { StoredTokenClock.accessToken($0, identity: entry.tokens.identity) }
        switch driver.sharedEntryRead(token, refreshToken: trusted ? stored?.refreshToken : nil, for: entry.tokens) {
        case .fetch(let request):
            entry.request = request
            return false
        case .satisfied:
            return true
        }
    }

    private func waitForLease(_ entry: SharedEntry, until: Double) {
        let timer = entry.leaseTimer ?? LoopTimer(loop: loop) { [unowned self, unowned entry] in
            run(entry.fetch.leaseTimerFired(now: monotonicSeconds()), for: entry)
        }
        entry.leaseTimer = timer
        timer.start(afterMilliseconds: UInt64(max(0, (until - monotonicSeconds()) * 1000).rounded(.up)))
        keepBeatingWhileWaiting()
    }

    /// Starts the heartbeat, unless it runs: a fetch (or a caller's flight) waits for a lease.
    func keepBeatingWhileWaiting() {
        guard !heartbeatRunning, !stopping else { return }
        let beat = heartbeat ?? LoopTimer(loop: loop) { [unowned self] in beatWhileWaiting() }
        heartbeat = beat
        heartbeatRunning = true
        beat.start(afterMilliseconds: Self.heartbeatMilliseconds, repeatMilliseconds: Self.heartbeatMilliseconds)
    }

    private func beatWhileWaiting() {
        guard entries.values.contains(where: { $0.fetch.isWaiting }) || callers.isWaiting else {
            heartbeat?.stop()
            heartbeatRunning = false
            return
        }
        // A timeout ends the link (RedisLink), which sends every waiter on alone.
        _ = link.send(SharedEntryCommands.ping) { _ in }
    }

    /// Writes again what this replica holds and Redis may lack (SharedFetch, "Writing them
    /// again"): tokens obtained while Redis was unavailable, or a write a failover may have lost.
    private func reassert(_ entry: SharedEntry) {
        let held = entry.tokens.update { HeldTokens($0) }
        guard held.token != nil || held.refreshToken != nil else { return }
        logger.info("shared token store: writing tokens this replica obtained while the store could not take them",
                    metadata: ["identity": .string(entry.tokens.identity.name)])
        write(held, for: entry, expected: entry.fetch.reassertExpected)
    }

    /// Stores what the holder obtained (or a reassert), if the entry is still `expected`. With
    /// Sentinel the write stays `unreplicated` until a read shows it survived (SharedFetch), and
    /// is written again when the link comes back (after a failover).
    private func write(_ held: HeldTokens, for entry: SharedEntry, expected: EntryVersion) {
        let stored = StoredTokenClock.stored(held)
        let bytes: [UInt8]
        do {
            bytes = try StoreEntry.encode(stored, identity: entry.tokens.identity.name, fingerprint: entry.fingerprint,
                                          key: settings.keys.current)
        } catch {
            logger.warning("shared token store write failed", metadata: ["identity": .string(entry.tokens.identity.name),
                                                                        "error": .string(error.description)])
            entry.fetch.writeFailed()
            return release(entry)
        }
        let version = randomHex()
        let command = SharedEntryCommands.write(entry.keys, expected: expected, version: version, entry: bytes,
                                                ttlMilliseconds: SharedEntryCommands.ttlMilliseconds(stored, now: Date().timeIntervalSince1970),
                                                holder: holder)
        pendingCommands += 1
        let sent = link.send(command) { [unowned self] result in
            pendingCommands -= 1
            let written = answer(result, WriteAnswer.init) { if case .stored = $0 { "ok" } else { "conflict" } }
            switch written {
            case .stored(let version):
                guard case .sentinel = settings.topology else {
                    entry.fetch.written(version: version, over: expected)
                    break
                }
                entry.fetch.written(version: version, over: expected, replicated: false)
                waitForReplica()
            case .conflict(let current):
                // A write written again may find itself (it survived the failover) or the version
                // it replaced (then it goes again over that one, SharedFetch).
                let itself = EntryVersion(current) == entry.fetch.knownVersion
                let next = entry.fetch.writeConflicted(current: current)
                if next == .nothing && !itself {
                    // Another replica's newer entry stays; the next read takes it.
                    logger.info("shared token store: another replica wrote first; its entry stays",
                                metadata: ["identity": .string(entry.tokens.identity.name)])
                }
                run(next, for: entry)
            case nil:
                switch result {
                case .failure(.timedOut), .failure(.closed):
                    // Sent but no answer (a timeout, a reset, a failover): the server may have
                    // stored it, as a write no replica confirmed (SharedFetch, `unreplicated`).
                    entry.fetch.writeUnanswered(version: version, over: expected)
                default:
                    // An error reply (READONLY, ...) or none sent: not stored.
                    entry.fetch.writeFailed()
                }
            }
            stopIfDone()
        }
        if !sent {
            pendingCommands -= 1
            entry.fetch.writeFailed()
            count("skipped")
        }
    }

    /// `WAIT 1` after a write: its `UNBLOCKED` answer tells RedisLink at once that the master
    /// was demoted (a failover under way). Its count decides nothing: a replica having the
    /// write is no proof that the one promoted has it, so the write stays `unreplicated` until
    /// a read shows what the master holds (SharedFetch.written).
    private func waitForReplica() {
        pendingCommands += 1
        let sent = link.send(SharedEntryCommands.waitForReplica(timeoutMilliseconds: settings.timeoutMilliseconds)) { [unowned self] _ in
            pendingCommands -= 1
            stopIfDone()
        }
        if !sent { pendingCommands -= 1 }
    }

    private func release(_ entry: SharedEntry) {
        sendRelease(entry.keys)
    }

    /// Gives this replica's lease on `keys` back (if it still holds it).
    func sendRelease(_ keys: SharedEntryKeys) {
        _ = sendCounted(SharedEntryCommands.release(keys, holder: holder)) { [unowned self] result in
            _ = answer(result) { $0.integer }
        }
    }

    /// Sends a command that stopping waits for (a lease asked for, a write, a release): the link
    /// closes only once every such answer is in. False when not sent (`answered` is not called).
    func sendCounted(_ command: RedisCommand, answered: @escaping (Result<RedisReply, RedisConnection.Failure>) -> Void) -> Bool {
        pendingCommands += 1
        let sent = link.send(command) { [unowned self] result in
            pendingCommands -= 1
            answered(result)
            stopIfDone()
        }
        if !sent { pendingCommands -= 1 }
        return sent
    }

    /// Forgets a retired entry whose fetch is over.
    private func settle(_ entry: SharedEntry) {
        guard entry.retired, entry.fetch.phase == .idle || entry.fetch.phase == .alone else { return }
        entry.leaseTimer?.close()
        if entries[entry.tokens.slot] === entry { entries[entry.tokens.slot] = nil }
    }

    // MARK: - Answers and counts

    /// The parsed reply, counted: `outcome(value)` (`ok`), or `failed` (an error reply, an
    /// answer of the wrong shape, a lost connection), or `timed_out`.
    func answer<Value>(_ result: Result<RedisReply, RedisConnection.Failure>, _ parse: (RedisReply) -> Value?,
                               outcome: (Value) -> String = { _ in "ok" }) -> Value? {
        switch result {
        case .success(.error):
            break
        case .success(let reply):
            guard let value = parse(reply) else { break }
            count(outcome(value))
            return value
        case .failure(.timedOut):
            count("timed_out")
            return nil
        case .failure:
            break
        }
        count("failed")
        return nil
    }

    func count(_ outcome: String) {
        observer?.storeOperation(backend: "redis", outcome: outcome)
    }
}

/// 16 random hex digits: lease holders, entry versions and (two of them) callers' generations.
func randomHex() -> String {
    var random = SystemRandomNumberGenerator()
    let value = random.next() as UInt64
    let hex = String(value, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}
