import Crypto
import JOSE

/// The private key a `private_key_jwt` client signs its assertions with (or a GitHub App its App
/// JWTs), the algorithm it signs with, the `kid` the IdP knows it by and, for an IdP that
/// registered the client's certificate (Microsoft Entra ID), the header members that name that
/// certificate. Made by Config from the files' text, and made again from a rotated file's text
/// (`replacingKey(pem:)`, `replacingCertificate(pem:)`): reading a file is I/O, making a key from
/// its text is not. Used here only to sign.
///
/// Two keys are equal when their public halves, algorithms, key ids and certificate members
/// are: a reload that rewrote the key or certificate file under the same name is a different
/// key. The description names the algorithm, key id and certificate members, never the key.
public struct ClientAssertionKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Why key and certificate text do not make a key that signs client assertions. The cases
    /// carry what a message needs (OpenSSL's reason, the key's kind), never key material.
    public enum Problem: Error, Equatable, Sendable {
        /// The key text holds no usable private key.
        case unreadableKey(CryptoError)
        /// A key of a kind that cannot sign RS256, PS256 or ES256 (Ed25519).
        case unsupportedKey(KeyKind)
        /// The configured algorithm does not fit the key.
        case algorithmMismatch(JWSAlgorithm, KeyKind)
        /// The certificate text holds no usable certificate.
        case unreadableCertificate(CryptoError)
        /// The (leaf) certificate's public key is not the private key's.
        case certificateKeyMismatch
    }

    public let signer: JWSSigner
    public let keyID: String?
    /// The header members naming the client's certificate; nil without a certificate.
    public let certificate: JWSCertificateReference?
    private let publicKey: PublicKey

    /// `privateKey` signing with `algorithm`, or with the key's default (RS256 for RSA, ES256 for
    /// P-256) when nil; refused when the algorithm does not fit the key.
    public init(privateKey: PrivateKey, algorithm: JWSAlgorithm? = nil, keyID: String? = nil) throws(JOSEError) {
        if let algorithm {
            signer = try JWSSigner(privateKey: privateKey, algorithm: algorithm)
        } else {
            signer = JWSSigner(privateKey: privateKey)
        }
        self.keyID = keyID
        self.certificate = nil
        self.publicKey = privateKey.publicKey
    }

    /// The key in `keyPEM` (an RSA or EC P-256 private key) with, when `certificatePEM` is given,
    /// the certificate (or chain, leaf first) it belongs to, named in every assertion's header by
    /// `certificateMembers`. Refused when the leaf certificate's public key is not the key's.
    public init(keyPEM: String, certificatePEM: String? = nil,
                certificateMembers: [JWSCertificateReference.Member] = [.sha256Thumbprint],
                algorithm: JWSAlgorithm? = nil, keyID: String? = nil) throws(Problem) {
        let privateKey: PrivateKey
        do throws(CryptoError) {
            privateKey = try PrivateKey(pem: keyPEM)
        } catch {
            throw .unreadableKey(error)
        }
        if case .ed25519 = privateKey.kind { throw .unsupportedKey(privateKey.kind) }
        if let algorithm {
            do throws(JOSEError) {
                signer = try JWSSigner(privateKey: privateKey, algorithm: algorithm)
            } catch {
                throw .algorithmMismatch(algorithm, privateKey.kind)
            }
        } else {
            signer = JWSSigner(privateKey: privateKey)
        }
        self.keyID = keyID
        self.publicKey = privateKey.publicKey
        guard let certificatePEM else {
            certificate = nil
            return
        }
        certificate = JWSCertificateReference(try Self.chain(pem: certificatePEM, of: publicKey), members: certificateMembers)
    }

    private init(signer: JWSSigner, keyID: String?, certificate: JWSCertificateReference?, publicKey: PublicKey) {
        self.signer = signer
        self.keyID = keyID
        self.certificate = certificate
        self.publicKey = publicKey
    }

    public var algorithm: JWSAlgorithm { signer.algorithm }

    /// The certificate (or chain) in `pem`, whose leaf must certify `publicKey`.
    private static func chain(pem: String, of publicKey: PublicKey) throws(Problem) -> CertificateChain {
        let chain: CertificateChain
        do throws(CryptoError) {
            chain = try CertificateChain(pem: pem)
        } catch {
            throw .unreadableCertificate(error)
        }
        guard chain.leafPublicKey == publicKey else { throw .certificateKeyMismatch }
        return chain
    }

    /// The key in `pem` in this one's place (a rotated `clientKeyFile`): the same algorithm, `kid`
    /// and certificate, which must be the new key's.
    public func replacingKey(pem: String) throws(Problem) -> ClientAssertionKey {
        let key = try ClientAssertionKey(keyPEM: pem, algorithm: algorithm, keyID: keyID)
        if let certificate, certificate.certificates.leafPublicKey != key.publicKey { throw .certificateKeyMismatch }
        return ClientAssertionKey(signer: key.signer, keyID: keyID, certificate: certificate, publicKey: key.publicKey)
    }

    /// This key with the certificate (or chain) in `pem` in place of its own (a renewed
    /// `clientCertFile`), named by the same header members; it must be this key's.
    public func replacingCertificate(pem: String) throws(Problem) -> ClientAssertionKey {
        let reference = JWSCertificateReference(try Self.chain(pem: pem, of: publicKey), members: certificate?.members ?? [.sha256Thumbprint])
        return ClientAssertionKey(signer: signer, keyID: keyID, certificate: reference, publicKey: publicKey)
    }

    /// The key in `keyPEM` with the certificate in `certificatePEM`, both in place of this one's
    /// (a key and its certificate rotated together), with the same algorithm, `kid` and header
    /// members.
    public func replacing(keyPEM: String, certificatePEM: String) throws(Problem) -> ClientAssertionKey {
        try ClientAssertionKey(keyPEM: keyPEM, certificatePEM: certificatePEM,
                               certificateMembers: certificate?.members ?? [.sha256Thumbprint], algorithm: algorithm, keyID: keyID)
    }

    public static func == (lhs: ClientAssertionKey, rhs: ClientAssertionKey) -> Bool {
        lhs.algorithm == rhs.algorithm && lhs.keyID == rhs.keyID && lhs.certificate == rhs.certificate && lhs.publicKey == rhs.publicKey
    }

    public var description: String {
        "\(algorithm.rawValue) key" + (keyID.map { " \"\($0)\"" } ?? "") + (certificate.map { " with certificate (\($0))" } ?? "")
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["key": description], displayStyle: .struct)
    }
}
