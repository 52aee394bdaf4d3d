import Crypto

/// What checks a JWS signature, and which algorithms it accepts.
///
/// Algorithm confusion is closed here: a public key accepts only the asymmetric algorithms that
/// fit its kind (never HS256, whatever the caller allows), a JWK with `alg` only that one, and an
/// HMAC secret only HS256. The header's `alg` chooses nothing the key did not allow.
public struct JWSVerificationKey: Sendable {
    enum Material: Sendable {
        case publicKey(PublicKey)
        case secret(SymmetricKey)
    }

    let material: Material
    public let algorithms: Set<JWSAlgorithm>

    /// `publicKey` for the algorithms of `allowed` that fit its kind (all that fit by default).
    public init(publicKey: PublicKey, allowing allowed: Set<JWSAlgorithm>? = nil) throws(JOSEError) {
        let fitting = JWSAlgorithm.algorithms(for: publicKey.kind)
        let algorithms = fitting.intersection(allowed ?? fitting)
        guard !algorithms.isEmpty else { throw .algorithmNotAllowed("none of the allowed algorithms fits an \(publicKey.kind) key") }
        self.material = .publicKey(publicKey)
        self.algorithms = algorithms
    }

    /// The key of `jwk`, limited to its `alg` when it has one. Refused for `use: enc`.
    public init(jwk: JWK, allowing allowed: Set<JWSAlgorithm>? = nil) throws(JOSEError) {
        guard jwk.use != "enc" else { throw .invalidKey("the JWK is for encryption (use: enc)") }
        var allowed = allowed ?? Set(JWSAlgorithm.allCases)
        if let name = jwk.algorithm {
            guard let algorithm = JWSAlgorithm(rawValue: name) else { throw .unsupportedAlgorithm(JOSEError.shown(name)) }
            allowed = allowed.intersection([algorithm])
        }
        try self.init(publicKey: try jwk.publicKey(), allowing: allowed)
    }

    /// HS256 with a shared secret.
    public init(hmacSecret secret: SymmetricKey) {
        self.material = .secret(secret)
        self.algorithms = [.hs256]
    }

    func verify(_ signature: [UInt8], for input: [UInt8], algorithm: JWSAlgorithm) throws(JOSEError) {
        guard algorithms.contains(algorithm) else {
            throw .algorithmNotAllowed("\(algorithm.rawValue) is not allowed for this key")
        }
        let valid = switch (material, algorithm.signatureAlgorithm) {
        case (.publicKey(let key), let scheme?): key.isValidSignature(signature, for: input, algorithm: scheme)
        case (.secret(let secret), nil): HMACSHA256.isValid(signature, for: input, key: secret)
        // Unreachable while the initialisers hold (HS256 only for secrets); refused, not trapped, if not.
        default: false
        }
        guard valid else { throw .invalidSignature }
    }
}
