internal import COpenSSL

/// X.509 certificates read from PEM text: a client's certificate, or its chain, leaf first (as a
/// `clientCertFile` lists them). Kept as each certificate's DER, the bytes a JWS header's `x5t`,
/// `x5t#S256` and `x5c` are made of, with the leaf's public key, which must be the one the
/// client signs with.
///
/// A pure function of the text: the caller reads the file (and re-reads it when it changes).
/// Certificates are public, so nothing here is redacted; errors still name only the step and
/// OpenSSL's reason. The dates, the issuer and the chain's order are not checked: the IdP that
/// registered the certificate judges them.
public struct CertificateChain: Sendable, Equatable {
    /// Each certificate's DER encoding, in the order of the text: the leaf first.
    public let derCertificates: [[UInt8]]
    /// The leaf certificate's public key.
    public let leafPublicKey: PublicKey

    /// Every `CERTIFICATE` block of `pem`, in order (other blocks, such as a private key in the
    /// same file, are skipped). Refused when there is none, when one cannot be read, or when
    /// the leaf's key is of a kind the relay does not sign with.
    public init(pem: String) throws(CryptoError) {
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        let read: Result<(certificates: [[UInt8]], leafKey: EVPKey), CryptoError> = Array(pem.utf8).withUnsafeBytes { text in
            guard let bio = BIO_new_mem_buf(text.baseAddress, Int32(text.count)) else { return .failure(.openSSL("BIO_new_mem_buf")) }
            defer { BIO_free(bio) }
            do throws(CryptoError) {
                return .success(try Self.readCertificates(from: bio))
            } catch {
                return .failure(error)
            }
        }
        let (certificates, leafKey) = try read.get()
        self.derCertificates = certificates
        self.leafPublicKey = PublicKey(key: leafKey)
    }

    /// Every certificate `bio` holds, as DER, and the first one's public key.
    private static func readCertificates(from bio: OpaquePointer) throws(CryptoError) -> (certificates: [[UInt8]], leafKey: EVPKey) {
        var certificates: [[UInt8]] = []
        var leafKey: EVPKey?
        while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
            defer { X509_free(certificate) }
            certificates.append(try X509Certificate.der(of: certificate))
            if leafKey == nil {
                guard let key = X509_get_pubkey(certificate) else {
                    throw .unreadableCertificate(reason: "the leaf certificate's public key (\(OpenSSLErrors.takeReason(fallback: "unknown reason")))")
                }
                leafKey = try EVPKey(adopting: key)
            }
        }
        // The loop ends at the first read that fails: past the last block ("no start line"),
        // or at a block that is not a certificate OpenSSL can read.
        let code = ERR_peek_last_error()
        let pastTheLastBlock = ERR_GET_LIB(code) == ERR_LIB_PEM && ERR_GET_REASON(code) == PEM_R_NO_START_LINE
        guard let leafKey, pastTheLastBlock else {
            let what = certificates.isEmpty ? "no certificate in the PEM text" : "certificate \(certificates.count + 1) of the PEM text"
            throw .unreadableCertificate(reason: "\(what) (\(OpenSSLErrors.takeReason(fallback: "unknown reason")))")
        }
        return (certificates, leafKey)
    }

    /// The leaf certificate's DER.
    public var leafDER: [UInt8] { derCertificates[0] }
}
