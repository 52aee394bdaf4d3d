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
// The entries are a bounded LRU (`capacity`, the identity's `maxCallers`): each lookup moves its
// entry to the front, and a new caller takes the place of the least recently used entry that is
// not fetching. A fetching entry is never evicted: its waiters would never be woken. When every
// entry is fetching, a new caller is answered `full`.
//
// Entries live in one array of slots linked in LRU order by index (no allocation per lookup, one
// per new caller at most while the array grows to `capacity`), found through a dictionary from key
// to slot.

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
        case fetching(waiters: [Waiter], afterRefusal: Bool)
        case issued(CallerIssuedToken)
        case refused(RememberedRefusal)
        case dropped
    }

    struct Slot {
        var key: CallerKey
        var state: State
        /// Towards the most recently used (`none` for the front).
        var newer: Int32
        /// Towards the least recently used (`none` for the back).
        var older: Int32
    }

    private static var none: Int32 { -1 }

    let capacity: Int
    private var slots: [Slot] = []
    private var index: [CallerKey: Int32] = [:]
    /// Most and least recently used.
    private var front = Self.none
    private var back = Self.none
    /// Entries in `fetching`: while any, the identity has waiters.
    private(set) var fetchingCount = 0
    private(set) var counts = Counts()

    init(capacity: Int) {
        precondition(capacity > 0, "a caller cache holds at least one entry")
        self.capacity = capacity
    }

    /// Entries held.
    var count: Int { index.count }

    /// What a request of the caller whose token has `key` does at `now`; a wait registers `waiter`
    /// in the same step. `counted`: the request's first lookup, counted as a hit or a wait (a
    /// parked request asking again is not); a lookup that begins an exchange is always a miss.
    mutating func lookup(_ key: CallerKey, at now: Double, waiter: Waiter, counted: Bool = true) -> Lookup {
        guard let found = index[key] else {
            guard makeSlot(for: key, state: .fetching(waiters: [waiter], afterRefusal: false)) else { return .full }
            counts.misses += 1
            fetchingCount += 1
            return .wait(exchange: true)
        }
        let slot = Int(found)
        moveToFront(slot)
        switch slots[slot].state {
        case .issued(let token) where now < token.reuseUntil:
            if counted { counts.hits += 1 }
            return .hit(token)
        case .refused(let refusal) where now < refusal.until:
            if counted { counts.hits += 1 }
            return .refused(refusal.refusal.problem)
        case .fetching(var waiters, let afterRefusal):
            if counted { counts.waits += 1 }
            if !waiters.contains(where: { $0 === waiter }) {
                // The state is taken out first: the array is then uniquely held and grows in place.
                slots[slot].state = .dropped
                waiters.append(waiter)
                slots[slot].state = .fetching(waiters: waiters, afterRefusal: afterRefusal)
            }
            return .wait(exchange: false)
        case .dropped:
            counts.misses += 1
            slots[slot].state = .fetching(waiters: [waiter], afterRefusal: true)
            fetchingCount += 1
            return .wait(exchange: true)
        case .issued, .refused:
            counts.misses += 1
            slots[slot].state = .fetching(waiters: [waiter], afterRefusal: false)
            fetchingCount += 1
            return .wait(exchange: true)
        }
    }

    /// The exchange for `key` ended: the entry takes `outcome`, and its waiters are returned (to
    /// be woken once the lock is released). Nothing when no exchange was in flight for it.
    mutating func publish(_ key: CallerKey, _ outcome: Outcome) -> [Waiter] {
        guard let found = index[key], case .fetching(let waiters, let afterRefusal) = slots[Int(found)].state else { return [] }
        switch outcome {
        case .issued(let value, let issuedAt, let expiresAt, let reuseUntil):
            slots[Int(found)].state = .issued(CallerIssuedToken(value: value, issuedAt: issuedAt, expiresAt: expiresAt,
                                                                reuseUntil: reuseUntil, afterRefusal: afterRefusal))
        case .refused(let refusal, let until):
            slots[Int(found)].state = .refused(RememberedRefusal(refusal: refusal, until: until))
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
        guard let found = index[key], case .issued(let token) = slots[Int(found)].state, token.value == value else { return .superseded }
        if token.afterRefusal && now - token.issuedAt < minimumAge { return .kept }
        slots[Int(found)].state = .dropped
        return .dropped
    }

    /// Forgets every entry but those fetching (their waiters are woken by their exchange's end).
    mutating func removeAll() {
        let kept = slots.filter { if case .fetching = $0.state { true } else { false } }
        slots = []
        index = [:]
        front = Self.none
        back = Self.none
        for slot in kept.reversed() { _ = makeSlot(for: slot.key, state: slot.state) }
    }

    // MARK: The LRU order

    /// A slot for a new entry at the front: a new one while there is room, else the least
    /// recently used one that is not fetching (evicted). False when every entry is fetching.
    private mutating func makeSlot(for key: CallerKey, state: State) -> Bool {
        if slots.count < capacity {
            let slot = slots.count
            slots.append(Slot(key: key, state: state, newer: Self.none, older: Self.none))
            index[key] = Int32(slot)
            linkAtFront(slot)
            return true
        }
        var candidate = back
        while candidate != Self.none, case .fetching = slots[Int(candidate)].state {
            candidate = slots[Int(candidate)].newer
        }
        guard candidate != Self.none else { return false }
        let slot = Int(candidate)
        unlink(slot)
        index[slots[slot].key] = nil
        counts.evictions += 1
        slots[slot].key = key
        slots[slot].state = state
        index[key] = Int32(slot)
        linkAtFront(slot)
        return true
    }

    private mutating func moveToFront(_ slot: Int) {
        guard Int32(slot) != front else { return }
        unlink(slot)
        linkAtFront(slot)
    }

    private mutating func linkAtFront(_ slot: Int) {
        slots[slot].newer = Self.none
        slots[slot].older = front
        if front != Self.none { slots[Int(front)].newer = Int32(slot) }
        front = Int32(slot)
        if back == Self.none { back = Int32(slot) }
    }

    private mutating func unlink(_ slot: Int) {
        let newer = slots[slot].newer, older = slots[slot].older
        if newer != Self.none { slots[Int(newer)].older = older } else { front = older }
        if older != Self.none { slots[Int(older)].newer = newer } else { back = newer }
        slots[slot].newer = Self.none
        slots[slot].older = Self.none
    }

    /// The keys from the most to the least recently used (for tests).
    var keysByRecency: [CallerKey] {
        var keys: [CallerKey] = []
        var slot = front
        while slot != Self.none {
            keys.append(slots[Int(slot)].key)
            slot = slots[Int(slot)].older
        }
        return keys
    }
}

extension CallerCache: Sendable where Waiter: Sendable {}
extension CallerCache.State: Sendable where Waiter: Sendable {}
extension CallerCache.Slot: Sendable where Waiter: Sendable {}

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
