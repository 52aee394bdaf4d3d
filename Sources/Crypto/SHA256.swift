internal import COpenSSL

/// SHA-256, one shot (JWK thumbprints, DPoP `ath`, PKCE S256, settings fingerprints, the
/// `x5t#S256` of a client certificate).
public enum SHA256 {
    public static let byteCount = 32

    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        MessageDigest.hash(data, algorithm: MessageDigest.sha256, byteCount: byteCount, name: "SHA-256")
    }
}
