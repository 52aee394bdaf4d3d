/// The parameters of a public key as a JWK carries them (RFC 7518 §6): big-endian unsigned
/// integers and coordinates, unpadded base64url happening one layer up, in JOSE.
public enum PublicKeyComponents: Sendable, Hashable {
    /// RSA modulus `n` and public exponent `e`.
    case rsa(modulus: [UInt8], exponent: [UInt8])
    /// The P-256 point (`x`, `y`, 32 bytes each).
    case ecP256(x: [UInt8], y: [UInt8])
    /// The 32-byte Ed25519 public key (JWK `OKP`, `crv: Ed25519`).
    case ed25519(x: [UInt8])
}
