internal import COpenSSL

/// SHA-256, one shot (JWK thumbprints, DPoP `ath`, PKCE S256, settings fingerprints, the
/// `x5t#S256` of a client certificate).
public enum SHA256 {
    public static let byteCount = 32

    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        if let digest = data.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) { return digest }
        return Array(data).withUnsafeBytes { hash($0) }
    }

    /// The digest of `input`, through OpenSSL's own SHA-256 without an EVP context
    /// (`shim_SHA256_oneshot`: a digest of a caller's token on every request of an inbound route
    /// costs half what EVP_Digest costs).
    public static func hash(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        var result: Int32 = 0
        let digest = [UInt8](unsafeUninitializedCapacity: byteCount) { output, count in
            result = shim_SHA256_oneshot(input.baseAddress, input.count, output.baseAddress)
            count = byteCount
        }
        // It fails only when the library is broken: nothing can be hashed then.
        precondition(result == 1, "SHA-256 failed")
        return digest
    }
}
