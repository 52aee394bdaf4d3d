// The per-caller tokens of one identity that exchanges its callers' tokens (`Grant.caller`),
// shared by every worker and the token thread, like `IdentityTokens` for an identity's own token.
//
// The cache (a pure LRU, CallerCache.swift) sits behind one lock, which is the hand-off protocol:
//
//  1. A lookup that must wait decides so and registers its worker loop's wake-up in one step; the
//     lookup that found no entry (or one past reuse) is the one that has the exchange sent, so a
//     caller has at most one exchange in flight across all workers (single flight).
//  2. The exchange's outcome is recorded and the waiting loops taken in one step (`publish`), and
//     woken once the lock is released.
//
// So an outcome either comes before a lookup, which then sees it, or after a registration, which
// it then wakes. A hit holds the lock for one dictionary lookup and a move to the LRU's front.

import EventLoop
import Locking
import OAuth2

public final class CallerTokens: Sendable {
    /// What a worker's lookup comes to.
    public enum Lookup {
        /// The caller's token: inject it.
        case hit(CallerIssuedToken)
        /// Park the request until the exchange ends (the wake-up is registered); `exchange`: this
        /// lookup began it, so the caller must have it sent (`TokenService.exchangeForCaller`).
        case wait(exchange: Bool)
        /// Answer this (the caller's remembered refusal, or no room for another caller).
        case fail(TokenUnavailable)
    }

    /// The entries' bound (the identity's `maxCallers`).
    public let capacity: Int
    private let identity: String
    private let cache: Locked<CallerCache<LoopWakeup>>

    init(identity: Identity) {
        self.identity = identity.name
        capacity = identity.maxCallers
        cache = Locked(CallerCache(capacity: identity.maxCallers))
    }

    /// What a request of the caller whose token has `key` does at `now` (monotonic seconds).
    /// `counted`: the request's first lookup (a parked request asking again is not counted as a
    /// hit or a wait).
    public func lookup(_ key: CallerKey, at now: Double, wakingOnResult wake: LoopWakeup, counted: Bool = true) -> Lookup {
        let found = cache.withLock { $0.lookup(key, at: now, waiter: wake, counted: counted) }
        switch found {
        case .hit(let token): return .hit(token)
        case .refused(let problem): return .fail(problem)
        case .wait(let exchange): return .wait(exchange: exchange)
        case .full: return .fail(full)
        }
    }

    /// An upstream refused `token`, issued for the caller whose token has `key`, at `now` on a
    /// route whose `minTokenAgeForRetrySeconds` is `minimumAge` (see `CallerCache.refused`).
    public func refused(_ key: CallerKey, token: String, at now: Double, minimumAge: Double) -> TokenLifecycle.Refusal {
        cache.withLock { $0.refused(key, token: token, at: now, minimumAge: minimumAge) }
    }

    /// The exchange for `key` ended: recorded, and the loops waiting for it woken (step 2 above).
    func publish(_ key: CallerKey, _ outcome: CallerCache<LoopWakeup>.Outcome) {
        let waiters = cache.withLock { $0.publish(key, outcome) }
        for wakeup in waiters { wakeup.wake() }
    }

    /// The token an upstream refused that the exchange in flight for `key` replaces, if any.
    func refusedToken(_ key: CallerKey) -> String? {
        cache.withLock { $0.refusedToken(key) }
    }

    /// Exchanges are in flight, with requests waiting for them.
    var hasWaiters: Bool { cache.withLock { $0.fetchingCount > 0 } }

    /// Forgets every caller's token and refusal (an operator's `DELETE /identities/NAME/token`);
    /// the exchanges in flight go on for the requests waiting for them.
    public func removeAll() {
        cache.withLock { $0.removeAll() }
    }

    /// What the metrics show of the cache.
    public var counts: CallerTokenCounts {
        cache.withLock { cache in
            CallerTokenCounts(entries: cache.count, hits: cache.counts.hits, misses: cache.counts.misses, waits: cache.counts.waits,
                              evictions: cache.counts.evictions)
        }
    }

    /// Every entry is an exchange in flight: a new caller waits for room.
    private var full: TokenUnavailable {
        TokenUnavailable(identity: identity, reason: .unavailable, retryAfterSeconds: 1,
                         detail: "identity \(identity) has an exchange in flight for each of its maxCallers (\(capacity)) callers")
    }
}

/// The counts of one identity's per-caller cache (`oauth_relay_caller_cache_*`).
public struct CallerTokenCounts: Sendable, Equatable {
    /// Entries held now (at most `maxCallers`).
    public var entries: Int
    /// Requests that found the caller's token (or its remembered refusal) at once.
    public var hits: Int
    /// Lookups that began an exchange (a request's first, or a replay's after an upstream refused
    /// the caller's token).
    public var misses: Int
    /// Requests that joined an exchange in flight.
    public var waits: Int
    /// Entries dropped for a new caller.
    public var evictions: Int
}
