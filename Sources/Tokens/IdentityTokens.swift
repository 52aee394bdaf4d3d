// The token state of one identity, shared by every worker and the token thread.
//
// The lifecycle (a pure state machine, see OAuth2/TokenLifecycle.swift) and the worker loops
// waiting for its next result sit behind one lock. That one lock is the hand-off protocol:
//
//  1. A request that must wait decides so and registers its loop's wake-up in one step
//     (`decide(at:wakingOnResult:)`).
//  2. A result (a token, a failure, an invalidation) is recorded and the waiting loops are taken
//     in one step (`publish`), and woken after the lock is released.
//
// So a result either comes before a decision, which then sees it, or after a registration,
// which it then wakes: none can end between the two and publish to nobody.
//
// Every change that matters to a request bumps `generation`; workers keep the header line they
// inject per identity with the generation it came from, so a cache hit on the request path is
// one atomic load and a time comparison — no lock, no contention between workers.
//
// A reload keeps the IdentityTokens of every identity whose settings did not change, so its
// token survives; a changed or new identity gets a new one, with a new `slot`.

import EventLoop
import OAuth2
import Locking
import Synchronization

public final class IdentityTokens: Sendable {
    /// The identity as the configuration gives it (what a reload compares).
    public let configured: Identity
    /// The identity in use: the configured one, or for an `auto` identity what it learnt
    /// (`TokenLifecycle.resolved`), read under the lock.
    public var identity: Identity {
        configured.auto == nil ? configured : state.withLock { $0.lifecycle.identity }
    }
    /// Whether `identity` binds its tokens to a DPoP key, read without copying the identity (a
    /// reload asks it for each of 10,000 routes).
    public var bindsDPoP: Bool {
        configured.auto == nil ? configured.dpop != nil : state.withLock { $0.lifecycle.identity.dpop != nil }
    }
    /// Unique for the life of the process (never reused after a reload), so per-worker tables
    /// indexed by it never mistake a replaced identity for its successor.
    public let slot: Int
    /// Where per-worker tables indexed densely keep this identity (WorkerTokens' injected tokens):
    /// below the most identities in force at once, and reused once this identity is retired
    /// (CacheIndexes.swift), so such a table tells identities apart by `slot` too.
    public let cacheIndex: Int
    /// The DPoP key every token of this identity is bound to: the key file's, or one generated
    /// here (`DPoPBinding.generatedKey`), so it lives exactly as long as the identity's state and
    /// tokens do (a reload that keeps the identity keeps it). Nil without `dpop`; a failure when
    /// the key could not be generated (token requests then fail, saying why).
    public let dpop: Result<DPoPKey, DPoPKeyError>?
    /// With `dpop`: the nonces upstreams sent this identity's requests, by origin, shared by the
    /// workers (UpstreamDPoPNonces.swift). They live as long as the key: a reload that keeps the
    /// identity keeps them.
    public let upstreamNonces: UpstreamDPoPNonces?
    /// For an identity that exchanges its callers' tokens (`Grant.caller`): one token per caller,
    /// in a bounded LRU of `maxCallers` (CallerTokens.swift). Nil for any other identity.
    public let callers: CallerTokens?
    private let state: Locked<State>
    private let generationCounter = Atomic<UInt64>(1)

    private struct State {
        var lifecycle: TokenLifecycle
        /// Worker loops to wake when the next result is published (they have requests parked).
        var waiting: [LoopWakeup] = []
    }

    /// `cacheIndex`: the slot when not given (an identity outside a `TokenService`'s sets).
    init(identity: Identity, slot: Int, cacheIndex: Int? = nil) {
        configured = identity
        self.slot = slot
        self.cacheIndex = cacheIndex ?? slot
        dpop = identity.dpop.map { binding in Result { () throws(DPoPKeyError) in try binding.makeKey() } }
        upstreamNonces = identity.dpop == nil ? nil : UpstreamDPoPNonces()
        state = Locked(State(lifecycle: TokenLifecycle(identity: identity)))
        callers = identity.grant.callerGrant == nil ? nil : CallerTokens(identity: identity)
    }

    public var generation: UInt64 { generationCounter.load(ordering: .acquiring) }

    /// What a request on a route with this identity does now (`now`: monotonic seconds). When
    /// it must wait, `wake` is registered in the same step and is woken by the next result.
    /// `startsDeviceLogin`: false for a caller that only wants a token already obtained
    /// (`oauth-relay token`), which must not make the IdP issue a device code nobody will enter.
    public func decide(at now: Double, wakingOnResult wake: LoopWakeup?, startsDeviceLogin: Bool = true) -> TokenDecision {
        state.withLock { state in
            var decision = state.lifecycle.decision(at: now)
            // The first request that finds a device identity logged out starts its device login,
            // and waits for the code to show.
            if startsDeviceLogin, case .fail(let reason) = decision, reason.reason == .needsLogin, reason.deviceLogin == nil,
               state.lifecycle.requestDeviceLogin(at: now) {
                decision = .wait
            }
            if case .wait = decision, let wake, !state.waiting.contains(where: { $0 === wake }) {
                state.waiting.append(wake)
            }
            return decision
        }
    }

    public func status(at now: Double) -> IdentityStatus {
        state.withLock { $0.lifecycle.status(at: now) }
    }

    /// The identity's token endpoint is known: configured, or found by discovery.
    public var knowsTokenEndpoint: Bool { state.withLock { $0.lifecycle.endpoints?.token != nil } }

    /// Requests wait for this identity's token, or for a caller's.
    var hasWaiters: Bool { state.withLock { !$0.waiting.isEmpty } || callers?.hasWaiters == true }

    /// Reads or changes the lifecycle where no request needs to hear of it (starting a fetch,
    /// scheduling, an operator's refresh).
    func update<Result>(_ body: (inout TokenLifecycle) -> Result) -> Result {
        state.withLock { body(&$0.lifecycle) }
    }

    /// Changes the lifecycle where requests must hear of it: when `body` returns true, the
    /// generation moves on and every waiting loop is woken (step 2 above).
    @discardableResult
    func publish(_ body: (inout TokenLifecycle) -> Bool) -> Bool {
        let (changed, wakeups) = state.withLock { state -> (Bool, [LoopWakeup]) in
            guard body(&state.lifecycle) else { return (false, []) }
            generationCounter.add(1, ordering: .releasing)
            defer { state.waiting.removeAll() }
            return (true, state.waiting)
        }
        for wakeup in wakeups { wakeup.wake() }
        return changed
    }
}

/// The identities in force for one configuration, by name; immutable.
public struct TokenSet: Sendable {
    /// Sorted by name.
    public let identities: [IdentityTokens]
    private let byName: [String: IdentityTokens]

    init(_ identities: [IdentityTokens]) {
        self.identities = identities.sorted { $0.configured.name < $1.configured.name }
        byName = Dictionary(uniqueKeysWithValues: identities.map { ($0.configured.name, $0) })
    }

    public subscript(name: String) -> IdentityTokens? { byName[name] }
}

/// The clock every lifecycle runs on: monotonic seconds (libuv's hrtime), the same on all threads.
public func monotonicSeconds() -> Double {
    Double(EventLoop.monotonicNanoseconds()) / 1_000_000_000
}
