internal import COpenSSL

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
