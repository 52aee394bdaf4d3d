/// The asymmetric keys the relay signs and verifies with: what JWS RS256/PS256, ES256 and EdDSA need.
public enum KeyKind: Sendable, Hashable, CustomStringConvertible {
    /// RSA, 2048 to 16384 bits (RFC 7518 §3.3 requires at least 2048).
    case rsa(bits: Int)
    /// ECDSA on NIST P-256 (secp256r1).
    case ecP256
    case ed25519

    public var description: String {
        switch self {
        case .rsa(let bits): "RSA \(bits)"
        case .ecP256: "EC P-256"
        case .ed25519: "Ed25519"
        }
    }
}
