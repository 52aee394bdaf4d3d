internal import COpenSSL

/// One-shot digests through `EVP_Digest`, for the hash functions the relay names (`SHA256`,
/// `SHA1`): one call, so no digest context outlives it.
enum MessageDigest {
    /// The digest of `data` with `algorithm` (an `EVP_MD` OpenSSL owns), `byteCount` bytes long.
    /// Contiguous input (an array, a native string's UTF-8) is hashed where it is, without a copy.
    static func hash(_ data: some Collection<UInt8>, algorithm: OpaquePointer, byteCount: Int, name: String) -> [UInt8] {
        if let digest = data.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0), algorithm: algorithm, byteCount: byteCount, name: name) }) {
            return digest
        }
        return Array(data).withUnsafeBytes { hash($0, algorithm: algorithm, byteCount: byteCount, name: name) }
    }

    static func hash(_ input: UnsafeRawBufferPointer, algorithm: OpaquePointer, byteCount: Int, name: String) -> [UInt8] {
        var length: UInt32 = 0
        var result: Int32 = 0
        let digest = [UInt8](unsafeUninitializedCapacity: byteCount) { output, count in
            result = EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, algorithm, nil)
            count = byteCount
        }
        // EVP_Digest with a built-in hash fails only on allocation failure, which Swift treats as fatal too.
        precondition(result == 1 && Int(length) == byteCount, "EVP_Digest(\(name)) failed")
        return digest
    }
}
