// InboundGate: one route's check of its callers' tokens (`inbound`), shared by every worker. It
// keeps the tokens it has checked in a bounded LRU keyed by their SHA-256, until their `exp`
// (plus the route's clock skew), so a token's signature is checked once, not per request: a
// repeat is a hash, one short lock and a look-up. A JWT the cache lacks is checked
// (`InboundCheck`) with the issuer's keys (`InboundKeys`, fetched on the token thread); when those
// cannot tell, the request waits for a fetch like a request waits for its identity's token. An
// opaque token (not three base64url segments) on a route with introspection is asked about on
// the token thread (InboundGate+Introspection.swift), the request parked the same way, and the
// answer kept for `introspectionCacheSeconds` at most.
//
// Only tokens that verified (or were called active) are kept: those the route admits, with
// their claim header lines rendered, and those that lack a scope (answered 403 from the cache).
// A forged token costs one signature check per request, as any other bad one; it is never
// stored. How a token came (Bearer, or DPoP with a proof of a key: InboundGate+DPoP.swift) is
// judged per request against the token's `cnf.jkt`, cached or not.

import Config
import Crypto
import EventLoop
import JOSE
import Locking
import OAuth2
import Tokens

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class InboundGate: Sendable {
    /// How an admitted caller's token was judged now.
    enum Admission: Equatable {
        /// Its signature and claims checked now.
        case checked
        /// Its introspection answer came now.
        case introspected
        /// Found among the tokens checked before.
        case cached
    }

    /// What became of a caller's token.
    enum Outcome {
        /// The route takes the request; `withheld`: the claims not passed on, with why.
        case admitted(CheckedCaller, how: Admission, withheld: [(claim: String, why: ClaimHeaderLines.Withholding)])
        /// Parked until the issuer's keys are read, or until `introspection` lands (the wake-up
        /// given is registered).
        case wait(introspection: PendingIntrospection?)
        case refused(InboundRefusal)
    }

    let rules: InboundRules
    /// What the route's refusals offer and name (`Bearer`, `DPoP algs`).
    let challenges: InboundChallenges
    private let check: InboundCheck
    /// The issuer's keys; nil without a token thread (then nothing can be verified).
    let keys: InboundKeys?
    let callers: CheckedCallers
    /// Where opaque tokens are asked about; nil: they are refused (`introspection` not configured,
    /// or no token thread).
    let introspection: IntrospectionSource?
    /// Opaque tokens asked about now, each with the requests parked on it.
    let pending = Locked<[TokenDigest: PendingIntrospection]>([:])
    let proofRules: DPoPProofRules
    /// The proofs accepted within their windows, for every worker (a replay may reach another).
    let proofs: Locked<ProofReplayMemory>
    /// Unix seconds now, when an introspection's answer lands on the token loop.
    let unixClock: @Sendable () -> Int64

    init(rules: InboundRules, keys: InboundKeys?, introspection: IntrospectionSource? = nil,
         unixClock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }) {
        self.rules = rules
        self.unixClock = unixClock
        self.keys = keys
        self.introspection = introspection
        check = InboundCheck(rules: rules)
        callers = CheckedCallers(capacity: rules.maxTokens)
        challenges = InboundChallenges(rules.dpop)
        proofRules = DPoPProofRules(algorithms: Set(rules.dpop.algorithms), windowSeconds: Int64(rules.dpop.windowSeconds))
        proofs = Locked(ProofReplayMemory())
    }

    /// Checks the token `bytes`, presented as `presentation`, at `unixTime` (seconds since 1970);
    /// `monotonic`: the loop's clock, in seconds, for the keys' rate limit. A request that must
    /// wait registers `wake`; one woken from a wait for an introspection passes it as `parkedOn`,
    /// one woken from a wait for keys `firstAsk: false` (it is counted among those waiting once).
    /// A token checked before costs its digest and a look-up: no copy of it is made.
    func admit(_ bytes: UnsafeRawBufferPointer, presentedAs presentation: TokenPresentation = .bearer, unixTime: Int64, monotonic: Double,
               wake: LoopWakeup?, parkedOn parked: PendingIntrospection? = nil, firstAsk: Bool = true) -> Outcome {
        // A request parked on an introspection takes its answer (also when it may not be reused).
        if let parked {
            guard let wake else { return .refused(Self.noWakeup) }
            guard let landing = parked.landing(orWake: wake) else { return .wait(introspection: parked) }
            return landed(landing, presentedAs: presentation)
        }
        let digest = SHA256.hash(bytes)
        let key = TokenDigest(digest)
        if let known = callers.caller(key, at: unixTime) { return judged(known, presentedAs: presentation, how: .cached, withheld: []) }
        if let introspection, !InboundCheck.isCompactJWS(bytes) {
            return introspect(bytes, digest: digest, key: key, at: introspection, presentedAs: presentation, wake: wake)
        }
        let token = String(decoding: bytes, as: UTF8.self)
        guard let keys else {
            return .refused(.keysUnavailable(reason: "the relay has no token thread to read the issuer's keys", retryAfterSeconds: 1))
        }
        var snapshot = keys.snapshot(at: monotonic)
        // A fetch may end between the snapshot and the need: then the check runs again with the
        // newer keys (twice at most: a fetch starts at most once per interval).
        for _ in 0..<3 {
            switch check.verdict(token, keys: snapshot.keys, now: unixTime) {
            case .valid(let caller):
                let rendered = ClaimHeaderLines.render(caller.claims, as: rules.claimHeaders)
                let admitted = CheckedCaller(token: CallerToken(value: token, digest: digest, expiresAt: caller.expiresAt),
                                             standing: .admitted, claimLines: rendered.lines, validUntil: validUntil(caller.expiresAt),
                                             boundKeyThumbprint: InboundCheck.boundKeyThumbprint(of: caller.claims))
                callers.remember(admitted, under: key)
                return judged(admitted, presentedAs: presentation, how: .checked, withheld: rendered.withheld)
            case .insufficientScope(let missing, let expiresAt, let bound):
                let lacking = CheckedCaller(token: CallerToken(value: token, digest: digest, expiresAt: expiresAt), standing: .lacksScopes(missing),
                                            claimLines: [], validUntil: validUntil(expiresAt), boundKeyThumbprint: bound)
                callers.remember(lacking, under: key)
                return judged(lacking, presentedAs: presentation, how: .checked, withheld: [])
            case .invalid(let reason):
                return .refused(.invalidToken(reason))
            case .needsKeys:
                switch keys.need(after: snapshot, at: monotonic, wakingOnResult: wake, firstAsk: firstAsk) {
                case .retry(let newer): snapshot = newer
                case .wait: return .wait(introspection: nil)
                case .noSuchKey: return .refused(.invalidToken(.unknownKey))
                case .unavailable(let reason, let retryAfter): return .refused(.keysUnavailable(reason: reason, retryAfterSeconds: retryAfter))
                }
            }
        }
        return .refused(.keysUnavailable(reason: "the issuer's keys changed while the token was checked", retryAfterSeconds: 1))
    }

    /// A known caller as this request presents it: a token bound to a DPoP key only with a proof
    /// of that key (RFC 9449 §7.2, also from the cache), then its scopes.
    func judged(_ caller: CheckedCaller, presentedAs presentation: TokenPresentation, how: Admission,
                withheld: [(claim: String, why: ClaimHeaderLines.Withholding)]) -> Outcome {
        if let mismatch = presentation.mismatch(withTokenBoundTo: caller.boundKeyThumbprint) { return .refused(.bindingMismatch(mismatch)) }
        switch caller.standing {
        case .admitted: return .admitted(caller, how: how, withheld: withheld)
        case .lacksScopes(let missing): return .refused(.insufficientScope(missing: missing, required: rules.requiredScopes))
        }
    }

    /// How many checked tokens the route keeps now.
    var cachedCount: Int { callers.count }

    static let noWakeup = InboundRefusal.introspectionUnavailable(reason: "the relay has no token thread to wait on", retryAfterSeconds: 1)

    private func validUntil(_ expiresAt: Int64) -> Int64 {
        let (sum, overflow) = expiresAt.addingReportingOverflow(Int64(rules.clockSkewSeconds))
        return overflow ? .max : sum
    }
}
