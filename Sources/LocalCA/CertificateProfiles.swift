import Crypto

/// What the local CA's certificate and its leaves say: pure functions of the names, the serial
/// number and the time, so that every field can be checked without OpenSSL.
enum CertificateProfiles {
    /// The CA lives ten years, back-dated an hour for clocks a little behind.
    static let authorityLifetime: Int64 = 3650 * 86_400
    static let authorityBackdating: Int64 = 3_600
    /// A leaf lives a day at most, back-dated five minutes.
    static let leafLifetime: Int64 = 86_400
    static let leafBackdating: Int64 = 300
    /// The longest common name X.509 admits (ub-common-name).
    static let commonNameLimit = 64

    /// The CA: may sign end-entity certificates only (pathlen 0), TLS server certificates only
    /// (extended key usage serverAuth), for `constraints` only.
    /// `label` tells CAs apart in a trust store's list (a few random hex digits).
    static func authority(constraints: NameConstraintSet, label: String, serialNumber: [UInt8], now: Int64) -> CertificateFields {
        CertificateFields(commonName: "oauth-relay forward proxy CA \(label)", serialNumber: serialNumber,
                          notBefore: now - authorityBackdating, notAfter: now + authorityLifetime,
                          extensions: [
                              CertificateExtension(.basicConstraints, "critical,CA:TRUE,pathlen:0"),
                              CertificateExtension(.keyUsage, "critical,keyCertSign,cRLSign"),
                              CertificateExtension(.subjectKeyIdentifier, "hash"),
                          ] + authorityLimits(constraints))
    }

    /// What the CA may sign for: the names (`constraints`) and the use (TLS servers). A CA on
    /// disk whose extensions of these kinds differ from these (other hosts, or issued before a
    /// limit was added) is issued again.
    static func authorityLimits(_ constraints: NameConstraintSet) -> [CertificateExtension] {
        [
            CertificateExtension(.extendedKeyUsage, "serverAuth"),
            CertificateExtension(.nameConstraints, constraints.extensionValue),
        ]
    }

    /// A TLS server certificate for `host` alone (a name `NameConstraintSet.permits`), valid a
    /// day in all (from its back-dated notBefore) but never past the CA. A name longer than a
    /// common name may be is in the SAN only, which is then critical (the subject is empty).
    static func leaf(host: String, serialNumber: [UInt8], now: Int64, authorityNotAfter: Int64) -> CertificateFields {
        let fitsCommonName = host.utf8.count <= commonNameLimit
        let notBefore = now - leafBackdating
        return CertificateFields(commonName: fitsCommonName ? host : nil, serialNumber: serialNumber,
                                 notBefore: notBefore, notAfter: min(notBefore + leafLifetime, authorityNotAfter),
                                 extensions: [
                                     CertificateExtension(.basicConstraints, "critical,CA:FALSE"),
                                     CertificateExtension(.keyUsage, "critical,digitalSignature"),
                                     CertificateExtension(.extendedKeyUsage, "serverAuth"),
                                     CertificateExtension(.subjectAltName, (fitsCommonName ? "" : "critical,") + "DNS:" + host),
                                     CertificateExtension(.authorityKeyIdentifier, "keyid:always"),
                                 ])
    }

    /// 16 random bytes, the first below 0x80: a positive number of 16 octets in DER.
    static func randomSerialNumber() throws(CryptoError) -> [UInt8] {
        var bytes = try SecureRandom.bytes(16)
        bytes[0] = bytes[0] & 0x7f | 0x01
        return bytes
    }
}
