import Crypto
import FoundationEssentials
import JOSE

/// RFC 8705's certificate thumbprint, `x5t#S256`: the base64url SHA-256 of a certificate's DER,
/// what a certificate-bound token's `cnf` names. Read from PEM text without parsing the
/// certificate (TLS loads and checks it); only the first `CERTIFICATE` block counts, the leaf of
/// a file that also holds its chain.
enum CertificateThumbprint {
    static let begin = "-----BEGIN CERTIFICATE-----"
    static let end = "-----END CERTIFICATE-----"

    /// The thumbprint of the first certificate in `pem`; nil when there is none, or its base64
    /// does not decode.
    static func sha256(pem: String) -> String? {
        guard let start = pem.firstRange(of: begin), let stop = pem[start.upperBound...].firstRange(of: end) else {
            return nil
        }
        let body = pem[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
        guard !body.isEmpty, let der = Data(base64Encoded: String(body)) else { return nil }
        return Base64URL.encode(SHA256.hash(der))
    }
}
