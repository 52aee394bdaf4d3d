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
// The entries are a `BoundedLRU` of `capacity` (the identity's `maxCallers`): each lookup moves its
// entry to the front, and a new caller takes the place of the least recently used entry that is
// not fetching. A fetching entry is never forgotten: its waiters would never be woken. When every
// entry is fetching, a new caller is answered `full`.

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

    enum State {
        /// `refused`: the token an upstream refused, which this exchange replaces (nil: not after
        /// a refusal).
        case fetching(waiters: [Waiter], refused: RefusedToken?)
        case issued(CallerIssuedToken)
        case refused(RememberedRefusal)
        case dropped(RefusedToken)

        var isFetching: Bool {
            if case .fetching = self { return true }
            return false
        }
    }

    private var entries: BoundedLRU<CallerKey, State>
    /// Entries in `fetching`: while any, the identity has waiters.
    private(set) var fetchingCount = 0
    private(set) var counts = Counts()

    init(capacity: Int) {
        entries = BoundedLRU(capacity: capacity)
    }

    var capacity: Int { entries.capacity }

    /// Entries held.
    var count: Int { entries.count }

    /// The keys from the most to the least recently used (for tests).
    var keysByRecency: [CallerKey] { entries.keysByRecency }

    /// What a request of the caller whose token has `key` does at `now`; a wait registers `waiter`
    /// in the same step. `counted`: the request's first lookup, counted as a hit or a wait (a
    /// parked request asking again is not); a lookup that begins an exchange is always a miss.
    mutating func lookup(_ key: CallerKey, at now: Double, waiter: Waiter, counted: Bool = true) -> Lookup {
        guard let state = entries.value(for: key) else {
            let (stored, forgotten) = entries.set(.fetching(waiters: [waiter], refused: nil), for: key,
                                                  forgettingOnly: { !$0.isFetching })
            guard stored else { return .full }
            if forgotten != nil { counts.evictions += 1 }
            return beganExchange()
        }
        switch state {
        case .issued(let token) where now < token.reuseUntil:
            if counted { counts.hits += 1 }
            return .hit(token)
        case .refused(let refusal) where now < refusal.until:
            if counted { counts.hits += 1 }
            return .refused(refusal.refusal.problem)
        case .fetching(var waiters, let refused):
            if counted { counts.waits += 1 }
            if !waiters.contains(where: { $0 === waiter }) {
                waiters.append(waiter)
                entries.set(.fetching(waiters: waiters, refused: refused), for: key)
            }
            return .wait(exchange: false)
        case .dropped(let refused):
            entries.set(.fetching(waiters: [waiter], refused: refused), for: key)
            return beganExchange()
        case .issued, .refused:
            entries.set(.fetching(waiters: [waiter], refused: nil), for: key)
            return beganExchange()
        }
    }

    private mutating func beganExchange() -> Lookup {
        counts.misses += 1
        fetchingCount += 1
        return .wait(exchange: true)
    }

    /// The exchange for `key` ended: the entry takes `outcome`, and its waiters are returned (to
    /// be woken once the lock is released). Nothing when no exchange was in flight for it.
    mutating func publish(_ key: CallerKey, _ outcome: Outcome) -> [Waiter] {
        guard case .fetching(let waiters, let refused)? = entries.peek(key) else { return [] }
        switch outcome {
        case .issued(let value, let issuedAt, let expiresAt, let reuseUntil):
            entries.set(.issued(CallerIssuedToken(value: value, issuedAt: issuedAt, expiresAt: expiresAt, reuseUntil: reuseUntil,
                                                  afterRefusal: refused != nil)), for: key)
        case .refused(let refusal, let until):
            entries.set(.refused(RememberedRefusal(refusal: refusal, until: until)), for: key)
        }
        fetchingCount -= 1
        return waiters
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
        guard case .fetching(_, let refused?)? = entries.peek(key) else { return nil }
        return refused.value
    }

    /// Forgets every entry but those fetching (their waiters are woken by their exchange's end).
    mutating func removeAll() {
        for key in entries.keysByRecency where entries.peek(key)?.isFetching == false {
            entries.remove(key)
        }
    }
}

extension CallerCache: Sendable where Waiter: Sendable {}
extension CallerCache.State: Sendable where Waiter: Sendable {}

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
