internal import COpenSSL

/// AES-256-GCM (NIST SP 800-38D) with a 96-bit nonce and a 128-bit tag, for the token store's
/// entries: the associated data (identity name, format version, settings fingerprint) is
/// authenticated but not encrypted, so an entry moved onto another identity fails to open.
///
/// A nonce must never repeat under one key; `seal` draws a fresh one unless a test passes its own.
public enum AESGCM {
    public static let keyByteCount = 32
    public static let nonceByteCount = 12
    public static let tagByteCount = 16

    /// What `seal` produces; `combined` (nonce ‖ ciphertext ‖ tag) is what gets stored.
    public struct SealedBox: Sendable, Equatable {
        public let nonce: [UInt8]
        public let ciphertext: [UInt8]
        public let tag: [UInt8]

        public init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) throws(CryptoError) {
            guard nonce.count == AESGCM.nonceByteCount else { throw .invalidLength("an AES-GCM nonce is 12 bytes") }
            guard tag.count == AESGCM.tagByteCount else { throw .invalidLength("an AES-GCM tag is 16 bytes") }
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }

        /// Splits nonce ‖ ciphertext ‖ tag.
        public init(combined: [UInt8]) throws(CryptoError) {
            guard combined.count >= AESGCM.nonceByteCount + AESGCM.tagByteCount else {
                throw .invalidLength("a sealed AES-GCM box is at least 28 bytes")
            }
            try self.init(nonce: Array(combined.prefix(AESGCM.nonceByteCount)),
                          ciphertext: Array(combined.dropFirst(AESGCM.nonceByteCount).dropLast(AESGCM.tagByteCount)),
                          tag: Array(combined.suffix(AESGCM.tagByteCount)))
        }

        public var combined: [UInt8] { nonce + ciphertext + tag }
    }

    /// Encrypts and authenticates `plaintext`, and authenticates `associatedData`.
    public static func seal(_ plaintext: [UInt8], key: SymmetricKey, authenticating associatedData: [UInt8] = [],
                            nonce: [UInt8]? = nil) throws(CryptoError) -> SealedBox {
        let nonce = if let nonce { nonce } else { try SecureRandom.bytes(nonceByteCount) }
        let context = try Context(key: key, nonce: nonce, encrypting: true)
        try context.update(associatedData: associatedData)
        var ciphertext = try context.update(plaintext)
        ciphertext += try context.finish()
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        let result = tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), $0.baseAddress) }
        guard result == 1 else { throw .openSSL("AES-GCM tag") }
        return try SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
    }

    /// The plaintext of `box`, or `.authenticationFailed` when the key, the associated data,
    /// the nonce, the ciphertext or the tag differ from what was sealed. Nothing of the
    /// plaintext is returned unless the tag verifies.
    public static func open(_ box: SealedBox, key: SymmetricKey, authenticating associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        let context = try Context(key: key, nonce: box.nonce, encrypting: false)
        try context.update(associatedData: associatedData)
        var plaintext = try context.update(box.ciphertext)
        var tag = box.tag
        let setTag = tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), $0.baseAddress) }
        guard setTag == 1 else { throw .openSSL("AES-GCM tag") }
        guard let last = try? context.finish() else {
            ERR_clear_error()
            plaintext.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) }
            throw .authenticationFailed
        }
        return plaintext + last
    }

    /// One `EVP_CIPHER_CTX`, freed in `deinit` whatever path the operation took.
    private final class Context {
        let pointer: OpaquePointer
        let encrypting: Bool

        init(key: SymmetricKey, nonce: [UInt8], encrypting: Bool) throws(CryptoError) {
            guard key.byteCount == AESGCM.keyByteCount else { throw .invalidLength("an AES-256 key is 32 bytes") }
            guard nonce.count == AESGCM.nonceByteCount else { throw .invalidLength("an AES-GCM nonce is 12 bytes") }
            OpenSSLErrors.clear()
            guard let pointer = EVP_CIPHER_CTX_new() else { throw .openSSL("EVP_CIPHER_CTX_new") }
            self.pointer = pointer
            self.encrypting = encrypting
            // The default IV length of EVP_aes_256_gcm is 12 bytes, the only one we use.
            let result = key.withUnsafeBytes { keyBytes in
                nonce.withUnsafeBytes { nonceBytes in
                    EVP_CipherInit_ex(pointer, EVP_aes_256_gcm(), nil, keyBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                      nonceBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), encrypting ? 1 : 0)
                }
            }
            guard result == 1 else { throw .openSSL("AES-GCM init") }
        }

        deinit {
            EVP_CIPHER_CTX_free(pointer)
        }

        func update(associatedData: [UInt8]) throws(CryptoError) {
            guard !associatedData.isEmpty else { return }
            var written: Int32 = 0
            let result = associatedData.withUnsafeBytes {
                EVP_CipherUpdate(pointer, nil, &written, $0.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32($0.count))
            }
            guard result == 1 else { throw .openSSL("AES-GCM associated data") }
        }

        func update(_ input: [UInt8]) throws(CryptoError) -> [UInt8] {
            guard !input.isEmpty else { return [] }
            guard input.count < Int(Int32.max) - 32 else { throw .invalidLength("AES-GCM input too large") }
            var output = [UInt8](repeating: 0, count: input.count + 16)
            var written: Int32 = 0
            let result = input.withUnsafeBytes { inputBytes in
                output.withUnsafeMutableBufferPointer {
                    EVP_CipherUpdate(pointer, $0.baseAddress, &written, inputBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(inputBytes.count))
                }
            }
            guard result == 1 else { throw .openSSL("AES-GCM update") }
            return Array(output.prefix(Int(written)))
        }

        /// GCM writes nothing at the end; when opening, this is where the tag is checked.
        func finish() throws(CryptoError) -> [UInt8] {
            var output = [UInt8](repeating: 0, count: 16)
            var written: Int32 = 0
            let result = output.withUnsafeMutableBufferPointer { EVP_CipherFinal_ex(pointer, $0.baseAddress, &written) }
            guard result == 1 else { throw encrypting ? .openSSL("AES-GCM final") : .authenticationFailed }
            return Array(output.prefix(Int(written)))
        }
    }
}
