import FoundationEssentials
import JSON

/// The claims of a JWT access token, read without verifying its signature: the relay only
/// needs to know when the token expires, not whether to trust it.
enum JWTClaims {
    /// The `exp` claim (seconds since 1970) of a compact JWS (`header.payload.signature`,
    /// base64url), or nil when the token is not such a JWT or has no numeric `exp`.
    static func expiry(ofToken token: String) -> Double? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = base64URLDecode(parts[1]),
              let seconds = (try? JSONValue(parsing: Array(payload)))?["exp"]?.double else { return nil }
        return seconds.isFinite ? seconds : nil
    }

    /// base64url without padding (RFC 7515 §2), as JWTs use it.
    static func base64URLDecode(_ text: Substring) -> Data? {
        var base64 = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
