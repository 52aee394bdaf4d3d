internal import COpenSSL

/// SHA-256, one shot (JWK thumbprints, DPoP `ath`, PKCE S256, settings fingerprints, the
/// `x5t#S256` of a client certificate).
public enum SHA256 {
    public static let byteCount = 32

    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        MessageDigest.hash(data, algorithm: algorithm, byteCount: byteCount, name: "SHA-256")
    }

    /// OpenSSL's SHA-256, fetched once: `EVP_sha256()` makes every `EVP_Digest` look the
    /// implementation up again (a locked provider query), which cost more than hashing a token
    /// of a few hundred bytes, as a route's inbound check does on every request. A fetched
    /// `EVP_MD` is immutable and reference-counted: any thread may use it; it is never freed.
    nonisolated(unsafe) private static let algorithm: OpaquePointer = {
        guard let fetched = EVP_MD_fetch(nil, "SHA256", nil) else { preconditionFailure("OpenSSL has no SHA256") }
        return fetched
    }()
}
