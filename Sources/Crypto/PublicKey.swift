internal import COpenSSL

/// A public key for verifying signatures: from PEM, from JWK parameters, or the half of a `PrivateKey`.
public struct PublicKey: Sendable, Equatable, CustomStringConvertible {
    let key: EVPKey

    init(key: EVPKey) {
        self.key = key
    }

    /// The first public key (SubjectPublicKeyInfo, `BEGIN PUBLIC KEY`) in `pem`.
    public init(pem: String) throws(CryptoError) {
        self.init(key: try EVPKey.read(pem: pem, .publicKey))
    }

    /// A key from JWK parameters. Refused when they do not make a valid key of a kind the relay
    /// uses: an EC point off the curve, an RSA modulus under 2048 bits or an even exponent.
    public init(components: PublicKeyComponents) throws(CryptoError) {
        self.init(key: try PublicKeyBuilder.build(components))
    }

    public var kind: KeyKind { key.kind }

    public func isValidSignature(_ signature: [UInt8], for message: [UInt8], algorithm: SignatureAlgorithm) -> Bool {
        key.verify(signature, for: message, algorithm: algorithm)
    }

    /// The key's parameters, for a JWK (the DPoP header's `jwk`, a JWKS the relay publishes).
    public func components() throws(CryptoError) -> PublicKeyComponents {
        try PublicKeyBuilder.components(of: key)
    }

    /// The key as SubjectPublicKeyInfo PEM.
    public func pemRepresentation() throws(CryptoError) -> String {
        try key.pem(.publicKey)
    }

    /// Same kind and same parameters (two `PublicKey`s read from the same PEM are equal).
    public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool {
        lhs.key === rhs.key || EVP_PKEY_eq(lhs.key.pointer, rhs.key.pointer) == 1
    }

    public var description: String { "PublicKey(\(kind))" }
}
