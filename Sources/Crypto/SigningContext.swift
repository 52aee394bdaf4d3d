internal import COpenSSL

/// One private key's signing state, kept by one thread for many signatures: a worker that signs
/// a DPoP proof for every request it forwards.
///
/// `PrivateKey.signature(for:algorithm:)` sets up a fresh `EVP_MD_CTX` per call, and with it
/// OpenSSL looks up the digest and the signature implementation again each time. Here that is
/// done once: the SHA-256 implementation is fetched and an `EVP_PKEY_CTX` initialised for signing
/// (with its padding for RSA), and each signature is then one digest and one `EVP_PKEY_sign` of
/// it. ECDSA signatures come out as the JWS r ‖ s, read from OpenSSL's DER without allocating.
/// Ed25519 hashes inside the scheme and cannot sign a digest, so it keeps the one-shot path.
///
/// Not thread-safe: an `EVP_PKEY_CTX` is one thread's. Make one per thread (the key itself may
/// be shared, see `EVPKey`).
public final class SigningContext {
    private let key: EVPKey
    public let algorithm: SignatureAlgorithm
    /// The prepared signing operation; nil for Ed25519.
    private let operation: OpaquePointer?
    private let sha256: OpaquePointer?
    /// OpenSSL's DER output for ECDSA (at most 72 bytes for P-256), or the RSA signature.
    private var output: [UInt8]

    /// A context for `key` signing with `algorithm`; refused when they do not fit.
    public init(key: PrivateKey, algorithm: SignatureAlgorithm) throws(CryptoError) {
        guard algorithm.fits(key.kind) else { throw .algorithmMismatch("\(algorithm) with an \(key.kind) key") }
        self.key = key.key
        self.algorithm = algorithm
        guard algorithm != .ed25519 else {
            operation = nil
            sha256 = nil
            output = []
            return
        }
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        guard let digest = EVP_MD_fetch(nil, "SHA256", nil) else { throw .openSSL("fetching SHA-256") }
        guard let context = EVP_PKEY_CTX_new(key.key.pointer, nil) else {
            EVP_MD_free(digest)
            throw .openSSL("EVP_PKEY_CTX_new")
        }
        var ready = EVP_PKEY_sign_init(context) == 1 && EVP_PKEY_CTX_set_signature_md(context, digest) == 1
        switch algorithm {
        case .rsaPKCS1v15SHA256:
            ready = ready && EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1
        case .rsaPSSSHA256:
            // RFC 7518 §3.5: MGF1 with SHA-256 and a salt as long as the hash.
            ready = ready && EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PSS_PADDING) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(context, digest) == 1
                && EVP_PKEY_CTX_set_rsa_pss_saltlen(context, RSA_PSS_SALTLEN_DIGEST) == 1
        case .ecdsaP256SHA256, .ed25519:
            break
        }
        guard ready else {
            let error = CryptoError.openSSL("preparing to sign")
            EVP_PKEY_CTX_free(context)
            EVP_MD_free(digest)
            throw error
        }
        operation = context
        sha256 = digest
        output = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(key.key.pointer)))
    }

    deinit {
        EVP_PKEY_CTX_free(operation)
        EVP_MD_free(sha256)
    }

    /// Signs `message` and appends the signature to `out`: r ‖ s for ECDSA (64 bytes), the
    /// signature itself otherwise.
    public func sign(_ message: UnsafeRawBufferPointer, appendingTo out: inout [UInt8]) throws(CryptoError) {
        guard let operation else {
            // Ed25519: the one-shot path, which allocates.
            out += try key.sign(Array(message), algorithm: algorithm)
            return
        }
        var digest = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let signed: Int? = withUnsafeMutableBytes(of: &digest) { digest in
            let hashed = EVP_Digest(message.baseAddress, message.count, digest.baseAddress, nil, sha256, nil) == 1
            guard hashed else { return nil }
            var length = output.count
            let result = output.withUnsafeMutableBufferPointer {
                EVP_PKEY_sign(operation, $0.baseAddress, &length, digest.baseAddress, digest.count)
            }
            return result == 1 ? length : nil
        }
        guard let signed else {
            throw .openSSL("signing")
        }
        if algorithm == .ecdsaP256SHA256 {
            guard ECDSASignature.appendRaw(fromDER: output.prefix(signed), to: &out) else {
                throw .operationFailed(operation: "signing", reason: "OpenSSL returned an ECDSA signature that is not DER")
            }
        } else {
            out += output.prefix(signed)
        }
    }
}
