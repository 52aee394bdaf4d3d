internal import COpenSSL

extension CertificateExtension {
    /// The extension as a certificate holds it (the DER of its `Extension` SEQUENCE: OID,
    /// criticality, value), built the way `X509Certificate.issue` builds it. For the extensions
    /// that need no certificate to be built (not the key identifiers): a CA's profile compares
    /// what it would write with what a certificate on disk says.
    public func der() throws(CryptoError) -> [UInt8] {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        guard let made = X509V3_EXT_conf_nid(nil, nil, kind.nid, value) else {
            throw .operationFailed(operation: "the \(kind) extension", reason: OpenSSLErrors.takeReason(fallback: "unknown reason"))
        }
        defer { X509_EXTENSION_free(made) }
        return try Self.der(of: made)
    }

    static func der(of made: OpaquePointer) throws(CryptoError) -> [UInt8] {
        let length = i2d_X509_EXTENSION(made, nil)
        guard length > 0 else { throw .openSSL("encoding an extension as DER") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_X509_EXTENSION(made, &cursor)
        }
        guard written == length else { throw .openSSL("encoding an extension as DER") }
        return der
    }
}

extension X509Certificate {
    /// The DER of the certificate's extension of `kind` (as `CertificateExtension.der()` makes
    /// one), or nil when it has none or it cannot be encoded.
    public func extensionDER(_ kind: CertificateExtension.Kind) -> [UInt8]? {
        defer { OpenSSLErrors.clear() }
        let index = X509_get_ext_by_NID(pointer, kind.nid, -1)
        guard index >= 0, let found = X509_get_ext(pointer, index) else { return nil }
        return try? CertificateExtension.der(of: found)
    }
}
