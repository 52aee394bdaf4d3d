import Crypto

/// Comparison of secret strings (nonces) in constant time, over their UTF-8 bytes.
enum ConstantTimeText {
    static func equal(_ lhs: String, _ rhs: String) -> Bool {
        ConstantTime.equal(Array(lhs.utf8), Array(rhs.utf8))
    }
}
