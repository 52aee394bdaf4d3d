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
import Locking
import Tokens

/// A verified caller's token as the route keeps it.
final class CheckedCaller: Sendable {
    enum Standing: Equatable {
        case admitted
        /// Verified, but without these of the route's required scopes.
        case lacksScopes([String])
    }

    let token: CallerToken
    let standing: Standing
    /// The `claimHeaders` lines for the upstream (empty without any).
    let claimLines: [UInt8]
    /// Seconds since 1970 from which the entry is no longer used: `exp` plus the clock skew.
    let validUntil: Int64

    init(token: CallerToken, standing: Standing, claimLines: [UInt8], validUntil: Int64) {
        self.token = token
        self.standing = standing
        self.claimLines = claimLines
        self.validUntil = validUntil
    }
}

/// The SHA-256 of a token, as four words: the cache's key, hashed and compared without touching
/// an array.
struct TokenDigest: Hashable, Sendable {
    let words: (UInt64, UInt64, UInt64, UInt64)

    init(_ digest: [UInt8]) {
        precondition(digest.count == SHA256.byteCount)
        func word(_ at: Int) -> UInt64 { digest[at..<at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        words = (word(0), word(8), word(16), word(24))
    }

    static func == (a: TokenDigest, b: TokenDigest) -> Bool { a.words == b.words }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}

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
    private let cache: Locked<BoundedLRU<TokenDigest, CheckedCaller>>

    init(rules: InboundRules, keys: InboundKeys?) {
        self.rules = rules
        self.keys = keys
        check = InboundCheck(rules: rules)
        cache = Locked(BoundedLRU(capacity: rules.maxTokens))
    }

    /// Checks `token` at `unixTime` (seconds since 1970); `monotonic`: the loop's clock, in seconds,
    /// for the keys' rate limit. A request that must wait for keys registers `wake`.
    func admit(_ token: String, unixTime: Int64, monotonic: Double, wake: LoopWakeup?) -> Outcome {
        let digest = SHA256.hash(token.utf8)
        let key = TokenDigest(digest)
        if let known = cached(key, at: unixTime) {
            switch known.standing {
            case .admitted: return .admitted(known, fresh: false, withheld: [])
            case .lacksScopes(let missing): return .refused(.insufficientScope(missing: missing, required: rules.requiredScopes))
            }
        }
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
                let checked = CheckedCaller(token: CallerToken(value: token, digest: digest, expiresAt: caller.expiresAt),
                                            standing: .admitted, claimLines: rendered.lines, validUntil: validUntil(caller.expiresAt))
                remember(checked, under: key)
                return .admitted(checked, fresh: true, withheld: rendered.withheld)
            case .insufficientScope(let missing, let expiresAt):
                remember(CheckedCaller(token: CallerToken(value: token, digest: digest, expiresAt: expiresAt), standing: .lacksScopes(missing),
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
    var cachedCount: Int { cache.withLock { $0.count } }

    private func cached(_ key: TokenDigest, at unixTime: Int64) -> CheckedCaller? {
        cache.withLock { lru in
            guard let known = lru.value(for: key) else { return nil }
            guard unixTime < known.validUntil else {
                lru.remove(key)
                return nil
            }
            return known
        }
    }

    private func remember(_ checked: CheckedCaller, under key: TokenDigest) {
        // The entry goes out of the lock with the one it evicted, if any: released outside it.
        let evicted = cache.withLock { $0.set(checked, for: key) }
        _ = evicted
    }

    private func validUntil(_ expiresAt: Int64) -> Int64 {
        let (sum, overflow) = expiresAt.addingReportingOverflow(Int64(rules.clockSkewSeconds))
        return overflow ? .max : sum
    }
}
