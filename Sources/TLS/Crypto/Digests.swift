internal import COpenSSL

/// SHA-256, one shot (JWK thumbprints, DPoP `ath`, PKCE S256, settings fingerprints).
public enum SHA256 {
    public static let byteCount = 32

    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let bytes = Array(data)
        let result = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        // EVP_Digest with SHA-256 fails only on allocation failure, which Swift treats as fatal too.
        precondition(result == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return digest
    }
}

/// HMAC-SHA256 (RFC 2104), for JWS HS256 (`client_secret_jwt`).
public enum HMACSHA256 {
    public static let byteCount = 32

    /// The authentication code of `message`. The key must not be empty.
    public static func authenticationCode(for message: some Collection<UInt8>, key: SymmetricKey) throws(CryptoError) -> [UInt8] {
        guard key.byteCount > 0 else { throw .invalidLength("an HMAC key must not be empty") }
        var code = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let bytes = Array(message)
        let result = key.withUnsafeBytes { keyBytes in
            bytes.withUnsafeBytes { input in
                code.withUnsafeMutableBufferPointer { output in
                    HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count),
                         input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, output.baseAddress, &length)
                }
            }
        }
        guard result != nil, length == 32 else { throw .openSSL("HMAC-SHA256") }
        return code
    }

    /// Whether `code` is the authentication code of `message`, compared in constant time.
    public static func isValid(_ code: some Collection<UInt8>, for message: some Collection<UInt8>, key: SymmetricKey) -> Bool {
        guard let expected = try? authenticationCode(for: message, key: key) else { return false }
        return ConstantTime.equal(expected, Array(code))
    }
}

/// Comparison of secrets whose time does not depend on where they differ (`CRYPTO_memcmp`).
public enum ConstantTime {
    public static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }
}
