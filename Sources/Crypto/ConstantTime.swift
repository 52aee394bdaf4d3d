internal import COpenSSL

/// Comparison of secrets whose time does not depend on where they differ (`CRYPTO_memcmp`).
public enum ConstantTime {
    public static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }
}
