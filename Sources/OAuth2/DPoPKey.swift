import Crypto
import JOSE

/// The key an identity proves possession of with DPoP (RFC 9449): its proof builder (the header
/// with the public `jwk`, encoded once) and the thumbprint a bound token's `cnf.jkt` names.
///
/// Two keys are equal when their public halves and algorithms are: a reload that rewrote the key
/// file is a different key, and a token bound to the old one is not used with the new one. The
/// description names the algorithm and the thumbprint (public), never the key.
public struct DPoPKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let builder: DPoPProofBuilder
    private let publicKey: PublicKey

    /// The algorithms a DPoP key may sign with: what RFC 9449 servers commonly accept (no HS256,
    /// which has no public key to put in the proof).
    public static let algorithms: [JWSAlgorithm] = [.es256, .ps256, .rs256, .edDSA]

    /// `privateKey` signing with `algorithm`, or with the key's default (ES256 for P-256, RS256
    /// for RSA, EdDSA for Ed25519) when nil; refused when the algorithm does not fit the key.
    public init(privateKey: PrivateKey, algorithm: JWSAlgorithm? = nil) throws(JOSEError) {
        let signer = if let algorithm {
            try JWSSigner(privateKey: privateKey, algorithm: algorithm)
        } else {
            JWSSigner(privateKey: privateKey)
        }
        builder = try DPoPProofBuilder(signer: signer)
        publicKey = privateKey.publicKey
    }

    /// A new key for `algorithm` (P-256 for ES256, Ed25519 for EdDSA), from OpenSSL's generator.
    /// RSA keys are not generated: they take a `keyFile`.
    public static func generate(_ algorithm: JWSAlgorithm) throws(DPoPKeyError) -> DPoPKey {
        let kind: KeyKind
        switch algorithm {
        case .es256: kind = .ecP256
        case .edDSA: kind = .ed25519
        default: throw DPoPKeyError("the relay generates ES256 and EdDSA keys only; \(algorithm.rawValue) needs a keyFile")
        }
        do {
            return try DPoPKey(privateKey: PrivateKey.generate(kind), algorithm: algorithm)
        } catch {
            throw DPoPKeyError("a \(algorithm.rawValue) key could not be generated: \(error)")
        }
    }

    public var algorithm: JWSAlgorithm { builder.signer.algorithm }

    /// The RFC 7638 thumbprint (base64url SHA-256 of the public JWK): a bound token's `cnf.jkt`.
    public var thumbprint: String { builder.keyThumbprint }

    public static func == (lhs: DPoPKey, rhs: DPoPKey) -> Bool {
        lhs.algorithm == rhs.algorithm && lhs.publicKey == rhs.publicKey
    }

    public var description: String { "\(algorithm.rawValue) key \(thumbprint)" }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["key": description], displayStyle: .struct)
    }
}

/// Why a DPoP key could not be made; never quotes key material.
public struct DPoPKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }
}

/// How an identity binds its tokens to a key with DPoP (`dpop` in the config).
public enum DPoPBinding: Sendable, Equatable, CustomStringConvertible {
    /// `dpop: true` or `{ "alg": … }` without a key file: the token service generates a key for
    /// the identity when it takes it up, and keeps it as long as the identity's settings stay
    /// the same (across reloads); a restart makes a new one. Tokens bound to it are kept in
    /// memory only, never in the token store: no other process holds the key.
    case generatedKey(JWSAlgorithm)
    /// `{ "keyFile": … }`: the key read from the file; stored tokens are kept with its thumbprint.
    case key(DPoPKey)

    /// The key itself: the file's, or a new one for `generatedKey`.
    public func makeKey() throws(DPoPKeyError) -> DPoPKey {
        switch self {
        case .generatedKey(let algorithm): try DPoPKey.generate(algorithm)
        case .key(let key): key
        }
    }

    public var algorithm: JWSAlgorithm {
        switch self {
        case .generatedKey(let algorithm): algorithm
        case .key(let key): key.algorithm
        }
    }

    public var description: String {
        switch self {
        case .generatedKey(let algorithm): "a generated \(algorithm.rawValue) key"
        case .key(let key): key.description
        }
    }
}
