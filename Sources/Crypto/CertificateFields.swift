/// What a certificate the relay signs says, apart from its key and its issuer: the subject's
/// common name, the serial number, the validity and the X.509v3 extensions. A value: the
/// profiles (the local CA's, its leaves') are pure functions that make one, and
/// `X509Certificate.issue` signs it.
public struct CertificateFields: Sendable, Equatable {
    /// The subject's CN; nil for an empty subject (then a `subjectAltName` must say who it is,
    /// and be critical: RFC 5280, 4.2.1.6).
    public var commonName: String?
    /// The serial number's bytes, big-endian, read as a positive integer (at most 20 bytes).
    public var serialNumber: [UInt8]
    /// Unix seconds.
    public var notBefore: Int64
    public var notAfter: Int64
    public var extensions: [CertificateExtension]

    public init(commonName: String?, serialNumber: [UInt8], notBefore: Int64, notAfter: Int64,
                extensions: [CertificateExtension]) {
        self.commonName = commonName
        self.serialNumber = serialNumber
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.extensions = extensions
    }
}

/// One X.509v3 extension, its value in OpenSSL's configuration syntax (`critical,CA:TRUE,pathlen:0`,
/// `DNS:api.test`), as `openssl x509 -extfile` reads it.
///
/// The value is parsed by OpenSSL as a list (commas separate entries, the first colon of an
/// entry its name from its value): whoever builds one from names the relay did not choose checks
/// them first (the local CA's names pass `HostSyntax.isHostName`, which admits no comma or colon).
public struct CertificateExtension: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case basicConstraints
        case keyUsage
        case extendedKeyUsage
        case subjectKeyIdentifier
        case authorityKeyIdentifier
        case subjectAltName
        case nameConstraints
    }

    public var kind: Kind
    public var value: String

    public init(_ kind: Kind, _ value: String) {
        self.kind = kind
        self.value = value
    }
}
