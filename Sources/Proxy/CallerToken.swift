// The caller's own token on a route whose identity exchanges it (`Grant.caller`): what the
// exchange sends as the subject, and what the per-caller cache keys the caller by (the digest).
//
// On a route that validates its callers' tokens (`inbound`) the validation gives it, with the
// token's verified `exp`; on any other, it is the request's `Authorization: Bearer` token
// (`init(bearerIn:)`), taken as it is: the token endpoint judges it when it is exchanged, and an
// unverified `exp` only shortens how long the exchanged token is reused (`CallerExchanges`).

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

    /// The cache key of this caller.
    var key: CallerKey { CallerKey(digest: digest)! }
}

extension CallerToken {
    /// The token of `head`'s one `Authorization: Bearer <token>` field (RFC 6750 §2.1: the scheme
    /// in any case, one or more spaces, a b64token); nil when there is none, when there are
    /// several `Authorization` fields, or when the value is not a bearer token.
    init?(bearerIn head: HTTPHead) {
        var found: UnsafeRawBufferPointer?
        for field in head.fields where field.known == .authorization {
            guard found == nil else { return nil }
            found = head.value(field)
        }
        guard let value = found, let token = Self.bearerToken(in: value) else { return nil }
        self.init(value: String(decoding: token, as: UTF8.self), digest: SHA256.hash(token), expiresAt: nil)
    }

    /// The b64token of a `Bearer` credential (`Bearer` in any case, then spaces), nil for any
    /// other value.
    static func bearerToken(in value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard value.count > scheme.count, ASCII.startsIgnoringCase(value, with: scheme) else { return nil }
        var start = scheme.count
        guard value[start] == UInt8(ascii: " ") else { return nil }
        while start < value.count && value[start] == UInt8(ascii: " ") { start += 1 }
        let token = UnsafeRawBufferPointer(rebasing: value[start...])
        return isB64Token(token) ? token : nil
    }

    private static let scheme = Array("bearer".utf8)

    /// RFC 6750 §2.1: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    static func isB64Token(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index < bytes.count, ASCII.isAlphanumeric(bytes[index]) || b64Punctuation.contains(bytes[index]) { index += 1 }
        guard index > 0 else { return false }
        while index < bytes.count, bytes[index] == UInt8(ascii: "=") { index += 1 }
        return index == bytes.count
    }

    private static let b64Punctuation: [UInt8] = Array("-._~+/".utf8)
}
