// InboundKeys: one inbound issuer's signing keys, shared by every worker and the token thread,
// with the same hand-off as IdentityTokens: a request that must wait for a fetch decides so and
// registers its loop's wake-up in one step under the lock (`need`), and the token thread records
// the fetch's outcome and takes the waiting loops in one step (`publish`), waking them after the
// lock is released. So no fetch can end between a decision to wait and its registration.
//
// Routes with the same issuer, JWKS URL and TLS settings share one (TokenService.inboundKeys); a
// reload that keeps them keeps the keys.

import Endpoints
import EventLoop
import JOSE
import Locking
import TLS

public final class InboundKeys: Sendable {
    /// The `iss` of the tokens these keys verify, and where discovery starts without `jwksUrl`.
    public let issuer: String
    /// The configured JWKS URL; nil: discovered from the issuer.
    public let jwksUrl: HTTPURL?
    /// The settings the fetches connect with (what makes two routes' keys the same).
    public let tlsSettings: TLSSettings?
    private let inbox: TokenInbox
    private let state: Locked<State>

    private struct State {
        var keys = InboundKeyState()
        /// Loops with requests parked until the fetch under way ends.
        var waiting: [LoopWakeup] = []
        /// The `jwks_uri` the issuer's metadata named (token loop), until a fetch from it fails.
        var discoveredJWKSURL: HTTPURL?
        /// Built from `tlsSettings` by the configuration in force, for https fetches (a reload
        /// after a CA or client certificate file changed brings a new one).
        var tls: TLSConfiguration?
    }

    /// The keys a request checks a token with, and their generation.
    public struct Snapshot: Sendable {
        public let keys: JWKSet?
        public let generation: UInt64
    }

    /// What a request whose token the keys of a snapshot cannot verify does.
    public enum Need: Sendable {
        /// Newer keys are in (a fetch ended since the snapshot): check again with them.
        case retry(Snapshot)
        /// Parked until the fetch ends (the wake-up is registered).
        case wait
        /// The token names a key the issuer does not have.
        case noSuchKey
        case unavailable(reason: String, retryAfterSeconds: Int)
    }

    init(issuer: String, jwksUrl: HTTPURL?, tlsSettings: TLSSettings?, tls: TLSConfiguration?, inbox: TokenInbox) {
        self.issuer = issuer
        self.jwksUrl = jwksUrl
        self.tlsSettings = tlsSettings
        self.inbox = inbox
        state = Locked(State(tls: tls))
    }

    /// The TLS configuration of the fetches from now on.
    var tls: TLSConfiguration? {
        get { state.withLock { $0.tls } }
        set { state.withLock { $0.tls = newValue } }
    }

    /// The keys now (`now`: monotonic seconds). Keys an hour old are fetched again meanwhile.
    public func snapshot(at now: Double) -> Snapshot {
        let (snapshot, refresh) = state.withLock { state in
            (Snapshot(keys: state.keys.keys, generation: state.keys.generation), state.keys.refreshIfStale(at: now))
        }
        if refresh { inbox.post(.needKeys(self)) }
        return snapshot
    }

    /// `snapshot`'s keys cannot verify a token: what now. A decision to wait registers `wake`,
    /// woken when the fetch ends. `firstAsk`: false for a parked request asking again.
    public func need(after snapshot: Snapshot, at now: Double, wakingOnResult wake: LoopWakeup?, firstAsk: Bool = true) -> Need {
        let (need, post) = state.withLock { state -> (Need, Bool) in
            guard state.keys.generation == snapshot.generation else {
                return (.retry(Snapshot(keys: state.keys.keys, generation: state.keys.generation)), false)
            }
            let decision = state.keys.needKeys(at: now, firstAsk: firstAsk)
            switch decision {
            case .fetchAndWait, .wait:
                guard let wake else {
                    return (.unavailable(reason: "the issuer's keys are being read", retryAfterSeconds: 1), decision == .fetchAndWait)
                }
                if !state.waiting.contains(where: { $0 === wake }) { state.waiting.append(wake) }
                return (.wait, decision == .fetchAndWait)
            case .noSuchKey:
                return (.noSuchKey, false)
            case .unavailable(let reason, let retryAfter):
                return (.unavailable(reason: reason, retryAfterSeconds: retryAfter), false)
            }
        }
        if post { inbox.post(.needKeys(self)) }
        return need
    }

    /// The state now (tests, `/metrics` readers).
    public var current: InboundKeyState { state.withLock { $0.keys } }

    /// Token loop: the `jwks_uri` discovery found, kept until a fetch from it fails.
    var discoveredJWKSURL: HTTPURL? {
        get { state.withLock { $0.discoveredJWKSURL } }
        set { state.withLock { $0.discoveredJWKSURL = newValue } }
    }

    /// Token loop: records a fetch's outcome and wakes the loops waiting for it.
    func publish(_ body: (inout InboundKeyState) -> Void) {
        let wakeups = state.withLock { state -> [LoopWakeup] in
            body(&state.keys)
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for wakeup in wakeups { wakeup.wake() }
    }
}
