internal import COpenSSL

/// SHA-1, one shot, for one use only: the `x5t` thumbprint of a client certificate (RFC 7515
/// §4.1.7), which Microsoft Entra ID and ADFS still read. Never for a signature or a secret:
/// SHA-1 collides, so nothing the relay checks may rest on it.
public enum SHA1 {
    public static let byteCount = 20

    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        MessageDigest.hash(data, algorithm: EVP_sha1(), byteCount: byteCount, name: "SHA-1")
    }
}
