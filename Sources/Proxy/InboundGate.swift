// InboundGate: one route's check of its callers' bearer tokens (`inbound`), shared by every
// worker. It keeps the tokens it has checked in a bounded LRU keyed by their SHA-256, until their
// `exp` (plus the route's clock skew), so a token's signature is checked once, not per request:
// a repeat is a hash, one short lock and a look-up. A token the cache lacks is checked
// (`InboundCheck`) with the issuer's keys (`InboundKeys`, fetched on the token thread); when those
// cannot tell, the request waits for a fetch like a request waits for its identity's token.
//
// Only tokens that verified are kept: those the route admits, with their claim header lines
// rendered, and those that lack a scope (answered 403 from the cache). A forged token costs one
// signature check per request, as any other bad one; it is never stored.

import Config
import Crypto
import EventLoop
import JOSE
import Tokens

final class InboundGate: Sendable {
    /// What became of a caller's token.
    enum Outcome {
        /// The route takes the request. `fresh`: checked now (not from the cache); `withheld`: the
        /// claims not passed on, with why.
        case admitted(CheckedCaller, fresh: Bool, withheld: [(claim: String, why: ClaimHeaderLines.Withholding)])
        /// Parked until the issuer's keys are read (the wake-up given is registered).
        case wait
        case refused(InboundRefusal)
    }

    let rules: InboundRules
    private let check: InboundCheck
    /// The issuer's keys; nil without a token thread (then nothing can be verified).
    let keys: InboundKeys?
    private let callers: CheckedCallers

    init(rules: InboundRules, keys: InboundKeys?) {
        self.rules = rules
        self.keys = keys
        check = InboundCheck(rules: rules)
        callers = CheckedCallers(capacity: rules.maxTokens)
    }

    /// Checks the token `bytes` at `unixTime` (seconds since 1970); `monotonic`: the loop's clock,
    /// in seconds, for the keys' rate limit. A request that must wait for keys registers `wake`.
    /// A token checked before costs its digest and a look-up: no copy of it is made.
    func admit(_ bytes: UnsafeRawBufferPointer, unixTime: Int64, monotonic: Double, wake: LoopWakeup?) -> Outcome {
        let digest = SHA256.hash(bytes)
        let key = TokenDigest(digest)
        if let known = callers.caller(key, at: unixTime) {
            switch known.standing {
            case .admitted: return .admitted(known, fresh: false, withheld: [])
            case .lacksScopes(let missing): return .refused(.insufficientScope(missing: missing, required: rules.requiredScopes))
            }
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
                                             standing: .admitted, claimLines: rendered.lines, validUntil: validUntil(caller.expiresAt))
                callers.remember(admitted, under: key)
                return .admitted(admitted, fresh: true, withheld: rendered.withheld)
            case .insufficientScope(let missing, let expiresAt):
                callers.remember(CheckedCaller(token: CallerToken(value: token, digest: digest, expiresAt: expiresAt), standing: .lacksScopes(missing),
                                       claimLines: [], validUntil: validUntil(expiresAt)), under: key)
                return .refused(.insufficientScope(missing: missing, required: rules.requiredScopes))
            case .invalid(let reason):
                return .refused(.invalidToken(reason))
            case .needsKeys:
                switch keys.need(after: snapshot, at: monotonic, wakingOnResult: wake) {
                case .retry(let newer): snapshot = newer
                case .wait: return .wait
                case .noSuchKey: return .refused(.invalidToken(.unknownKey))
                case .unavailable(let reason, let retryAfter): return .refused(.keysUnavailable(reason: reason, retryAfterSeconds: retryAfter))
                }
            }
        }
        return .refused(.keysUnavailable(reason: "the issuer's keys changed while the token was checked", retryAfterSeconds: 1))
    }

    /// How many checked tokens the route keeps now.
    var cachedCount: Int { callers.count }

    private func validUntil(_ expiresAt: Int64) -> Int64 {
        let (sum, overflow) = expiresAt.addingReportingOverflow(Int64(rules.clockSkewSeconds))
        return overflow ? .max : sum
    }
}
