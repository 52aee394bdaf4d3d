// Crypto: the primitives the relay signs, hashes and encrypts with, and nothing of TLS. PEM
// keys (RSA, EC P-256, Ed25519), X.509 certificates as DER (`CertificateChain`) and one at a time,
// read or signed (`X509Certificate`, from `CertificateFields`: the forward proxy's CA), signatures as
// JWS wants them (RS256, PS256, ES256 as r ‖ s, EdDSA), SHA-256 (and SHA-1, for `x5t` alone),
// HMAC-SHA256, AES-256-GCM for the token store, random bytes, constant-time comparison.
//
// A module of its own so that what only needs these (JOSE, OAuth2, Config, TokenStore) does not
// link the TLS engine; the engine (`TLS`) takes nothing from here but `OpenSSLErrors`, the one
// error queue of the one OpenSSL library both modules call.
//
// Pure OpenSSL primitives over Swift values: no I/O (no sockets, no files: a key or certificate
// file is read by the caller, which hands over its text), no event loop. Each OpenSSL object is
// owned by one Swift object and freed in its `deinit`. Keys never change once made and are shared
// between threads (`EVPKey`); `SigningContext` and `BufferedSecureRandom` belong to one thread each.
// Errors are `CryptoError`s, below, which name the operation and never carry key material.

internal import COpenSSL

/// Why a crypto primitive failed. The words name the operation and OpenSSL's reason string,
/// never key bytes, plaintext or anything read from a key file: these errors reach logs and
/// `oauth-relay check`.
public enum CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A PEM text that holds no key of the expected kind (or one OpenSSL cannot read).
    case unreadableKey(reason: String)
    /// A PEM text that holds no X.509 certificate, or one OpenSSL cannot read.
    case unreadableCertificate(reason: String)
    /// A key of a type, curve or size the relay does not use (e.g. RSA under 2048 bits).
    case unsupportedKey(String)
    /// Public key parameters that do not make a valid key (a point off the curve, an even exponent).
    case invalidKeyParameters(String)
    /// The algorithm does not fit the key (ES256 with an RSA key, ...).
    case algorithmMismatch(String)
    /// A signature or authentication tag that does not verify.
    case authenticationFailed
    /// Inputs of the wrong length (an AES key that is not 32 bytes, a nonce that is not 12).
    case invalidLength(String)
    /// OpenSSL failed where it should not (out of memory, no entropy); `operation` says where.
    case operationFailed(operation: String, reason: String)

    public var description: String {
        switch self {
        case .unreadableKey(let reason): "the key could not be read: \(reason)"
        case .unreadableCertificate(let reason): "the certificate could not be read: \(reason)"
        case .unsupportedKey(let what): "unsupported key: \(what)"
        case .invalidKeyParameters(let what): "invalid public key parameters: \(what)"
        case .algorithmMismatch(let what): "algorithm does not fit the key: \(what)"
        case .authenticationFailed: "the signature or authentication tag does not verify"
        case .invalidLength(let what): "invalid length: \(what)"
        case .operationFailed(let operation, let reason): "\(operation) failed: \(reason)"
        }
    }

    /// The error for an OpenSSL call that returned failure, with the queued reason (and the
    /// queue emptied, so the next call starts clean).
    static func openSSL(_ operation: String) -> CryptoError {
        .operationFailed(operation: operation, reason: OpenSSLErrors.takeReason(fallback: "unknown OpenSSL error"))
    }
}
