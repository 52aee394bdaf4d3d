internal import COpenSSL

extension X509Certificate {
    /// Signs a version 3 certificate with `fields` for `subjectKey`, issued by `issuer` with its
    /// key `issuerKey` (SHA-256), or self-signed by `issuerKey` when `issuer` is nil (then
    /// `subjectKey` must be `issuerKey`'s public half).
    ///
    /// Nothing reads the certificate's extensions before it is signed, so the data OpenSSL caches
    /// from them (and the hash of the encoding, which `X509_cmp` and trust stores use) is
    /// computed once, in `init(adopting:)`, from the signed certificate.
    public static func issue(_ fields: CertificateFields, subjectKey: PublicKey, issuer: X509Certificate?,
                             issuerKey: PrivateKey) throws(CryptoError) -> X509Certificate {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        guard let certificate = X509_new() else { throw .openSSL("X509_new") }
        var owned = true
        defer { if owned { X509_free(certificate) } }
        guard X509_set_version(certificate, Int(X509_VERSION_3)) == 1 else { throw .openSSL("setting the certificate's version") }
        try setSerialNumber(fields.serialNumber, of: certificate)
        try setValidity(fields, of: certificate)
        guard let subject = X509_NAME_new() else { throw .openSSL("X509_NAME_new") }
        defer { X509_NAME_free(subject) }
        if let commonName = fields.commonName {
            let added = Array(commonName.utf8).withUnsafeBufferPointer { bytes in
                X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, bytes.baseAddress, Int32(bytes.count), -1, 0)
            }
            guard added == 1 else { throw .openSSL("setting the subject's common name") }
        }
        guard X509_set_subject_name(certificate, subject) == 1,
              X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0.pointer) } ?? subject) == 1 else {
            throw .openSSL("setting the subject and issuer names")
        }
        guard X509_set_pubkey(certificate, subjectKey.key.pointer) == 1 else { throw .openSSL("setting the public key") }
        // The context names the issuer (for authorityKeyIdentifier) and the subject (for
        // subjectKeyIdentifier, from the public key set above).
        var context = X509V3_CTX()
        shim_X509V3_set_ctx_nodb(&context)
        X509V3_set_ctx(&context, issuer?.pointer ?? certificate, certificate, nil, nil, 0)
        for field in fields.extensions {
            guard let made = X509V3_EXT_conf_nid(nil, &context, field.kind.nid, field.value) else {
                throw .operationFailed(operation: "the \(field.kind) extension",
                                       reason: OpenSSLErrors.takeReason(fallback: "unknown reason"))
            }
            defer { X509_EXTENSION_free(made) }
            guard X509_add_ext(certificate, made, -1) == 1 else { throw .openSSL("adding the \(field.kind) extension") }
        }
        guard X509_sign(certificate, issuerKey.key.pointer, EVP_sha256()) > 0 else { throw .openSSL("signing the certificate") }
        owned = false
        return try X509Certificate(adopting: certificate)
    }

    private static func setSerialNumber(_ bytes: [UInt8], of certificate: OpaquePointer) throws(CryptoError) {
        guard (1...20).contains(bytes.count) else { throw .invalidLength("a serial number has 1 to 20 bytes") }
        guard let number = bytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress, Int32($0.count), nil) }) else {
            throw .openSSL("BN_bin2bn")
        }
        defer { BN_free(number) }
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != nil else { throw .openSSL("setting the serial number") }
    }

    private static func setValidity(_ fields: CertificateFields, of certificate: OpaquePointer) throws(CryptoError) {
        guard fields.notBefore < fields.notAfter else { throw .invalidLength("notBefore must come before notAfter") }
        guard ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(fields.notBefore)) != nil,
              ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(fields.notAfter)) != nil else {
            throw .openSSL("setting the validity")
        }
    }
}

extension CertificateExtension.Kind {
    var nid: Int32 {
        switch self {
        case .basicConstraints: NID_basic_constraints
        case .keyUsage: NID_key_usage
        case .extendedKeyUsage: NID_ext_key_usage
        case .subjectKeyIdentifier: NID_subject_key_identifier
        case .authorityKeyIdentifier: NID_authority_key_identifier
        case .subjectAltName: NID_subject_alt_name
        case .nameConstraints: NID_name_constraints
        }
    }
}
