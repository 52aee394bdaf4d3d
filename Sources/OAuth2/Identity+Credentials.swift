import Crypto
import FoundationEssentials
import HTTPFields
import JOSE
import SafeText

/// An identity's credentials read from files that rotate: a new content put in the place of the
/// one loaded (`withCredential`), and the JWTs among them that have expired
/// (`expiredCredentials`). Pure: the token thread reads the files (Tokens' `CredentialFileWatch`).
extension Identity {
    /// The identity with `content`, a credential file's new content, in the place of its
    /// `role`'s credential: trimmed text for the secrets and tokens, a PEM private key signing
    /// with the same algorithm, `kid` and certificate for `clientKey` (a GitHub App's RSA key, read
    /// by `GitHubAppInstallation.appKey(pem:)`), a PEM certificate (chain) of the same key for
    /// `clientCertificate` (both at once: `withClientKey(pem:certificatePEM:)`), a JWT for
    /// `clientAssertion`, a JSON key for `serviceAccountKey` (the token endpoint stays the one
    /// loaded). Throws when the content cannot stand in for it (the identity then keeps what it
    /// had).
    public func withCredential(_ role: CredentialRole, content: String) throws(CredentialFileProblem) -> Identity {
        var identity = self
        if role == .clientKey, case .gitHubAppInstallation(var installation) = grant {
            installation.key = try Self.gitHubAppKey(pem: content)
            identity.grant = .gitHubAppInstallation(installation)
            return identity
        }
        if role == .clientKey || role == .clientCertificate {
            guard case .privateKeyJWT(let id, let key) = clientAuth, role == .clientKey || key.certificate != nil else {
                throw .notUsed(role)
            }
            guard !WhiteSpace.trimmingSpacesAndNewlines(content).isEmpty else { throw .empty }
            let replaced = try Self.clientKey(like: key) { () throws(ClientAssertionKey.Problem) in
                role == .clientKey ? try key.replacingKey(pem: content) : try key.replacingCertificate(pem: content)
            }
            identity.clientAuth = .privateKeyJWT(id: id, key: replaced)
            return identity
        }
        if role == .serviceAccountKey {
            guard case .serviceAccount(var account) = grant else { throw .notUsed(role) }
            let key: ServiceAccountKey
            do throws(ServiceAccountKeyError) {
                key = try ServiceAccountKey.parse(json: content)
            } catch {
                throw .unusableServiceAccountKey(error.description)
            }
            // Another account is another identity (its tokens, its store entry): that takes a reload.
            guard key.clientEmail == account.key.clientEmail else {
                throw .unusableServiceAccountKey("it is the key of \(key.clientEmail), not of \(account.key.clientEmail); "
                                                 + "another account takes a reload")
            }
            // A self-signed token names its key (`kid`), as at load.
            guard key.keyID != nil || !account.isSelfSigned else {
                throw .unusableServiceAccountKey("it has no private_key_id, which a self-signed JWT names as its kid")
            }
            account.key = key
            identity.grant = .serviceAccount(account)
            return identity
        }
        let text = String(WhiteSpace.trimmingSpacesAndNewlines(content))
        guard !text.isEmpty else { throw .empty }
        return try replacing(role, with: role == .clientAssertion ? try Self.clientAssertion(text) : Secret(text))
    }

    /// Whether `other` is this identity but for what its credential files hold: a reload that
    /// read a rotated file again keeps the identity, and with it its token (the token thread's
    /// watch takes up the file's content itself). A changed setting, or another list of files,
    /// is another identity.
    public func hasSameSettings(as other: Identity) -> Bool {
        guard credentialFiles == other.credentialFiles else { return false }
        var adjusted = other
        for file in credentialFiles { adjusted.takeCredential(file.role, from: self) }
        return adjusted == self
    }

    /// Puts `source`'s credential of `role` in this identity's place; nothing when either has
    /// none of it (the two then differ elsewhere too).
    private mutating func takeCredential(_ role: CredentialRole, from source: Identity) {
        switch (role, grant, source.grant, clientAuth, source.clientAuth) {
        case (.clientKey, .gitHubAppInstallation(var mine), .gitHubAppInstallation(let theirs), _, _):
            mine.key = theirs.key
            grant = .gitHubAppInstallation(mine)
        case (.clientKey, _, _, .privateKeyJWT(let id, let mine), .privateKeyJWT(_, let key)),
             (.clientCertificate, _, _, .privateKeyJWT(let id, let mine), .privateKeyJWT(_, let key)):
            // The key and certificate are the files'; how they sign and what the header names are settings.
            if mine.algorithm == key.algorithm && mine.keyID == key.keyID && mine.certificate?.members == key.certificate?.members {
                clientAuth = .privateKeyJWT(id: id, key: key)
            }
        case (.serviceAccountKey, .serviceAccount(var mine), .serviceAccount(let theirs), _, _):
            mine.key = theirs.key
            grant = .serviceAccount(mine)
        default:
            if let secret = source.credential(role), let replaced = try? replacing(role, with: secret) { self = replaced }
        }
    }

    /// The identity with `secret` as its credential of `role` (a secret or a token).
    private func replacing(_ role: CredentialRole, with secret: Secret) throws(CredentialFileProblem) -> Identity {
        var identity = self
        switch (role, grant, clientAuth) {
        case (.clientSecret, _, .basic(let id, _)):
            identity.clientAuth = .basic(id: id, secret: secret)
        case (.clientSecret, _, .post(let id, _)):
            identity.clientAuth = .post(id: id, secret: secret)
        case (.clientSecret, _, .clientSecretJWT(let id, _)):
            identity.clientAuth = .clientSecretJWT(id: id, secret: secret)
        case (.clientAssertion, _, .clientAssertion(let id, _)):
            identity.clientAuth = .clientAssertion(id: id, assertion: secret)
        case (.password, .password(let username, _), _):
            identity.grant = .password(username: username, password: secret)
        case (.refreshToken, .refreshToken, _):
            identity.grant = .refreshToken(secret)
        case (.assertion, .jwtBearer, _):
            identity.grant = .jwtBearer(assertion: secret)
        case (.subjectToken, .tokenExchange(let subject, let actor), _):
            identity.grant = .tokenExchange(subject: ExchangedToken(token: secret, type: subject.type), actor: actor)
        case (.actorToken, .tokenExchange(let subject, let actor), _):
            identity.grant = .tokenExchange(subject: subject, actor: ExchangedToken(token: secret, type: actor.type))
        case (.actorToken, .caller(.tokenExchange(let subjectTokenType, let actor)), _):
            identity.grant = .caller(.tokenExchange(subjectTokenType: subjectTokenType, actor: ExchangedToken(token: secret, type: actor.type)))
        case (.assertion, .extension(let uri, var fields), _):
            fields.assertion = secret
            identity.grant = .extension(uri: uri, fields: fields)
        case (.subjectToken, .extension(let uri, var fields), _):
            fields.subject.token = secret
            identity.grant = .extension(uri: uri, fields: fields)
        case (.actorToken, .extension(let uri, var fields), _):
            fields.actor.token = secret
            identity.grant = .extension(uri: uri, fields: fields)
        case (.initialAccessToken, _, _) where auto?.initialAccessToken != nil:
            identity.auto?.initialAccessToken = secret
        default:
            throw .notUsed(role)
        }
        return identity
    }

    /// The credential `role` names, as the identity holds it now; nil when it has none.
    public func credential(_ role: CredentialRole) -> Secret? {
        switch (role, grant, clientAuth) {
        case (.clientSecret, _, .basic(_, let secret)), (.clientSecret, _, .post(_, let secret)),
             (.clientSecret, _, .clientSecretJWT(_, let secret)), (.clientAssertion, _, .clientAssertion(_, let secret)),
             (.password, .password(_, let secret), _), (.refreshToken, .refreshToken(let secret), _):
            secret
        case (.assertion, .jwtBearer(let assertion), _): assertion
        case (.subjectToken, .tokenExchange(let subject, _), _): subject.token
        case (.actorToken, .tokenExchange(_, let actor), _): actor.token
        case (.actorToken, .caller(.tokenExchange(_, let actor)), _): actor.token
        case (.assertion, .extension(_, let fields), _): fields.assertion
        case (.subjectToken, .extension(_, let fields), _): fields.subject.token
        case (.actorToken, .extension(_, let fields), _): fields.actor.token
        case (.initialAccessToken, _, _): auto?.initialAccessToken
        default: nil
        }
    }

    /// Whether the identity has a credential of `role` (a file of it is worth watching).
    public func holdsCredential(_ role: CredentialRole) -> Bool {
        if role == .clientKey, case .privateKeyJWT = clientAuth { return true }
        if role == .clientCertificate, case .privateKeyJWT(_, let key) = clientAuth { return key.certificate != nil }
        if role == .clientKey, case .gitHubAppInstallation = grant { return true }
        if role == .serviceAccountKey, case .serviceAccount = grant { return true }
        return credential(role) != nil
    }

    /// The credential files whose JWT has an `exp` at or before `unixTime` (seconds since 1970),
    /// in the identity's order: a token that the IdP would refuse, and that must not be sent.
    public func expiredCredentials(at unixTime: Double) -> [ExpiredCredential] {
        credentialFiles.compactMap { file in
            guard file.role.mayBeJWT, let token = credential(file.role),
                  let expiry = TokenLifetime.unverifiedExpiry(ofToken: token.value), expiry <= unixTime else { return nil }
            return ExpiredCredential(file: file, expiredAt: expiry)
        }
    }

    /// The first expired credential a request for `purpose` would carry: the client assertion
    /// goes with every request; the grant's assertion and tokens only with the grant's own.
    public func expiredCredential(sentWith purpose: TokenRequest.Purpose, at unixTime: Double) -> ExpiredCredential? {
        expiredCredentials(at: unixTime).first { expired in
            switch (expired.file.role, purpose) {
            case (.clientAssertion, _): true
            case (_, .grant(let type)): !type.isInteractive
            default: false
            }
        }
    }

    /// A client assertion from a file: a compact JWS whose three parts are base64url (the
    /// signature is the IdP's to check).
    public static func clientAssertion(_ text: String) throws(CredentialFileProblem) -> Secret {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && Base64URL.decode($0) != nil }) else { throw .notAJWT }
        return Secret(text)
    }

    /// A GitHub App's private key in `pem` (RSA, signing RS256).
    private static func gitHubAppKey(pem: String) throws(CredentialFileProblem) -> ClientAssertionKey {
        guard !WhiteSpace.trimmingSpacesAndNewlines(pem).isEmpty else { throw .empty }
        do throws(GitHubAppKeyError) {
            return try GitHubAppInstallation.appKey(pem: pem)
        } catch {
            switch error {
            case .unreadable(let reason): throw .unusableKey(reason)
            case .notRSA: throw .unusableKey(error.description)
            }
        }
    }

    /// The identity with the private key in `keyPEM` and its certificate in `certificatePEM`, both
    /// rotated at once (a Kubernetes Secret holding `tls.key` and `tls.crt`): neither file alone
    /// fits the other's previous content.
    public func withClientKey(pem keyPEM: String, certificatePEM: String) throws(CredentialFileProblem) -> Identity {
        guard case .privateKeyJWT(let id, let key) = clientAuth, key.certificate != nil else { throw .notUsed(.clientCertificate) }
        var identity = self
        identity.clientAuth = .privateKeyJWT(id: id, key: try Self.clientKey(like: key) { () throws(ClientAssertionKey.Problem) in
            try key.replacing(keyPEM: keyPEM, certificatePEM: certificatePEM)
        })
        return identity
    }

    /// The key `make` gives in place of `current` (the same algorithm, `kid` and certificate
    /// members), or why it cannot stand in.
    private static func clientKey(like current: ClientAssertionKey,
                                  _ make: () throws(ClientAssertionKey.Problem) -> ClientAssertionKey) throws(CredentialFileProblem) -> ClientAssertionKey {
        do throws(ClientAssertionKey.Problem) {
            return try make()
        } catch {
            switch error {
            case .unreadableKey(let reason): throw .unusableKey(reason.description)
            case .unsupportedKey(let kind): throw .unusableKey("the \(kind) key cannot sign \(current.algorithm.rawValue)")
            case .algorithmMismatch(let algorithm, let kind): throw .unusableKey("the \(kind) key cannot sign \(algorithm.rawValue)")
            case .unreadableCertificate(let reason): throw .unusableCertificate(reason.description)
            case .certificateKeyMismatch: throw .certificateKeyMismatch
            }
        }
    }
}

/// A credential file holding a JWT that expired: named by its key and path, with the `exp` as a
/// UTC time; never the JWT.
public struct ExpiredCredential: Sendable, Equatable, CustomStringConvertible {
    public var file: CredentialFile
    /// `exp`, seconds since 1970.
    public var expiredAt: Double

    public init(file: CredentialFile, expiredAt: Double) {
        self.file = file
        self.expiredAt = expiredAt
    }

    /// `clientAssertionFile /var/run/secrets/tokens/idp-token holds a JWT that expired at 2026-11-26T21:00:00Z`
    public var description: String {
        "\(file.key) \(file.path) holds a JWT that expired at \(Self.utc(expiredAt))"
    }

    /// ISO 8601 in UTC, whole seconds.
    static func utc(_ unixTime: Double) -> String {
        Date(timeIntervalSince1970: unixTime.rounded(.down)).formatted(.iso8601)
    }
}
