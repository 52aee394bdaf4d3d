internal import COpenSSL

/// One X.509 certificate, owned (an `X509*`, freed in `deinit`): read from PEM or DER, or signed
/// by `issue` (see X509Certificate+Issuing.swift). What the relay reads of it is read once, at
/// creation: its DER, validity and the DNS names its name constraints permit.
///
/// Lifetime and threads: `@unchecked Sendable` because nothing changes the `X509` after `init`
/// returns, and OpenSSL reads one from many threads at once (verification, `SSL_CTX_use_certificate`,
/// which takes a reference) once the extension data it caches lazily has been filled: `init`
/// fills it (`X509_check_purpose(…, -1, 0)`), so no later reader writes to it. The reference
/// count OpenSSL keeps is atomic.
public final class X509Certificate: @unchecked Sendable {
    /// For TLS (`SSL_CTX_use_certificate`) and tests that verify with OpenSSL; valid while `self` lives.
    package let pointer: OpaquePointer
    /// The certificate's DER encoding.
    public let der: [UInt8]
    /// Unix seconds.
    public let notBefore: Int64
    public let notAfter: Int64
    /// The DNS names the certificate's name constraints permit, as written there (`api.test`,
    /// `.example.com` for the subdomains of `example.com`); empty without name constraints.
    public let permittedDNSNames: [String]

    /// Takes ownership of `pointer` (freed here when it cannot be read).
    init(adopting pointer: OpaquePointer) throws(CryptoError) {
        self.pointer = pointer
        // Fills OpenSSL's cache of the extensions (flags, key identifiers, constraints) now,
        // while one thread owns the certificate; -1 checks no purpose.
        _ = X509_check_purpose(pointer, -1, 0)
        do throws(CryptoError) {
            der = try Self.der(of: pointer)
            notBefore = try Self.unixSeconds(X509_get0_notBefore(pointer))
            notAfter = try Self.unixSeconds(X509_get0_notAfter(pointer))
            permittedDNSNames = Self.permittedDNSNames(of: pointer)
        } catch {
            X509_free(pointer)
            throw error
        }
    }

    deinit {
        X509_free(pointer)
    }

    /// The first certificate in `pem` (other blocks before it, such as a key, are skipped).
    public convenience init(pem: String) throws(CryptoError) {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let certificate: OpaquePointer? = Array(pem.utf8).withUnsafeBytes { text in
            guard let bio = BIO_new_mem_buf(text.baseAddress, Int32(text.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        guard let certificate else {
            throw .unreadableCertificate(reason: "no certificate in the PEM text (\(OpenSSLErrors.takeReason(fallback: "unknown reason")))")
        }
        try self.init(adopting: certificate)
    }

    /// The certificate `der` encodes, all of it: bytes after it are refused.
    public convenience init(der: [UInt8]) throws(CryptoError) {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let read: (OpaquePointer?, Int) = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            let certificate = d2i_X509(nil, &cursor, buffer.count)
            return (certificate, cursor.map { $0 - buffer.baseAddress! } ?? 0)
        }
        guard let certificate = read.0 else {
            throw .unreadableCertificate(reason: "not a DER certificate (\(OpenSSLErrors.takeReason(fallback: "unknown reason")))")
        }
        guard read.1 == der.count else {
            X509_free(certificate)
            throw .unreadableCertificate(reason: "bytes after the DER certificate")
        }
        try self.init(adopting: certificate)
    }

    /// The certificate as one PEM block (`-----BEGIN CERTIFICATE-----`).
    public func pemRepresentation() throws(CryptoError) -> String {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        guard let bio = BIO_new(BIO_s_mem()) else { throw .openSSL("BIO_new") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_X509(bio, pointer) == 1 else { throw .openSSL("writing a PEM certificate") }
        var data: UnsafeMutablePointer<CChar>?
        let length = shim_BIO_get_mem_data(bio, &data)
        guard let data, length > 0 else { throw .openSSL("writing a PEM certificate") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }

    /// SHA-256 of the DER, what `openssl x509 -fingerprint -sha256` shows.
    public var sha256Fingerprint: [UInt8] { SHA256.hash(der) }

    /// Whether `key` is the private key of this certificate's public key.
    public func isCertified(_ key: PrivateKey) -> Bool {
        defer { OpenSSLErrors.clear() }
        return X509_check_private_key(pointer, key.key.pointer) == 1
    }

    static func der(of certificate: OpaquePointer) throws(CryptoError) -> [UInt8] {
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { throw .openSSL("encoding a certificate as DER") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_X509(certificate, &cursor)
        }
        guard written == length else { throw .openSSL("encoding a certificate as DER") }
        return der
    }

    /// An ASN.1 time as seconds since 1970: its distance from the epoch.
    private static func unixSeconds(_ time: UnsafePointer<ASN1_TIME>?) throws(CryptoError) -> Int64 {
        guard let time, let epoch = ASN1_TIME_set(nil, 0) else { throw .unreadableCertificate(reason: "no validity dates") }
        defer { ASN1_STRING_free(epoch) }
        var days: Int32 = 0
        var seconds: Int32 = 0
        guard ASN1_TIME_diff(&days, &seconds, epoch, time) == 1 else {
            throw .unreadableCertificate(reason: "unreadable validity dates (\(OpenSSLErrors.takeReason(fallback: "unknown reason")))")
        }
        return Int64(days) * 86_400 + Int64(seconds)
    }

    private static func permittedDNSNames(of certificate: OpaquePointer) -> [String] {
        guard let raw = X509_get_ext_d2i(certificate, NID_name_constraints, nil, nil) else { return [] }
        let constraints = raw.assumingMemoryBound(to: NAME_CONSTRAINTS.self)
        defer { NAME_CONSTRAINTS_free(constraints) }
        guard let subtrees = constraints.pointee.permittedSubtrees else { return [] }
        return (0..<shim_sk_GENERAL_SUBTREE_num(subtrees)).compactMap { index in
            guard let subtree = shim_sk_GENERAL_SUBTREE_value(subtrees, index), let name = subtree.pointee.base,
                  name.pointee.type == GEN_DNS, let text = name.pointee.d.dNSName,
                  let bytes = ASN1_STRING_get0_data(text) else { return nil }
            return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(ASN1_STRING_length(text))), as: UTF8.self)
        }
    }
}
