import SafeText

/// What the per-caller caches key a caller by: the SHA-256 digest of its token, as four words
/// (hashed and compared without touching the heap). Never the token itself, so a cache holds no
/// caller's credential; and only a holder of the token can name its entry.
public struct CallerKey: Hashable, Sendable, CustomStringConvertible {
    let first: UInt64
    let second: UInt64
    let third: UInt64
    let fourth: UInt64

    /// The key of a 32-byte SHA-256 `digest`; nil for any other length.
    public init?(digest: [UInt8]) {
        guard digest.count == 32 else { return nil }
        func word(_ start: Int) -> UInt64 {
            var value: UInt64 = 0
            for byte in digest[start..<start + 8] { value = value << 8 | UInt64(byte) }
            return value
        }
        first = word(0)
        second = word(8)
        third = word(16)
        fourth = word(24)
    }

    /// Never the digest: a log line says which identity, not which caller.
    public var description: String { "CallerKey(…)" }
}

extension CallerToken {
    /// The per-caller caches' key of this caller (nil for a digest that is not a SHA-256's 32 bytes).
    public var key: CallerKey? { CallerKey(digest: digest) }
}

/// A token the token endpoint issued on behalf of one caller, as the per-caller cache hands it
/// out. Times are monotonic seconds (the lifecycle's clock). Immutable: shared by every worker that
/// injects it.
public final class CallerIssuedToken: Sendable, CustomStringConvertible {
    /// The token: read it only to put it on a forwarded request.
    public let value: String
    /// `value`'s bytes, as the forwarded head carries them (made once, not per request).
    public let bytes: [UInt8]
    /// When the exchange was sent (its lifetime counts from there).
    public let issuedAt: Double
    /// The earlier of the exchanged token's expiry and the caller token's.
    public let expiresAt: Double
    /// Handed out until then, shortly before `expiresAt`.
    public let reuseUntil: Double
    /// Exchanged after an upstream refused this caller's previous token.
    let afterRefusal: Bool

    init(value: String, issuedAt: Double, expiresAt: Double, reuseUntil: Double, afterRefusal: Bool) {
        self.value = value
        bytes = Array(value.utf8)
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.reuseUntil = reuseUntil
        self.afterRefusal = afterRefusal
    }

    public var description: String { "CallerIssuedToken(\(redacted(value)))" }
}
