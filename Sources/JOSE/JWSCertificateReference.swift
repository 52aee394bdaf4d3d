import Crypto

/// How a JWS header names the certificate of the key that signed it (RFC 7515 §4.1.6–§4.1.8):
/// the members to send, their values made once from the certificate chain. Microsoft Entra ID
/// finds a client's certificate credential by `x5t#S256` (or, like ADFS, by the SHA-1 `x5t`);
/// some servers want the chain itself, `x5c`.
///
/// Two references are equal when they send the same members of the same certificates: a renewed
/// certificate is another reference.
public struct JWSCertificateReference: Sendable, Equatable, CustomStringConvertible {
    /// A header member that names the certificate, by its name in the header (and the config).
    public enum Member: String, Sendable, CaseIterable {
        /// base64url(SHA-256(leaf DER)).
        case sha256Thumbprint = "x5t#S256"
        /// base64url(SHA-1(leaf DER)).
        case sha1Thumbprint = "x5t"
        /// Every certificate of the chain, leaf first, each standard base64 of its DER.
        case chain = "x5c"
    }

    /// The members sent, in the order given.
    public let members: [Member]
    /// The certificates they are made of.
    public let certificates: CertificateChain
    private let sha256Thumbprint: String?
    private let sha1Thumbprint: String?
    private let chain: [String]?

    /// `members` of `certificates` (their order does not matter; each is sent once).
    public init(_ certificates: CertificateChain, members: [Member]) {
        self.members = members
        self.certificates = certificates
        sha256Thumbprint = members.contains(.sha256Thumbprint) ? Base64URL.encode(SHA256.hash(certificates.leafDER)) : nil
        sha1Thumbprint = members.contains(.sha1Thumbprint) ? Base64URL.encode(SHA1.hash(certificates.leafDER)) : nil
        chain = members.contains(.chain) ? certificates.derCertificates.map(Self.standardBase64) : nil
    }

    /// Sets the members in `header`.
    public func add(to header: inout JWSHeader) {
        header.x509SHA256Thumbprint = sha256Thumbprint
        header.x509SHA1Thumbprint = sha1Thumbprint
        header.x509Chain = chain
    }

    /// The names of the members sent (the values are public, but long and of no use in a log).
    public var description: String {
        members.map(\.rawValue).joined(separator: ", ")
    }

    /// RFC 4648 §4 base64 with padding, which `x5c` uses (§4.1.6: "not base64url"): the
    /// base64url text with the two alphabets' last characters swapped back, padded.
    static func standardBase64(_ bytes: [UInt8]) -> String {
        let urlSafe = Base64URL.encode(bytes)
        let standard = urlSafe.map { character -> Character in
            switch character {
            case "-": "+"
            case "_": "/"
            default: character
            }
        }
        return String(standard) + String(repeating: "=", count: (4 - urlSafe.count % 4) % 4)
    }
}
