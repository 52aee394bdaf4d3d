internal import COpenSSL

/// Signing and verification with `EVP_DigestSign`/`EVP_DigestVerify`, one fresh `EVP_MD_CTX` per
/// operation (freed on every path), so one key serves any number of threads.
extension EVPKey {
    func sign(_ message: [UInt8], algorithm: SignatureAlgorithm) throws(CryptoError) -> [UInt8] {
        guard algorithm.fits(kind) else { throw .algorithmMismatch("\(algorithm) with an \(kind) key") }
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let context = try DigestContext()
        try context.initialize(key: self, algorithm: algorithm, signing: true)
        var length = 0
        let sized = message.withUnsafeBufferPointer { EVP_DigestSign(context.pointer, nil, &length, $0.baseAddress, $0.count) }
        guard sized == 1 else { throw .openSSL("signing") }
        var signature = [UInt8](repeating: 0, count: length)
        let result = message.withUnsafeBufferPointer { input in
            signature.withUnsafeMutableBufferPointer { EVP_DigestSign(context.pointer, $0.baseAddress, &length, input.baseAddress, input.count) }
        }
        guard result == 1 else { throw .openSSL("signing") }
        signature.removeLast(signature.count - length)
        return algorithm == .ecdsaP256SHA256 ? try ECDSASignature.raw(fromDER: signature) : signature
    }

    /// Whether `signature` is a valid signature of `message`; false also when the algorithm does
    /// not fit the key. OpenSSL's error queue is left empty either way.
    func verify(_ signature: [UInt8], for message: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        defer { OpenSSLErrors.clear() }
        guard algorithm.fits(kind) else { return false }
        let encoded: [UInt8]
        if algorithm == .ecdsaP256SHA256 {
            guard let der = ECDSASignature.der(fromRaw: signature) else { return false }
            encoded = der
        } else {
            encoded = signature
        }
        guard let context = try? DigestContext(),
              (try? context.initialize(key: self, algorithm: algorithm, signing: false)) != nil else { return false }
        let result = encoded.withUnsafeBufferPointer { signatureBytes in
            message.withUnsafeBufferPointer {
                EVP_DigestVerify(context.pointer, signatureBytes.baseAddress, signatureBytes.count, $0.baseAddress, $0.count)
            }
        }
        return result == 1
    }
}

/// One `EVP_MD_CTX`, freed in `deinit`. The `EVP_PKEY_CTX` that `EVP_DigestSignInit` hands back
/// belongs to it and is freed with it.
private final class DigestContext {
    let pointer: OpaquePointer

    init() throws(CryptoError) {
        guard let pointer = EVP_MD_CTX_new() else { throw .openSSL("EVP_MD_CTX_new") }
        self.pointer = pointer
    }

    deinit {
        EVP_MD_CTX_free(pointer)
    }

    func initialize(key: EVPKey, algorithm: SignatureAlgorithm, signing: Bool) throws(CryptoError) {
        // Ed25519 hashes inside the scheme and takes no digest.
        let digest = algorithm == .ed25519 ? nil : EVP_sha256()
        var keyContext: OpaquePointer?
        let result = signing
            ? EVP_DigestSignInit(pointer, &keyContext, digest, nil, key.pointer)
            : EVP_DigestVerifyInit(pointer, &keyContext, digest, nil, key.pointer)
        guard result == 1 else { throw .openSSL(signing ? "signing" : "verification") }
        if algorithm == .rsaPSSSHA256 {
            // RFC 7518 §3.5: MGF1 with SHA-256 (OpenSSL's default is the signature digest) and a
            // salt as long as the hash; verification insists on exactly that salt length.
            guard EVP_PKEY_CTX_set_rsa_padding(keyContext, RSA_PKCS1_PSS_PADDING) == 1,
                  EVP_PKEY_CTX_set_rsa_pss_saltlen(keyContext, RSA_PSS_SALTLEN_DIGEST) == 1 else {
                throw .openSSL("RSA-PSS parameters")
            }
        }
    }
}
