// The caller's own token on a route whose identity exchanges it (`Grant.caller`): what the
// exchange sends as the subject, and what the per-caller cache keys the caller by (the digest).
//
// On a route that validates its callers' tokens (`inbound`) the validation gives it, with the
// token's verified `exp`; on any other, it is the request's `Authorization: Bearer` token
// (`init(bearerIn:)`), taken as it is: the token endpoint judges it when it is exchanged, and an
// unverified `exp` only shortens how long the exchanged token is reused (`CallerExchanges`).
//
// Its syntax (RFC 6750's b64token) is checked only before its first exchange
// (`WorkerTokens+Callers`): a cached entry stands for these very bytes, so a request that finds one
// pays for the hash alone, not for a second pass over the token.

import Crypto
import HTTP1
import HTTPFields
import Tokens

/// A caller's bearer token. `digest` is its SHA-256, the per-caller cache's key (never the
/// token); `expiresAt` its verified `exp` (seconds since 1970) when a validation read it.
struct CallerToken {
    let value: String
    let digest: [UInt8]
    let expiresAt: Int64?

    /// The cache key of this caller (nil for a digest that is not a SHA-256's 32 bytes).
    var key: CallerKey? { CallerKey(digest: digest) }
}

extension CallerToken {
    /// The token of `head`'s one `Authorization: Bearer <token>` field (RFC 6750 §2.1: the scheme
    /// in any case, one or more spaces, the token); nil when there is none, when there are several
    /// `Authorization` fields, or when the value is not a bearer credential.
    init?(bearerIn head: HTTPHead) {
        var found: UnsafeRawBufferPointer?
        for field in head.fields where field.known == .authorization {
            guard found == nil else { return nil }
            found = head.value(field)
        }
        guard let value = found, let token = Self.bearerToken(in: value) else { return nil }
        self.init(value: String(decoding: token, as: UTF8.self), digest: SHA256.hash(token), expiresAt: nil)
    }

    /// The token of a `Bearer` credential (`Bearer` in any case, then spaces, then at least one
    /// byte), nil for any other value. Its syntax is `isWellFormed`'s to judge.
    static func bearerToken(in value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard value.count > scheme.count, ASCII.startsIgnoringCase(value, with: scheme) else { return nil }
        var start = scheme.count
        guard value[start] == UInt8(ascii: " ") else { return nil }
        while start < value.count && value[start] == UInt8(ascii: " ") { start += 1 }
        return start < value.count ? UnsafeRawBufferPointer(rebasing: value[start...]) : nil
    }

    /// The token is an RFC 6750 b64token (checked before its first exchange only).
    var isWellFormed: Bool {
        var value = value
        return value.withUTF8 { Self.isB64Token(UnsafeRawBufferPointer($0)) }
    }

    private static let scheme = Array("bearer".utf8)

    /// RFC 6750 §2.1: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`, one bitmap
    /// look-up a byte.
    static func isB64Token(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard var byte = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        let end = byte + bytes.count
        let start = byte
        while byte < end, isB64Character(byte.pointee) { byte += 1 }
        guard byte > start else { return false }
        while byte < end, byte.pointee == UInt8(ascii: "=") { byte += 1 }
        return byte == end
    }

    /// The b64token characters as a bitmap of the 128 ASCII bytes: bit `b` of `b64Low` for a byte
    /// `b` below 64 (`+`, `-`, `.`, `/`, the digits), bit `b - 64` of `b64High` for the others
    /// (the letters, `_`, `~`). `CallerTokenTests` checks it against the RFC's list.
    private static let b64Low: UInt64 = 0x03ffe80000000000
    private static let b64High: UInt64 = 0x47fffffe87fffffe

    @inline(__always)
    private static func isB64Character(_ byte: UInt8) -> Bool {
        let map = byte < 64 ? b64Low : (byte < 128 ? b64High : 0)
        return map >> UInt64(byte & 63) & 1 == 1
    }
}
