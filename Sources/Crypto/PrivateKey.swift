/// A private key for signing: read from PEM (a `clientKeyFile`, a DPoP `keyFile`) or generated.
///
/// The description names the key's kind only; the key itself leaves only through `pemRepresentation()`
/// (for the encrypted token store) and as its public half.
public struct PrivateKey: Sendable, CustomStringConvertible {
    let key: EVPKey

    private init(key: EVPKey) {
        self.key = key
    }

    /// The first private key in `pem` (PKCS#8 or traditional RSA/EC, unencrypted).
    public init(pem: String) throws(CryptoError) {
        self.init(key: try EVPKey.read(pem: pem, .privateKey))
    }

    /// A fresh key from OpenSSL's generator.
    public static func generate(_ kind: KeyKind) throws(CryptoError) -> PrivateKey {
        PrivateKey(key: try EVPKey.generate(kind))
    }

    public var kind: KeyKind { key.kind }

    /// The public half, sharing the same OpenSSL key.
    public var publicKey: PublicKey { PublicKey(key: key) }

    /// The signature of `message`; for ECDSA the JWS form r ‖ s.
    public func signature(for message: [UInt8], algorithm: SignatureAlgorithm) throws(CryptoError) -> [UInt8] {
        try key.sign(message, algorithm: algorithm)
    }

    /// The key as unencrypted PKCS#8 PEM. Secret: only for storage that encrypts it.
    public func pemRepresentation() throws(CryptoError) -> String {
        try key.pem(.privateKey)
    }

    public var description: String { "PrivateKey(\(kind), redacted)" }

    /// The OpenSSL key, for TLS (`SSL_CTX_use_PrivateKey`, which takes a reference of its own);
    /// valid while `self` lives. `package`: no module outside the relay reaches the key.
    package var openSSLKey: OpaquePointer { key.pointer }

    /// OpenSSL keys (private or public) not yet freed, for leak checks in tests.
    public static var liveKeys: Int { EVPKey.live.load(ordering: .relaxed) }
}
