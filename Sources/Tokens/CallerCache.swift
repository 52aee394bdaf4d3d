// CallerCache: the tokens of one identity that exchanges its callers' tokens (`Grant.caller`), one
// entry per caller token, with no lock, no clock and no I/O (CallerTokens.swift puts it behind the
// lock and wakes the waiting workers).
//
// An entry is keyed by the SHA-256 digest of the caller's token (`CallerKey`), never by the token:
//
//          lookup (new caller, or a token past reuse)            publish(.issued)
//   (none) ───────────────────────────────────────→ fetching ─────────────────→ issued
//                                                     │  ↑   publish(.refused)     │
//                                                     │  └──────── refused ←───────┤ (reuse over)
//                                                     │  lookup after `until`      │
//                                                     │                            │ the upstream refused
//                                                     └────── lookup ←── dropped ←─┘ its token
//
// - fetching: one exchange in flight for this caller (single flight): every lookup meanwhile
//   registers its waiter and waits; the publish takes the waiters in the same step.
// - issued: handed out until `reuseUntil` (shortly before the earlier of the exchanged token's
//   and the caller token's expiries); a lookup after that starts the next exchange.
// - refused: the token endpoint's answer for this caller (`CallerRefusal`), given again until
//   `until`.
// - dropped: an upstream refused the caller's token (`retryOnStatus`): the next lookup exchanges
//   again, and the token it gets is marked as fetched after a refusal, which an upstream refusal
//   younger than `minTokenAgeForRetrySeconds` does not drop again.
//
// At most `capacity` entries (the identity's `maxCallers`), in two places: the fetching ones in a
// dictionary of their own (never forgotten: their waiters would never be woken), the others in a
// `BoundedLRU`, where each lookup moves its entry to the front. A new caller takes the place of
// the least recently used of those, in O(1): no fetching entry is ever passed over to find it,
// however many there are while the IdP stalls. When every entry is fetching, a new caller is
// answered `full` at once.

import OAuth2

/// One identity's per-caller tokens, as a bounded LRU. `Waiter`: what is woken when an exchange
/// ends (a worker loop's wake-up; anything in tests).
struct CallerCache<Waiter: AnyObject> {
    /// What a lookup finds.
    enum Lookup {
        /// The caller's token: inject it.
        case hit(CallerIssuedToken)
        /// The caller's remembered refusal: answer it.
        case refused(TokenUnavailable)
        /// Wait for the exchange (the waiter is registered). `exchange`: this lookup began it, so
        /// the caller must have it sent; false: it joined one in flight.
        case wait(exchange: Bool)
        /// No room: every entry is fetching.
        case full
    }

    /// How an exchange ended.
    enum Outcome {
        /// The token endpoint issued `value`; the times are monotonic seconds (`reuseUntil` no
        /// later than `expiresAt`).
        case issued(value: String, issuedAt: Double, expiresAt: Double, reuseUntil: Double)
        /// It did not: `refusal` stands until `until`.
        case refused(CallerRefusal, until: Double)
    }

    /// Counts since the cache was made (`oauth_relay_caller_cache_*`).
    struct Counts: Equatable {
        var hits = 0
        var misses = 0
        var waits = 0
        var evictions = 0
    }

    /// An entry no exchange is in flight for.
    enum State {
        case issued(CallerIssuedToken)
        case refused(RememberedRefusal)
        case dropped(RefusedToken)
    }

    /// An entry in `fetching`: its waiters, and `refused`, the token an upstream refused that
    /// this exchange replaces (nil: not after a refusal).
    struct Fetching {
        var waiters: [Waiter]
        let refused: RefusedToken?
    }

    private var entries: BoundedLRU<CallerKey, State>
    private var fetching: [CallerKey: Fetching] = [:]
    private(set) var counts = Counts()
    /// Entries looked at to make room for new callers (each eviction looks at one: for tests).
    private(set) var entriesLookedAtForRoom = 0

    init(capacity: Int) {
        entries = BoundedLRU(capacity: capacity)
    }

    var capacity: Int { entries.capacity }

    /// Entries in `fetching`: while any, the identity has waiters.
    var fetchingCount: Int { fetching.count }

    /// Entries held.
    var count: Int { entries.count + fetching.count }

    /// The keys of the entries not fetching, from the most to the least recently used (for tests).
    var keysByRecency: [CallerKey] { entries.keysByRecency }

    /// The keys of the entries fetching (for tests).
    var fetchingKeys: Set<CallerKey> { Set(fetching.keys) }

    /// What a request of the caller whose token has `key` does at `now`; a wait registers `waiter`
    /// in the same step. `counted`: the request's first lookup, counted as a hit or a wait (a
    /// parked request asking again is not); a lookup that begins an exchange is always a miss.
    mutating func lookup(_ key: CallerKey, at now: Double, waiter: Waiter, counted: Bool = true) -> Lookup {
        if var exchange = fetching[key] {
            if counted { counts.waits += 1 }
            if !exchange.waiters.contains(where: { $0 === waiter }) {
                exchange.waiters.append(waiter)
                fetching[key] = exchange
            }
            return .wait(exchange: false)
        }
        guard let state = entries.value(for: key) else {
            guard fetching.count < capacity else { return .full }
            if count >= capacity {
                entriesLookedAtForRoom += 1
                entries.removeOldest()
                counts.evictions += 1
            }
            return beganExchange(key, waiter: waiter, refused: nil)
        }
        switch state {
        case .issued(let token) where now < token.reuseUntil:
            if counted { counts.hits += 1 }
            return .hit(token)
        case .refused(let refusal) where now < refusal.until:
            if counted { counts.hits += 1 }
            return .refused(refusal.refusal.problem)
        case .dropped(let refused):
            entries.remove(key)
            return beganExchange(key, waiter: waiter, refused: refused)
        case .issued, .refused:
            entries.remove(key)
            return beganExchange(key, waiter: waiter, refused: nil)
        }
    }

    private mutating func beganExchange(_ key: CallerKey, waiter: Waiter, refused: RefusedToken?) -> Lookup {
        fetching[key] = Fetching(waiters: [waiter], refused: refused)
        counts.misses += 1
        return .wait(exchange: true)
    }

    /// The exchange for `key` ended: the entry takes `outcome`, and its waiters are returned (to
    /// be woken once the lock is released). Nothing when no exchange was in flight for it.
    mutating func publish(_ key: CallerKey, _ outcome: Outcome) -> [Waiter] {
        guard let exchange = fetching.removeValue(forKey: key) else { return [] }
        // The entry leaves `fetching` for the LRU: the count stays within `capacity`, so nothing
        // is forgotten to make room.
        switch outcome {
        case .issued(let value, let issuedAt, let expiresAt, let reuseUntil):
            entries.set(.issued(CallerIssuedToken(value: value, issuedAt: issuedAt, expiresAt: expiresAt, reuseUntil: reuseUntil,
                                                  afterRefusal: exchange.refused != nil)), for: key)
        case .refused(let refusal, let until):
            entries.set(.refused(RememberedRefusal(refusal: refusal, until: until)), for: key)
        }
        return exchange.waiters
    }

    /// An upstream refused `value`, the token issued for `key`, at `now` on a route whose
    /// `minTokenAgeForRetrySeconds` is `minimumAge`: dropped (the next lookup exchanges again)
    /// unless it was itself exchanged after a refusal less than `minimumAge` ago (kept: the
    /// upstream refuses for another reason, and exchanging again would not help); superseded when
    /// the entry no longer holds it.
    mutating func refused(_ key: CallerKey, token value: String, at now: Double, minimumAge: Double) -> TokenLifecycle.Refusal {
        guard case .issued(let token)? = entries.peek(key), token.value == value else { return .superseded }
        if token.afterRefusal && now - token.issuedAt < minimumAge { return .kept }
        entries.set(.dropped(RefusedToken(value)), for: key)
        return .dropped
    }

    /// The token an upstream refused that the exchange in flight for `key` replaces: another
    /// replica's copy of it in the shared store is no answer (SharedCallerTokens). Nil when the
    /// exchange is not one after a refusal, or none is in flight.
    func refusedToken(_ key: CallerKey) -> String? {
        fetching[key]?.refused?.value
    }

    /// Forgets every entry but those fetching (their waiters are woken by their exchange's end).
    mutating func removeAll() {
        entries = BoundedLRU(capacity: capacity)
    }
}

extension CallerCache: Sendable where Waiter: Sendable {}
extension CallerCache.State: Sendable where Waiter: Sendable {}
extension CallerCache.Fetching: Sendable where Waiter: Sendable {}

/// The token an upstream refused, which the caller's next exchange replaces. A class, like
/// `RememberedRefusal`.
final class RefusedToken: Sendable {
    let value: String

    init(_ value: String) {
        self.value = value
    }
}

/// A refusal an entry remembers, until when (monotonic seconds). A class: an entry's state
/// stays two words whatever it holds.
final class RememberedRefusal: Sendable {
    let refusal: CallerRefusal
    let until: Double

    init(refusal: CallerRefusal, until: Double) {
        self.refusal = refusal
        self.until = until
    }
}
