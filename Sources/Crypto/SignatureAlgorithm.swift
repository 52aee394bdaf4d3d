/// A signature scheme, always with SHA-256 where the scheme takes a digest.
public enum SignatureAlgorithm: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (JWS RS256).
    case rsaPKCS1v15SHA256
    /// RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt (JWS PS256, RFC 7518 §3.5).
    case rsaPSSSHA256
    /// ECDSA P-256 with SHA-256; signatures are the fixed-size r ‖ s (64 bytes) that JWS uses
    /// (RFC 7518 §3.4), not OpenSSL's DER.
    case ecdsaP256SHA256
    /// Ed25519 (RFC 8032), JWS EdDSA.
    case ed25519

    /// Whether a key of `kind` can make and check signatures of this algorithm.
    public func fits(_ kind: KeyKind) -> Bool {
        switch (self, kind) {
        case (.rsaPKCS1v15SHA256, .rsa), (.rsaPSSSHA256, .rsa), (.ecdsaP256SHA256, .ecP256), (.ed25519, .ed25519): true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .rsaPKCS1v15SHA256: "RSASSA-PKCS1-v1_5 SHA-256"
        case .rsaPSSSHA256: "RSASSA-PSS SHA-256"
        case .ecdsaP256SHA256: "ECDSA P-256 SHA-256"
        case .ed25519: "Ed25519"
        }
    }
}
