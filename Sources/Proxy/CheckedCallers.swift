// CheckedCallers: the tokens a route's inbound check verified, shared by every worker: a bounded
// LRU (`inbound.maxTokens`) keyed by the token's SHA-256, each entry kept until its `exp` plus the
// route's clock skew. One lock, held for a look-up or an insertion only; an entry evicted or
// expired is released outside it.

import Crypto
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
    /// Seconds since 1970 from which the entry is no longer used: a JWT's `exp` plus the clock
    /// skew; an introspection answer's reuse (`introspectionCacheSeconds`, before its `exp`).
    let validUntil: Int64
    /// The token's `cnf.jkt` (RFC 9449 §6): it is taken only with a DPoP proof of that key,
    /// judged per request (`TokenPresentation.mismatch`).
    let boundKeyThumbprint: String?

    init(token: CallerToken, standing: Standing, claimLines: [UInt8], validUntil: Int64, boundKeyThumbprint: String? = nil) {
        self.token = token
        self.standing = standing
        self.claimLines = claimLines
        self.validUntil = validUntil
        self.boundKeyThumbprint = boundKeyThumbprint
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

final class CheckedCallers: Sendable {
    private let entries: Locked<BoundedLRU<TokenDigest, CheckedCaller>>

    init(capacity: Int) {
        entries = Locked(BoundedLRU(capacity: capacity))
    }

    /// The caller checked under `key`, while it is valid at `unixTime` (an expired one is forgotten).
    func caller(_ key: TokenDigest, at unixTime: Int64) -> CheckedCaller? {
        var expired: CheckedCaller?
        let found = entries.withLock { lru -> CheckedCaller? in
            guard let known = lru.value(for: key) else { return nil }
            guard unixTime < known.validUntil else {
                expired = lru.remove(key)
                return nil
            }
            return known
        }
        _ = expired
        return found
    }

    /// Keeps `caller` under `key`, forgetting the least recently used entry when full.
    func remember(_ caller: CheckedCaller, under key: TokenDigest) {
        let evicted = entries.withLock { $0.set(caller, for: key) }
        _ = evicted
    }

    var count: Int { entries.withLock { $0.count } }
}
