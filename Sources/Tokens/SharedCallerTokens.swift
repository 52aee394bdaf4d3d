// SharedCallerTokens: the fleet's side of per-caller tokens (an identity with `subjectTokenFrom:
// "caller"`: each caller's token exchanged, RFC 8693, for one meant for the upstream). With
// `store.redis` a caller's exchanged token is shared by the replicas like an identity's own: the
// first replica asked for a caller exchanges, the others read its result, and a caller whose
// requests reach every replica at once costs one exchange for the fleet. Only the token loop calls
// it; no request path touches Redis. The per-caller cache in memory, bounded, with its single
// flight across the workers, is the caller side's; this is asked only when that cache has no token.
//
// Each ask follows the identity's own protocol (SharedFetch, drawn there; the same scripts,
// SharedEntryCommands), one flight per caller entry:
//
//   the identity's callers' generation ──► the caller's entry name (CallerEntryName)
//   (read once, kept until a logout)           │
//                                              ▼
//   read the entry and, if there is none, take the lease (one script, one round trip)
//        │ an entry: a token still reusable for the caller (CallerEntryLife)? done; else the lease
//        ▼
//   the lease ──► taken: exchange, hand the token to every ask of the flight, then write it
//                 (compare-and-set, TTL its remaining life) and release
//             ──► another replica's: wait for its write's message (or the lease's expiry), then
//                 look again
//
// Asks for a caller whose flight is under way join it. Redis cannot help (down, slow, refusing,
// the generation unreadable): the exchange runs alone, as every shared fetch does, counted as
// `skipped`; nothing is retried or written later (a caller entry is only ever a saving).
//
// What Redis holds (SharedCallerEntries.swift): under a name derived from the caller's token with
// a key only the store key's holders have, the exchanged token in the token store's entry format
// (AES-256-GCM under the store key), bound to that name, never the caller's token nor its digest,
// never a refresh token. A logout of the identity (here, another replica, `oauth-relay logout`)
// deletes the generation with the identity's entry: every caller's entry becomes unreachable at
// once and expires by its TTL; each replica forgets the generation it knew (on the removal's
// message) and tells the caller side to drop its callers (`forgotten`).

import Crypto
import EventLoop
import FoundationEssentials
import Logging
import OAuth2
import SafeText
import TokenStore

/// Runs on the token loop only; owned by SharedTokens.
final class SharedCallerTokens {
    private unowned let shared: SharedTokens
    private var generations = CallerGenerations<CallerTokenAsk>()
    /// The per-caller identities in force asked for, by slot, and their slots by their own
    /// entry's key (a removal's message names that key; a reload that kept the identity's name
    /// and settings under a new slot shares it).
    private var identities: [Int: CallerIdentity] = [:]
    private var slotsByEntry: [[UInt8]: Set<Int>] = [:]
    /// The flights under way, by their caller entry's key.
    private var flights: [[UInt8]: Flight] = [:]
    /// Another replica (or `oauth-relay logout`) logged the identity out: the caller side drops
    /// the identity's callers from its cache. Set by the caller side (TokenFetcher+CallerTokens.swift).
    var forgotten: (IdentityTokens) -> Void = { _ in }

    init(shared: SharedTokens) {
        self.shared = shared
    }

    /// A per-caller identity: what its callers' names are derived from.
    private struct CallerIdentity {
        let tokens: IdentityTokens
        let fingerprint: SettingsFingerprint
        /// The identity's own keys: its entry (a removal names it) and its callers' generation.
        let keys: SharedEntryKeys
    }

    /// One caller's fetch through Redis, and the asks waiting for it.
    private final class Flight {
        let tokens: IdentityTokens
        let keys: SharedEntryKeys
        let name: CallerEntryName
        /// The store key the name was derived under: the entry is written with it too.
        let storeKey: SymmetricKey
        let callerExpiresAt: Double?
        /// The token an upstream refused: an entry holding it is no answer.
        let refused: Secret?
        let leaseMilliseconds: Int64
        let exchange: CallerTokenExchange
        var completions: [CallerTokenCompletion]
        var fetch = SharedFetch.expectingNoEntry
        var leaseTimer: LoopTimer?
        /// The entry's token that made the exchange needless.
        var found: StoredToken.Access?
        /// What the exchange obtained, to be written.
        var obtained: StoredToken.Access?
        /// Its asks have their answer.
        var answered = false

        init(ask: CallerTokenAsk, keys: SharedEntryKeys, name: CallerEntryName, storeKey: SymmetricKey) {
            tokens = ask.tokens
            self.keys = keys
            self.name = name
            self.storeKey = storeKey
            callerExpiresAt = ask.callerExpiresAt
            refused = ask.refused
            leaseMilliseconds = ask.leaseMilliseconds
            exchange = ask.exchange
            completions = [ask.completion]
        }
    }

    // MARK: - Asks

    /// The fleet's token for the ask's caller, or the ask's exchange (see the top of the file).
    func token(_ ask: CallerTokenAsk) {
        // Stopping: Redis is no longer waited for (and the IdP client refuses new requests).
        guard !shared.stopping else { return ask.exchange(ask.completion) }
        // A late exchange of an identity a reload retired registers nothing (its slot would stay
        // for good): it runs alone.
        guard ask.inForce else { return alone(ask) }
        let slot = ask.tokens.slot
        let identity = register(ask.tokens)
        switch generations.ask(slot: slot, waiter: ask, link: shared.link.health.link) {
        case .use(let generation): fly(ask, generation: generation, identity: identity)
        case .read(let read): readGeneration(of: identity, read: read)
        case .queued: break
        case .alone: alone(ask)
        }
    }

    private func register(_ tokens: IdentityTokens) -> CallerIdentity {
        if let known = identities[tokens.slot] { return known }
        let fingerprint = SettingsFingerprint(tokens.identity)
        let keys = SharedEntryKeys(prefix: shared.settings.keyPrefix, identity: tokens.identity.name, fingerprint: fingerprint,
                                   hashTagged: shared.settings.topology.isCluster)
        let identity = CallerIdentity(tokens: tokens, fingerprint: fingerprint, keys: keys)
        identities[tokens.slot] = identity
        slotsByEntry[keys.entry, default: []].insert(tokens.slot)
        return identity
    }

    private func readGeneration(of identity: CallerIdentity, read: UInt64) {
        let slot = identity.tokens.slot
        let command = CallerGenerationCommands.read(identity.keys, fresh: randomHex() + randomHex())
        let sent = shared.link.send(command) { [weak self] result in
            guard let self, !shared.stopping else { return }
            generationRead(slot: slot, read: read, generation: shared.answer(result, CallerGenerationCommands.generation(in:)))
        }
        if !sent { generationRead(slot: slot, read: read, generation: nil) }
    }

    private func generationRead(slot: Int, read: UInt64, generation: String?) {
        for ask in generations.readDone(slot: slot, read: read, generation: generation) {
            guard let generation, let identity = identities[slot] else {
                alone(ask)
                continue
            }
            fly(ask, generation: generation, identity: identity)
        }
    }

    /// Redis cannot help: the exchange runs without it.
    private func alone(_ ask: CallerTokenAsk) {
        shared.count("skipped")
        ask.exchange(ask.completion)
    }

    private func fly(_ ask: CallerTokenAsk, generation: String, identity: CallerIdentity) {
        let storeKey = shared.settings.keys.current
        guard let name = CallerEntryName(storeKey: storeKey, identity: ask.tokens.identity.name, fingerprint: identity.fingerprint,
                                         generation: generation, caller: ask.caller,
                                         actor: ask.tokens.identity.grant.callerGrant?.actorToken)
        else { return alone(ask) }
        let keys = SharedEntryKeys(prefix: shared.settings.keyPrefix, identity: ask.tokens.identity.name, caller: name,
                                   hashTagged: shared.settings.topology.isCluster)
        if let flight = flights[keys.entry] {
            // An ask after a refusal joins no flight that may answer with the refused token.
            guard ask.refused == nil || ask.refused == flight.refused else { return alone(ask) }
            flight.completions.append(ask.completion)
            return
        }
        let flight = Flight(ask: ask, keys: keys, name: name, storeKey: storeKey)
        flights[keys.entry] = flight
        run(flight.fetch.begin(link: shared.link.health.link), for: flight)
    }

    // MARK: - What SharedTokens tells

    func linkReady() {
        for (slot, read) in generations.linkReady() {
            // A reload retired the slot meanwhile: its asks go without Redis (left, they would
            // wait for good).
            guard let identity = identities[slot] else {
                generationRead(slot: slot, read: read, generation: nil)
                continue
            }
            readGeneration(of: identity, read: read)
        }
        each { $0.fetch.linkReady() }
    }

    func linkLost() {
        for ask in generations.linkLost() { alone(ask) }
        each { $0.fetch.linkLost() }
    }

    /// A message on the entries' channel: a caller entry written, or its lease released.
    func messageHeard(_ key: [UInt8]) {
        guard let flight = flights[key] else { return }
        run(flight.fetch.messageHeard(), for: flight)
    }

    /// Some flight waits for another replica's lease (the heartbeat keeps going).
    var isWaiting: Bool {
        flights.values.contains { $0.fetch.isWaiting }
    }

    /// The per-caller identity whose own entry is `entry` (a removal's message names it); the
    /// newest slot when several share it.
    func identity(entry: [UInt8]) -> IdentityTokens? {
        slotsByEntry[entry]?.max().flatMap { identities[$0]?.tokens }
    }

    /// The identity was logged out (its generation deleted): by this replica, once the removal
    /// is sent (a generation read sent after it finds the new one), or by another one, heard —
    /// then for every slot sharing its entry.
    func removed(_ tokens: IdentityTokens, byAnotherReplica: Bool) {
        let slots = identities[tokens.slot].flatMap { slotsByEntry[$0.keys.entry] } ?? [tokens.slot]
        for slot in slots.sorted() {
            for ask in generations.forget(slot: slot) { token(ask) }
            if byAnotherReplica, let identity = identities[slot] { forgotten(identity.tokens) }
        }
    }

    /// A reload retired the slot.
    func retire(slot: Int) {
        generations.retire(slot: slot)
        guard let identity = identities.removeValue(forKey: slot) else { return }
        slotsByEntry[identity.keys.entry]?.remove(slot)
        if slotsByEntry[identity.keys.entry]?.isEmpty == true { slotsByEntry[identity.keys.entry] = nil }
    }

    /// The slots registered (for tests).
    var registeredSlots: [Int] { identities.keys.sorted() }

    /// The token loop stops: flights waiting on Redis are dropped, leases held are given back at
    /// once (an exchange under way still answers its asks; nothing is written).
    func stop() {
        for flight in flights.values {
            flight.leaseTimer?.close()
            flight.leaseTimer = nil
            if flight.fetch.holdsLease { shared.sendRelease(flight.keys) }
        }
        flights.removeAll()
        generations = CallerGenerations()
    }

    // MARK: - Steps

    private func each(_ event: (Flight) -> SharedFetch.Step) {
        // A step may end a flight (and remove it): go over a copy.
        for flight in Array(flights.values) { run(event(flight), for: flight) }
    }

    private func run(_ step: SharedFetch.Step, for flight: Flight) {
        guard !shared.stopping, !flight.answered else { return }
        switch step {
        case .read:
            read(flight)
        case .acquire:
            acquire(flight, ifUnchanged: nil)
        case .acquireIfUnchanged(let version):
            acquire(flight, ifUnchanged: version)
        case .fetch:
            exchange(flight)
        case .alone:
            shared.count("skipped")
            exchange(flight)
        case .done(let releasing):
            if releasing { shared.sendRelease(flight.keys) }
            answerFromEntry(flight)
        case .wait(let until):
            wait(flight, until: until)
        case .release:
            shared.sendRelease(flight.keys)
        case .write, .reassert, .nothing:
            // A flight writes once its exchange ends (`exchanged`), never at another step.
            break
        }
    }

    private func read(_ flight: Flight) {
        let sent = shared.link.send(SharedEntryCommands.read(flight.keys)) { [weak self] result in
            guard let self, !shared.stopping else { return }
            guard let read = shared.answer(result, SharedEntryRead.init) else { return run(flight.fetch.operationFailed(), for: flight) }
            let satisfied = offer(read, to: flight)
            run(flight.fetch.readDone(satisfied: satisfied), for: flight)
        }
        if !sent { run(flight.fetch.operationFailed(), for: flight) }
    }

    private func acquire(_ flight: Flight, ifUnchanged version: EntryVersion?) {
        let command = SharedEntryCommands.acquire(flight.keys, holder: shared.holder, leaseMilliseconds: flight.leaseMilliseconds,
                                                  ifUnchanged: version)
        let sent = shared.sendCounted(command) { [weak self] result in
            guard let self else { return }
            let lease = shared.answer(result, LeaseAnswer.init)
            guard !shared.stopping, !flight.answered else {
                // Stopped meanwhile: a lease granted now is given back, not left to expire.
                if lease?.took == true { shared.sendRelease(flight.keys) }
                return
            }
            guard let lease else { return run(flight.fetch.operationFailed(), for: flight) }
            let satisfied = offer(lease.read, to: flight)
            run(flight.fetch.acquireDone(lease: lease.lease, remainingMilliseconds: lease.remainingMilliseconds,
                                         satisfied: satisfied, now: monotonicSeconds()), for: flight)
        }
        if !sent { run(flight.fetch.operationFailed(), for: flight) }
    }

    /// True when the entry read holds a token still reusable for the flight's caller (kept in
    /// `found`). An entry that does not open (another store key, damage, another caller's copied
    /// here) is no token, nor is the token an upstream refused (the flight's `refused`): the
    /// exchange's write replaces it (compare-and-set against the version read).
    private func offer(_ read: SharedEntryRead, to flight: Flight) -> Bool {
        _ = flight.fetch.entryRead(version: read.version)
        guard let bytes = read.entry,
              let stored = try? StoreEntry.decode(bytes, identity: flight.tokens.identity.name, fingerprint: flight.name.entryFingerprint,
                                                  keys: shared.settings.keys.snapshot),
              let access = stored.access,
              access.value != flight.refused,
              CallerEntryLife.isReusable(issuedAt: access.issuedAt, tokenExpiresAt: access.expiresAt, callerExpiresAt: flight.callerExpiresAt,
                                         skew: flight.tokens.identity.refreshSkewSeconds, now: Date().timeIntervalSince1970)
        else { return false }
        flight.found = access
        return true
    }

    private func wait(_ flight: Flight, until: Double) {
        let timer = flight.leaseTimer ?? LoopTimer(loop: shared.loop) { [weak self, weak flight] in
            guard let self, let flight else { return }
            run(flight.fetch.leaseTimerFired(now: monotonicSeconds()), for: flight)
        }
        flight.leaseTimer = timer
        timer.start(afterMilliseconds: UInt64(max(0, (until - monotonicSeconds()) * 1000).rounded(.up)))
        shared.keepBeatingWhileWaiting()
    }

    private func exchange(_ flight: Flight) {
        let issuedAt = Date().timeIntervalSince1970
        flight.exchange { [weak self] outcome in
            self?.exchanged(flight, outcome: outcome, issuedAt: issuedAt)
        }
    }

    /// The exchange ended: its asks hear at once; then what it obtained is shared (or the lease
    /// given back).
    private func exchanged(_ flight: Flight, outcome: CallerTokenOutcome, issuedAt: Double) {
        if case .success(let response) = outcome {
            flight.obtained = StoredToken.Access(value: response.accessToken, type: response.tokenType, issuedAt: issuedAt,
                                                 expiresAt: issuedAt + response.expiresIn, scope: response.scope)
        }
        answer(flight, outcome)
        guard !shared.stopping else { return }
        switch flight.fetch.fetchEnded(obtained: flight.obtained != nil, refreshTokenDropped: false, linkReady: shared.link.isReady) {
        case .write: write(flight, expected: flight.fetch.knownVersion)
        case .reassert: write(flight, expected: flight.fetch.reassertExpected)
        case .release: shared.sendRelease(flight.keys)
        default: break
        }
    }

    /// Stores the exchanged token under the caller's name if the entry is still `expected`,
    /// releasing the lease; its TTL is the token's remaining life, cut at the caller's expiry.
    private func write(_ flight: Flight, expected: EntryVersion) {
        guard let access = flight.obtained,
              let ttl = CallerEntryLife.ttlMilliseconds(tokenExpiresAt: access.expiresAt, callerExpiresAt: flight.callerExpiresAt,
                                                        now: Date().timeIntervalSince1970)
        else { return shared.sendRelease(flight.keys) }
        let bytes: [UInt8]
        do {
            bytes = try StoreEntry.encode(StoredToken(access: access, refreshToken: nil), identity: flight.tokens.identity.name,
                                          fingerprint: flight.name.entryFingerprint, key: flight.storeKey)
        } catch {
            shared.logger.warning("shared token store write failed", metadata: ["identity": .string(flight.tokens.identity.name),
                                                                               "error": .string(error.description)])
            return shared.sendRelease(flight.keys)
        }
        let command = SharedEntryCommands.write(flight.keys, expected: expected, version: randomHex(), entry: bytes, ttlMilliseconds: ttl,
                                                holder: shared.holder)
        let sent = shared.sendCounted(command) { [weak self] result in
            _ = self?.shared.answer(result, WriteAnswer.init) { if case .stored = $0 { "ok" } else { "conflict" } }
        }
        if !sent { shared.count("skipped") }
    }

    /// The entry's token answers the flight's asks, its lifetime counted from now.
    private func answerFromEntry(_ flight: Flight) {
        guard let access = flight.found else { return }
        let now = Date().timeIntervalSince1970
        let response = TokenResponse(accessToken: access.value, tokenType: access.type, expiresIn: access.expiresAt - now,
                                     expirySource: .expiresAt, scope: access.scope)
        answer(flight, .success(response))
    }

    /// Every ask of the flight hears `outcome`; the flight is over (asks for the caller from now
    /// on start another).
    private func answer(_ flight: Flight, _ outcome: CallerTokenOutcome) {
        flight.answered = true
        flight.leaseTimer?.close()
        flight.leaseTimer = nil
        if flights[flight.keys.entry] === flight { flights[flight.keys.entry] = nil }
        let completions = flight.completions
        flight.completions = []
        for completion in completions { completion(outcome) }
    }
}
