// The token state of one identity, shared by every worker and the token thread.
//
// The lifecycle (a pure state machine, see OAuth2/TokenLifecycle.swift) sits behind a Mutex.
// Every change that matters to a request (a new token, a failure, an invalidation) bumps
// `generation`; workers keep the header line they inject per identity with the generation it
// came from, so a cache hit on the request path is one atomic load and a time comparison —
// no lock, no contention between workers.
//
// A reload keeps the IdentityTokens of every identity whose settings did not change, so its
// token survives; a changed or new identity gets a new one, with a new `slot`.

import Config
import EventLoop
import OAuth2
import Synchronization

public final class IdentityTokens: Sendable {
    public let identity: Identity
    /// Unique for the life of the process (never reused after a reload), so per-worker tables
    /// indexed by it never mistake a replaced identity for its successor.
    public let slot: Int
    let lifecycle: Mutex<TokenLifecycle>
    let generationCounter = Atomic<UInt64>(1)
    /// Worker loops to wake when the next fetch ends (they have requests parked on it).
    let waiting = Mutex<[LoopWakeup]>([])

    init(identity: Identity, slot: Int) {
        self.identity = identity
        self.slot = slot
        lifecycle = Mutex(TokenLifecycle(identity: identity))
    }

    public var generation: UInt64 { generationCounter.load(ordering: .acquiring) }

    /// What a request on a route with this identity does now (`now`: monotonic seconds).
    public func decision(at now: Double) -> TokenDecision {
        lifecycle.withLock { $0.decision(at: now) }
    }

    public func status(at now: Double) -> IdentityStatus {
        lifecycle.withLock { $0.status(at: now) }
    }

    var hasWaiters: Bool { waiting.withLock { !$0.isEmpty } }

    func publish() {
        generationCounter.add(1, ordering: .releasing)
        let loops = waiting.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for loop in loops { loop.wake() }
    }
}

/// The identities in force for one configuration, by name; immutable.
public struct TokenSet: Sendable {
    /// Sorted by name.
    public let identities: [IdentityTokens]
    private let byName: [String: IdentityTokens]

    init(_ identities: [IdentityTokens]) {
        self.identities = identities.sorted { $0.identity.name < $1.identity.name }
        byName = Dictionary(uniqueKeysWithValues: identities.map { ($0.identity.name, $0) })
    }

    public subscript(name: String) -> IdentityTokens? { byName[name] }
}

/// The clock every lifecycle runs on: monotonic seconds (libuv's hrtime), the same on all threads.
public func monotonicSeconds() -> Double {
    Double(EventLoop.monotonicNanoseconds()) / 1_000_000_000
}
