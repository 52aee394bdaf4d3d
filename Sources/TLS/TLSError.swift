internal import COpenSSL

/// Why a TLS connection failed, in words safe to show a client (the relay puts them in a
/// 502's `detail`): verification results, OpenSSL's reason strings and host names, never key
/// material, session data or bytes of the stream.
public enum TLSError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer's chain does not lead to a trusted root: an unknown CA, a self-signed
    /// certificate, a missing intermediate. `reason` is OpenSSL's verification text.
    case untrustedCertificate(reason: String)
    /// The certificate is not valid for `expected` (the checked host name or IP address).
    case nameMismatch(expected: String)
    case expired
    case notYetValid
    /// Any other verification failure (bad signature, wrong purpose, ...).
    case certificateRejected(reason: String)
    /// Verification passed, but no key in the chain matches a configured SPKI pin.
    case pinMismatch
    /// The handshake failed for a reason other than the above (an alert from the peer, no
    /// common protocol version or cipher, not TLS at all); `reason` is OpenSSL's.
    case handshakeFailed(reason: String)
    /// A malformed, unauthenticated or unexpected record after the handshake.
    case protocolError(reason: String)
    /// The transport ended without the peer's close_notify: the data may have been cut short.
    case truncated

    public var description: String {
        switch self {
        case .untrustedCertificate(let reason): "certificate not trusted (unknown CA): \(reason)"
        case .nameMismatch(let expected): "certificate is not valid for \"\(expected)\" (name mismatch)"
        case .expired: "certificate has expired"
        case .notYetValid: "certificate is not yet valid"
        case .certificateRejected(let reason): "certificate rejected: \(reason)"
        case .pinMismatch: "no certificate in the chain matches a configured pin (pin mismatch)"
        case .handshakeFailed(let reason): "TLS handshake failed: \(reason)"
        case .protocolError(let reason): "TLS protocol error: \(reason)"
        case .truncated: "the connection ended without a TLS close_notify (truncated)"
        }
    }

    /// The error for an `X509_V_ERR_*` verification result; `expectedName` is the name the
    /// certificate was checked against.
    init(verifyResult: Int, expectedName: String?) {
        switch Int32(verifyResult) {
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
             X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
             X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_UNTRUSTED:
            self = .untrustedCertificate(reason: Self.verificationText(verifyResult))
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            self = .nameMismatch(expected: expectedName ?? "")
        case X509_V_ERR_CERT_HAS_EXPIRED:
            self = .expired
        case X509_V_ERR_CERT_NOT_YET_VALID:
            self = .notYetValid
        default:
            self = .certificateRejected(reason: Self.verificationText(verifyResult))
        }
    }

    private static func verificationText(_ result: Int) -> String {
        String(cString: X509_verify_cert_error_string(result))
    }
}

/// A `TLSConfiguration` that cannot be built; names the setting (as the config file spells it)
/// and the file, never the file's contents.
public struct TLSConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    public let setting: String
    public let problem: String

    init(_ setting: String, _ problem: String) {
        self.setting = setting
        self.problem = problem
    }

    public var description: String { "\(setting): \(problem)" }
}
