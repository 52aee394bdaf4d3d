internal import COpenSSL

/// Random bytes from OpenSSL's CSPRNG (`RAND_bytes`), for keys, nonces and `jti`s.
///
/// Code that should be testable with fixed bytes takes `some RandomNumberGenerator` instead and
/// is handed a `SecureRandomNumberGenerator` in production.
public enum SecureRandom {
    /// `count` random bytes. OpenSSL fails only when it cannot seed itself, which leaves no safe
    /// way on: the caller gets the error rather than predictable bytes.
    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count)) }
        guard result == 1 else { throw .openSSL("RAND_bytes") }
        return bytes
    }
}
