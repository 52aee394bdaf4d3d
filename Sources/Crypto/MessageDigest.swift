internal import COpenSSL

/// One-shot digests through `EVP_Digest`, for the hash functions the relay names (`SHA256`,
/// `SHA1`): one call, so no digest context outlives it.
enum MessageDigest {
    /// SHA-256 and SHA-1 as OpenSSL's default provider implements them, fetched once. `EVP_sha256()`
    /// would do, but OpenSSL 3 then fetches the implementation again on every call (a lock and a
    /// name look-up: some 500 ns, half the hash of a 900-byte token, which a per-caller route
    /// hashes on every request). A fetched `EVP_MD` is immutable and may be used by any thread at
    /// once (OpenSSL's threading rules), and these live as long as the process: `unsafe` only
    /// because Swift cannot see that of an OpaquePointer.
    nonisolated(unsafe) static let sha256: OpaquePointer = fetch("SHA256")
    nonisolated(unsafe) static let sha1: OpaquePointer = fetch("SHA1")

    private static func fetch(_ name: String) -> OpaquePointer {
        // Fails only when the default provider is missing, which nothing in the relay would survive.
        guard let algorithm = EVP_MD_fetch(nil, name, nil) else { preconditionFailure("EVP_MD_fetch(\(name)) failed") }
        return algorithm
    }

    /// The digest of `data` with `algorithm` (an `EVP_MD` OpenSSL owns), `byteCount` bytes long.
    static func hash(_ data: some Collection<UInt8>, algorithm: OpaquePointer, byteCount: Int, name: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        // Contiguous bytes (an array, a buffer) are hashed where they are; anything else is copied first.
        let result = data.withContiguousStorageIfAvailable { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, algorithm, nil)
            }
        } ?? Array(data).withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, algorithm, nil)
            }
        }
        // EVP_Digest with a built-in hash fails only on allocation failure, which Swift treats as fatal too.
        precondition(result == 1 && Int(length) == byteCount, "EVP_Digest(\(name)) failed")
        return digest
    }
}
