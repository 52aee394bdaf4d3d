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
