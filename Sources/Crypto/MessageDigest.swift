internal import COpenSSL

/// One-shot digests through `EVP_Digest`, for the hash functions the relay names (`SHA256`,
/// `SHA1`): one call, so no digest context outlives it.
enum MessageDigest {
    /// The digest of `data` with `algorithm` (an `EVP_MD` OpenSSL owns), `byteCount` bytes long.
    static func hash(_ data: some Collection<UInt8>, algorithm: OpaquePointer, byteCount: Int, name: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let bytes = Array(data)
        let result = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, algorithm, nil)
            }
        }
        // EVP_Digest with a built-in hash fails only on allocation failure, which Swift treats as fatal too.
        precondition(result == 1 && Int(length) == byteCount, "EVP_Digest(\(name)) failed")
        return digest
    }
}
