import Crypto
import JOSE

/// The private key a `private_key_jwt` client signs its assertions with (or a GitHub App its App
/// JWTs), the algorithm it signs with and the `kid` the IdP knows it by. Loaded by Config (reading
/// the file is I/O); used here only to sign.
///
/// Two keys are equal when their public halves, algorithms and key ids are: a reload that
/// rewrote the key file under the same name is a different key. The description names the
/// algorithm and key id, never the key.
public struct ClientAssertionKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let signer: JWSSigner
    public let keyID: String?
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
        self.publicKey = privateKey.publicKey
    }

    public var algorithm: JWSAlgorithm { signer.algorithm }

    public static func == (lhs: ClientAssertionKey, rhs: ClientAssertionKey) -> Bool {
        lhs.algorithm == rhs.algorithm && lhs.keyID == rhs.keyID && lhs.publicKey == rhs.publicKey
    }

    public var description: String {
        "\(algorithm.rawValue) key" + (keyID.map { " \"\($0)\"" } ?? "")
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["key": description], displayStyle: .struct)
    }
}
