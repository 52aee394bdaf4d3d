/// A file an identity's credential is read from (`clientSecretFile`, `passwordFile`,
/// `clientAssertionFile`, ...), which the token thread reads again when it changes: a Kubernetes
/// Secret or projected service-account token is rotated on disk while the relay runs. Config
/// names every such file it read; `Identity.withCredential` puts a new content in its place.
public struct CredentialFile: Sendable, Equatable {
    /// What the file's content is to the identity.
    public var role: CredentialRole
    /// The path as resolved against the config file's directory.
    public var path: String
    /// The config key that named the file, for messages (`clientSecretFile`).
    public var key: String

    public init(role: CredentialRole, path: String, key: String) {
        self.role = role
        self.path = path
        self.key = key
    }
}

/// The credentials an identity can take from a file that rotates. A new one is a case here and
/// a case in `Identity.withCredential`'s switch (Identity+Credentials.swift).
public enum CredentialRole: String, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    /// The client secret of `basic`, `post` and `client_secret_jwt`.
    case clientSecret
    /// The password grant's password.
    case password
    /// The `refresh_token` grant's refresh token (its seed).
    case refreshToken
    /// The jwt-bearer grant's `assertion` (RFC 7523 §2.1), or an extension grant's.
    case assertion
    /// The token exchange's `subject_token` (RFC 8693), or an extension grant's.
    case subjectToken
    /// The token exchange's `actor_token`, or an extension grant's.
    case actorToken
    /// The PEM private key `private_key_jwt` signs with.
    case clientKey
    /// The PEM certificate (or chain) of that key that `private_key_jwt`'s assertions name
    /// (`clientCertFile`: `x5t#S256`, `x5t`, `x5c`).
    case clientCertificate
    /// The client assertion `client_assertion_file` sends as it is (a JWT the platform wrote).
    case clientAssertion
    /// A Google service account's JSON key (`serviceAccountKeyFile`): its private key, key id and
    /// email sign the grant's assertion or the self-signed token.
    case serviceAccountKey
    /// An `auto` identity's RFC 7591 initial access token (`auto.initialAccessTokenFile`), sent
    /// with its registration (`AutoSettings.initialAccessToken`).
    case initialAccessToken

    /// Whether the content is a token that may be a JWT, whose `exp` then says until when it may
    /// be sent (`Identity.expiredCredentials`).
    var mayBeJWT: Bool {
        switch self {
        case .assertion, .subjectToken, .actorToken, .clientAssertion, .initialAccessToken: true
        case .clientSecret, .password, .refreshToken, .clientKey, .clientCertificate, .serviceAccountKey: false
        }
    }

    public var description: String { rawValue }
}

/// Why a credential file's content cannot stand in for the identity's credential. Never quotes
/// the content.
public enum CredentialFileProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing but white space.
    case empty
    /// The identity has no such credential (a `passwordFile` for a `client_credentials` grant).
    case notUsed(CredentialRole)
    /// A client assertion that is not a compact JWS (`header.payload.signature`).
    case notAJWT
    /// Not a PEM private key the relay can sign client assertions with; the reason is OpenSSL's
    /// or names the key's kind and the algorithm.
    case unusableKey(String)
    /// Not a service account key the relay can use; the reason names the member at fault.
    case unusableServiceAccountKey(String)
    /// Not a PEM certificate the relay can read; the reason is OpenSSL's.
    case unusableCertificate(String)
    /// A private key and a certificate that are not one pair: the other file may be about to
    /// change too (CredentialFileWatch then reads both).
    case certificateKeyMismatch

    public var description: String {
        switch self {
        case .empty: "the file is empty"
        case .notUsed(let role): "the identity has no \(role) to replace"
        case .notAJWT: "not a JWT (a compact JWS: three base64url parts separated by dots)"
        case .unusableKey(let reason): "not a usable private key: \(reason)"
        case .unusableServiceAccountKey(let reason): "not a usable service account key: \(reason)"
        case .unusableCertificate(let reason): "not a usable certificate: \(reason)"
        case .certificateKeyMismatch: "the certificate is not for the private key (clientCertFile and clientKeyFile): their public keys differ"
        }
    }
}
