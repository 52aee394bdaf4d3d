internal import COpenSSL
import Synchronization

/// One `EVP_PKEY`, owned: freed exactly once, in `deinit`. `PrivateKey` and the `PublicKey` taken
/// from it share one `EVPKey` object (Swift's reference count, not OpenSSL's, keeps it alive).
///
/// Lifetime and threads: the key is complete when `init` returns and nothing changes it after;
/// OpenSSL 3 allows one `EVP_PKEY` to sign and verify from many threads at once as long as it is
/// not modified (each operation has its own `EVP_MD_CTX`/`EVP_PKEY_CTX`). Hence `@unchecked
/// Sendable`: the only state is the immutable pointer and the `kind` read at creation.
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer
    let kind: KeyKind

    /// How many exist (`PrivateKey.liveKeys`), so tests can show every key was freed.
    static let live = Atomic<Int>(0)

    /// Takes ownership of `pointer`; frees it (through `deinit` or here) if the key is of a kind
    /// the relay does not use.
    init(adopting pointer: OpaquePointer) throws(CryptoError) {
        guard let kind = Self.kind(of: pointer) else {
            let what = Self.describeUnsupported(pointer)
            EVP_PKEY_free(pointer)
            throw .unsupportedKey(what)
        }
        self.pointer = pointer
        self.kind = kind
        Self.live.add(1, ordering: .relaxed)
    }

    deinit {
        EVP_PKEY_free(pointer)
        Self.live.subtract(1, ordering: .relaxed)
    }

    private static func kind(of key: OpaquePointer) -> KeyKind? {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA:
            let bits = Int(EVP_PKEY_get_bits(key))
            return (2048...16384).contains(bits) ? .rsa(bits: bits) : nil
        case EVP_PKEY_EC:
            return groupName(of: key) == "prime256v1" ? .ecP256 : nil
        case EVP_PKEY_ED25519:
            return .ed25519
        default:
            return nil
        }
    }

    private static func describeUnsupported(_ key: OpaquePointer) -> String {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA: "RSA keys must have 2048 to 16384 bits, this one has \(EVP_PKEY_get_bits(key))"
        case EVP_PKEY_EC: "EC keys must be on P-256, this one is on \(groupName(of: key) ?? "an unnamed curve")"
        default: "only RSA, EC P-256 and Ed25519 keys are supported"
        }
    }

    private static func groupName(of key: OpaquePointer) -> String? {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { return nil }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: PEM

    enum PEMContent { case privateKey, publicKey }

    /// Reads the first key of `content` from PEM text (PKCS#8, traditional RSA/EC, or SPKI).
    /// Encrypted keys are refused rather than prompting for a passphrase on the terminal.
    static func read(pem: String, _ content: PEMContent) throws(CryptoError) -> EVPKey {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        var text = Array(pem.utf8)
        // Our working copy of the key text does not outlive the read (the caller's String is theirs).
        defer { text.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        let key: OpaquePointer? = text.withUnsafeMutableBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            switch content {
            case .privateKey: return PEM_read_bio_PrivateKey(bio, nil, refusePassphrase, nil)
            case .publicKey: return PEM_read_bio_PUBKEY(bio, nil, refusePassphrase, nil)
            }
        }
        guard let key else {
            let expected = content == .privateKey ? "no unencrypted private key" : "no public key"
            throw .unreadableKey(reason: "\(expected) in the PEM text (\(OpenSSLErrors.takeReason(fallback: "unknown reason")))")
        }
        return try EVPKey(adopting: key)
    }

    /// The key as PEM: PKCS#8 for a private key, SubjectPublicKeyInfo for a public one.
    func pem(_ content: PEMContent) throws(CryptoError) -> String {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        guard let bio = BIO_new(BIO_s_mem()) else { throw .openSSL("BIO_new") }
        defer { BIO_free(bio) }
        let result = switch content {
        case .privateKey: PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil)
        case .publicKey: PEM_write_bio_PUBKEY(bio, pointer)
        }
        guard result == 1 else { throw .openSSL("writing a PEM key") }
        var data: UnsafeMutablePointer<CChar>?
        let length = shim_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { throw .openSSL("writing a PEM key") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }

    // MARK: Generation

    static func generate(_ kind: KeyKind) throws(CryptoError) -> EVPKey {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let type = switch kind {
        case .rsa: EVP_PKEY_RSA
        case .ecP256: EVP_PKEY_EC
        case .ed25519: EVP_PKEY_ED25519
        }
        // By type id, not name: a context keeps the pointer to the name it was made with.
        guard let context = EVP_PKEY_CTX_new_id(type, nil) else { throw .openSSL("EVP_PKEY_CTX_new_id") }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else { throw .openSSL("key generation") }
        switch kind {
        case .rsa(let bits):
            guard (2048...16384).contains(bits) else { throw .unsupportedKey("RSA keys must have 2048 to 16384 bits") }
            guard EVP_PKEY_CTX_set_rsa_keygen_bits(context, Int32(bits)) == 1 else { throw .openSSL("RSA key size") }
        case .ecP256:
            guard EVP_PKEY_CTX_set_group_name(context, "P-256") == 1 else { throw .openSSL("EC curve") }
        case .ed25519:
            break
        }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(context, &key) == 1, let key else { throw .openSSL("key generation") }
        return try EVPKey(adopting: key)
    }
}

/// The passphrase callback for PEM reading: there is never a passphrase, so encrypted keys fail
/// instead of OpenSSL's default callback reading one from the terminal.
private func refusePassphrase(_ buffer: UnsafeMutablePointer<CChar>?, _ size: Int32, _ writing: Int32,
                              _ context: UnsafeMutableRawPointer?) -> Int32 {
    0
}
