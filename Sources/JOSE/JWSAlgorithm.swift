import Crypto

/// The JWS `alg` values the relay signs and verifies (RFC 7518 §3.1, RFC 8037 for EdDSA).
/// `none` is deliberately not a case: an unsigned JWS cannot even be represented.
public enum JWSAlgorithm: String, Sendable, Hashable, CaseIterable {
    case rs256 = "RS256"
    case ps256 = "PS256"
    case es256 = "ES256"
    case edDSA = "EdDSA"
    /// HMAC with a shared secret (`client_secret_jwt`); never accepted where a public key is expected.
    case hs256 = "HS256"

    /// The algorithm named `name` in a header, refusing `none` and anything unknown.
    public init(named name: String) throws(JOSEError) {
        if let algorithm = JWSAlgorithm(rawValue: name) {
            self = algorithm
        } else if name.lowercased() == "none" {
            throw .algorithmNotAllowed("\"none\" (an unsigned JWS) is never accepted")
        } else {
            throw .unsupportedAlgorithm(JOSEError.shown(name))
        }
    }

    /// The asymmetric signature scheme, nil for HS256.
    public var signatureAlgorithm: SignatureAlgorithm? {
        switch self {
        case .rs256: .rsaPKCS1v15SHA256
        case .ps256: .rsaPSSSHA256
        case .es256: .ecdsaP256SHA256
        case .edDSA: .ed25519
        case .hs256: nil
        }
    }

    /// The algorithms a public key of `kind` can verify.
    public static func algorithms(for kind: KeyKind) -> Set<JWSAlgorithm> {
        Set(allCases.filter { $0.signatureAlgorithm?.fits(kind) == true })
    }
}
