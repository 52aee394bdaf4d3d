import Crypto

/// What signs a JWS: a private key with one asymmetric algorithm, or an HMAC secret (HS256, for
/// `client_secret_jwt`). The description shows the algorithm only.
public struct JWSSigner: Sendable, CustomStringConvertible {
    enum Material: Sendable {
        case privateKey(PrivateKey)
        case secret(SymmetricKey)
    }

    let material: Material
    public let algorithm: JWSAlgorithm

    /// A signer with `key` for `algorithm`; refused when they do not fit (ES256 needs P-256, ...).
    public init(privateKey: PrivateKey, algorithm: JWSAlgorithm) throws(JOSEError) {
        guard let scheme = algorithm.signatureAlgorithm, scheme.fits(privateKey.kind) else {
            throw .algorithmNotAllowed("\(algorithm.rawValue) does not fit an \(privateKey.kind) key")
        }
        self.material = .privateKey(privateKey)
        self.algorithm = algorithm
    }

    /// The algorithm a key of this kind signs with by default: RS256, ES256 or EdDSA.
    public init(privateKey: PrivateKey) {
        let algorithm: JWSAlgorithm = switch privateKey.kind {
        case .rsa: .rs256
        case .ecP256: .es256
        case .ed25519: .edDSA
        }
        self.material = .privateKey(privateKey)
        self.algorithm = algorithm
    }

    /// HS256 with `secret`, which RFC 7518 §3.2 requires to be at least 256 bits.
    public init(hmacSecret secret: SymmetricKey) throws(JOSEError) {
        guard secret.byteCount >= 32 else { throw .invalidKey("an HS256 secret must be at least 32 bytes (RFC 7518 §3.2)") }
        self.material = .secret(secret)
        self.algorithm = .hs256
    }

    /// The public key as a JWK (for a DPoP header), nil for an HMAC secret.
    public func publicJWK() throws(JOSEError) -> JWK? {
        guard case .privateKey(let key) = material else { return nil }
        return try JWK(publicKey: key.publicKey)
    }

    func signature(for input: [UInt8]) throws(JOSEError) -> [UInt8] {
        do {
            switch material {
            case .privateKey(let key): return try key.signature(for: input, algorithm: algorithm.signatureAlgorithm!)
            case .secret(let secret): return try HMACSHA256.authenticationCode(for: input, key: secret)
            }
        } catch {
            throw .crypto(error)
        }
    }

    public var description: String { "JWSSigner(\(algorithm.rawValue), redacted)" }
}
