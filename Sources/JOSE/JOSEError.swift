import Crypto

/// Why a JWS, JWK, JWKS or JWT was refused. Messages name the part and the rule, never key
/// material, signatures, nonces or token contents (a claim value is named only where it is an
/// identifier such as `iss`), so they may go into logs and problem details as they are.
public enum JOSEError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not well-formed: wrong number of segments, bad base64url, JSON that is not an object, a
    /// member of the wrong type. `what` says which part.
    case malformed(String)
    /// An `alg` the relay does not implement (the name is cut to 32 characters).
    case unsupportedAlgorithm(String)
    /// An algorithm refused by rule: `none`, HS256 where a public key is expected, an algorithm
    /// outside the caller's allowed set, or one that does not fit the key.
    case algorithmNotAllowed(String)
    /// The header lists `crit` extensions, none of which the relay understands (RFC 7515 §4.1.11).
    case unsupportedCriticalHeader
    /// No key in the JWKS for the token's `kid` (a caller may refetch the JWKS once).
    case keyNotFound(keyID: String?)
    case invalidKey(String)
    case invalidSignature
    case claimRejected(ClaimProblem)
    case crypto(CryptoError)

    public var description: String {
        switch self {
        case .malformed(let what): "malformed JOSE object: \(what)"
        case .unsupportedAlgorithm(let name): "unsupported JWS algorithm \"\(name)\""
        case .algorithmNotAllowed(let why): "JWS algorithm not allowed: \(why)"
        case .unsupportedCriticalHeader: "the JWS header has critical extensions (crit) the relay does not understand"
        case .keyNotFound(let keyID): keyID.map { "no key with kid \"\($0)\" in the JWKS" } ?? "no key in the JWKS fits the token"
        case .invalidKey(let why): "invalid key: \(why)"
        case .invalidSignature: "the JWS signature does not verify"
        case .claimRejected(let problem): "JWT rejected: \(problem)"
        case .crypto(let error): error.description
        }
    }

    /// An attacker-chosen name, shortened and stripped of control characters before it is shown.
    static func shown(_ name: String) -> String {
        String(name.unicodeScalars.prefix(32).filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
    }
}
