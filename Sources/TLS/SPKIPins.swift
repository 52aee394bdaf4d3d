internal import COpenSSL

/// SPKI SHA-256 pins (`sha256/<base64>` in the config): the SHA-256 of a certificate's DER
/// SubjectPublicKeyInfo, the same hash as HPKP and `curl --pinnedpubkey`.
///
/// Which certificates may match: with verification on, the verified chain (leaf to trusted
/// root), so a pin on a CA key works; a certificate the server merely sent along, outside the
/// verified path, never counts, or a misissued certificate could carry the real server's
/// certificate as decoration. With `insecureSkipVerify`, only the leaf: the handshake proves
/// possession of the leaf's key and nothing else.
struct SPKIPins: Sendable {
    static let digestLength = 32

    let digests: [[UInt8]]

    var isEmpty: Bool { digests.isEmpty }

    /// True when a certificate that the handshake vouches for has a pinned key.
    func matchChain(of ssl: OpaquePointer, verified: Bool) -> Bool {
        if verified {
            guard let chain = SSL_get0_verified_chain(ssl) else { return false }
            for index in 0..<shim_sk_X509_num(chain) {
                if let certificate = shim_sk_X509_value(chain, index), matches(certificate) { return true }
            }
            return false
        }
        guard let leaf = SSL_get0_peer_certificate(ssl) else { return false }
        return matches(leaf)
    }

    private func matches(_ certificate: OpaquePointer) -> Bool {
        guard let digest = Self.spkiSHA256(certificate) else { return false }
        return digests.contains(digest)
    }

    /// The SHA-256 of the certificate's DER SubjectPublicKeyInfo.
    static func spkiSHA256(_ certificate: OpaquePointer) -> [UInt8]? {
        guard let publicKey = X509_get_X509_PUBKEY(certificate) else { return nil }
        let length = i2d_X509_PUBKEY(publicKey, nil)
        guard length > 0 else { return nil }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(length)) { der -> [UInt8]? in
            var cursor = der.baseAddress
            guard i2d_X509_PUBKEY(publicKey, &cursor) == length else { return nil }
            var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var digestLength: UInt32 = 0
            guard EVP_Digest(der.baseAddress, Int(length), &digest, &digestLength, EVP_sha256(), nil) == 1 else {
                return nil
            }
            return Array(digest.prefix(Int(digestLength)))
        }
    }
}
