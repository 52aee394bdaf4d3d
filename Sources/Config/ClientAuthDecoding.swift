import Crypto
import JOSE
import OAuth2
import SafeText

/// Reading an identity's client authentication: `clientAuth` and the keys each method uses
/// (`clientSecret…`, `clientKeyFile`, `clientKeyId`, `clientAssertionAlg`, `clientCertFile`,
/// `clientCertHeaders`, `clientAssertionAudience`, `sendClientIdWithAssertion`,
/// `clientAssertionFile`), and the checks `oauth-relay check` reports about them. Key,
/// certificate and assertion files are read and parsed here, so a key that cannot sign, a
/// certificate for another key or a file that holds no JWT fails the config, not a token
/// request; no message shows key material, a secret or an assertion.
struct ClientAuthDecoding {
    let context: DecodingContext

    /// The `clientAuth` key's values.
    enum ClientAuthMethod: String, CaseIterable {
        case basic
        case post
        /// `none` (not the case name: it would read as `Optional.none`).
        case publicClient = "none"
        case privateKeyJWT = "private_key_jwt"
        case clientSecretJWT = "client_secret_jwt"
        /// A client assertion the platform writes to a file (`clientAssertionFile`).
        case clientAssertionFile = "client_assertion_file"

        static func parse(_ text: String) throws(InvalidValue) -> ClientAuthMethod {
            guard let method = ClientAuthMethod(rawValue: text) else {
                throw InvalidValue("expected basic, post, none, private_key_jwt, client_secret_jwt or client_assertion_file, "
                                   + "got \"\(text)\"")
            }
            return method
        }

        var usesAssertion: Bool { self == .privateKeyJWT || self == .clientSecretJWT }
    }

    /// The algorithms a client assertion may be signed with (`clientAssertionAlg`).
    static let clientAssertionAlgorithms: [JWSAlgorithm] = [.rs256, .ps256, .es256]

    /// HS256 keys shorter than this are refused by RFC 7518 §3.2 (and by JOSE).
    static let minimumJWTSecretBytes = 32

    /// The identity's client authentication, its keys read and checked. A method whose
    /// credentials are missing or unusable has been reported; the identity is not used then.
    func decodeClientAuth(_ object: ObjectReader, id: String?, secret: Secret?) -> ClientAuth {
        let explicit = object.parsed("clientAuth", ClientAuthMethod.parse)
        let method = explicit ?? (secret == nil ? .publicClient : .basic)
        let certificateMembers = object.field("clientCertHeaders").flatMap(decodeCertificateMembers)
        let key = object.field("clientKeyFile").flatMap { decodeClientKey($0, certificateMembers: certificateMembers, object: object) }
        let assertion = object.field("clientAssertionFile").flatMap(decodeAssertionFile)
        if let explicit, let field = object.field("clientAuth") {
            checkCredentials(of: explicit, object: object, at: field, secret: secret)
        }
        checkAssertionKeys(method, object: object)
        switch (method, secret) {
        case (.basic, let secret?): return .basic(id: id ?? "", secret: secret)
        case (.post, let secret?): return .post(id: id ?? "", secret: secret)
        case (.privateKeyJWT, _): return key.map { .privateKeyJWT(id: id ?? "", key: $0) } ?? .unidentified
        case (.clientSecretJWT, let secret?): return .clientSecretJWT(id: id ?? "", secret: secret)
        case (.clientAssertionFile, _): return assertion.map { .clientAssertion(id: id, assertion: $0) } ?? .unidentified
        default: return id.map { .publicClient(id: $0) } ?? .unidentified
        }
    }

    /// `sendClientIdWithAssertion`: whether `client_id` goes beside a client assertion (default true).
    func decodeSendClientId(_ object: ObjectReader) -> Bool? {
        object.bool("sendClientIdWithAssertion")
    }

    /// `clientAssertionAudience`: `tokenUrl` (the default) or `issuer`, which needs `issuer`.
    func decodeAssertionAudience(_ object: ObjectReader) -> ClientAssertionAudience? {
        guard let field = object.field("clientAssertionAudience") else { return nil }
        let audience = context.parsed(field) { text throws(InvalidValue) in
            guard let value = ClientAssertionAudience(rawValue: text) else {
                throw InvalidValue("expected \"tokenUrl\" or \"issuer\", got \"\(text)\"")
            }
            return value
        }
        if audience == .issuer && object.field("issuer") == nil {
            context.report("\"issuer\" needs the identity's issuer key", at: field)
        }
        return audience
    }

    /// `basic`, `post` and `client_secret_jwt` need a secret, `none` and `private_key_jwt` must
    /// not have one; the JWT methods need a client id (the assertion's `iss` and `sub`).
    private func checkCredentials(of method: ClientAuthMethod, object: ObjectReader, at field: Field, secret: Secret?) {
        let hasSecret = object.field("clientSecret") != nil || object.field("clientSecretFile") != nil
        switch method {
        case .publicClient where hasSecret:
            context.report("clientAuth is none but a client secret is set", at: field)
        case .privateKeyJWT where hasSecret:
            context.report("clientAuth private_key_jwt signs with clientKeyFile; remove the client secret", at: field)
        case .privateKeyJWT where object.field("clientKeyFile") == nil:
            context.report("clientAuth private_key_jwt needs clientKeyFile", at: field)
        case .clientAssertionFile where hasSecret:
            context.report("clientAuth client_assertion_file sends the JWT in clientAssertionFile; remove the client secret", at: field)
        case .clientAssertionFile where object.field("clientAssertionFile") == nil:
            context.report("clientAuth client_assertion_file needs clientAssertionFile", at: field)
        case .basic, .post, .clientSecretJWT:
            if !hasSecret {
                context.report("clientAuth \(method.rawValue) needs clientSecret or clientSecretFile", at: field)
            } else if method == .clientSecretJWT, let secret, secret.value.utf8.count < Self.minimumJWTSecretBytes {
                // The length only: the secret's value never goes into a message.
                context.report("clientAuth client_secret_jwt signs with HS256, which needs a client secret of at least "
                               + "\(Self.minimumJWTSecretBytes) bytes (RFC 7518 §3.2); this one has \(secret.value.utf8.count)", at: field)
            }
        default:
            break
        }
        if method.usesAssertion && object.field("clientId") == nil {
            context.report("required with clientAuth \(method.rawValue): the client assertion's iss and sub",
                           at: object.path.key("clientId"), offset: object.lastOffset)
        }
    }

    /// Keys only the assertion methods use, set for another method (a typo or a leftover
    /// otherwise): the relay's own assertions' keys, and the file of one made elsewhere;
    /// `clientCertHeaders` without the certificate they name.
    private func checkAssertionKeys(_ method: ClientAuthMethod, object: ObjectReader) {
        let keys: [(key: String, methods: [ClientAuthMethod])] = [
            ("clientKeyFile", [.privateKeyJWT]), ("clientKeyId", [.privateKeyJWT]), ("clientAssertionAlg", [.privateKeyJWT]),
            ("clientCertFile", [.privateKeyJWT]), ("clientCertHeaders", [.privateKeyJWT]),
            ("clientAssertionAudience", [.privateKeyJWT, .clientSecretJWT]), ("clientAssertionFile", [.clientAssertionFile]),
            ("sendClientIdWithAssertion", [.privateKeyJWT, .clientSecretJWT, .clientAssertionFile]),
        ]
        for (key, methods) in keys where !methods.contains(method) {
            guard let field = object.field(key) else { continue }
            let names = methods.map(\.rawValue)
            let users = names.count > 1 ? names.dropLast().joined(separator: ", ") + " and " + names[names.count - 1] : names[0]
            context.report("\(key) is only used by clientAuth \(users), not by \(method.rawValue)", at: field)
        }
        if method == .privateKeyJWT, object.field("clientCertFile") == nil, let headers = object.field("clientCertHeaders") {
            context.report("clientCertHeaders needs clientCertFile, the certificate they name", at: headers)
        }
    }

    /// `clientAssertionFile` read as a JWT (`Identity.clientAssertion`): a file that holds
    /// anything else fails the config. One whose `exp` has passed is a warning of `check`'s
    /// (the platform may write the next one before the first token request).
    private func decodeAssertionFile(_ field: Field) -> Secret? {
        guard let (text, path) = context.files.secretFile(field) else { return nil }
        do throws(CredentialFileProblem) {
            return try Identity.clientAssertion(text)
        } catch {
            context.report("\(error): \(path)", at: field)
            return nil
        }
    }

    /// `clientCertHeaders`: the header members naming the client's certificate, each once, at
    /// least one.
    private func decodeCertificateMembers(_ field: Field) -> [JWSCertificateReference.Member]? {
        guard let elements = context.elements(field) else { return nil }
        guard !elements.isEmpty else {
            context.report("must name at least one of \(Self.certificateMemberNames)", at: field)
            return nil
        }
        var members: [JWSCertificateReference.Member] = []
        var valid = true
        for element in elements {
            let member = context.parsed(element) { text throws(InvalidValue) in
                guard let member = JWSCertificateReference.Member(rawValue: text) else {
                    throw InvalidValue("expected \(Self.certificateMemberNames), got \"\(text)\"")
                }
                return member
            }
            guard let member else {
                valid = false
                continue
            }
            if members.contains(member) {
                context.report("\"\(member.rawValue)\" is listed twice", at: element)
                valid = false
            }
            members.append(member)
        }
        return valid ? members : nil
    }

    /// The header members naming a certificate when `clientCertHeaders` is not set.
    static let defaultCertificateMembers: [JWSCertificateReference.Member] = [.sha256Thumbprint, .sha1Thumbprint]

    private static let certificateMemberNames = #""x5t#S256", "x5t" or "x5c""#

    /// `clientKeyFile` read as a PEM private key (RSA of at least 2048 bits or EC P-256), with
    /// `clientAssertionAlg` (default from the key), `clientKeyId` and, with `clientCertFile`, the
    /// key's certificate named in the header by `certificateMembers` (default `x5t#S256` and
    /// `x5t`: Entra documents the SHA-256 thumbprint, MSAL sends both to it and ADFS knows only the
    /// SHA-1 one; RFC 7515 lets a verifier use either, so both are harmless).
    private func decodeClientKey(_ field: Field, certificateMembers: [JWSCertificateReference.Member]?,
                                 object: ObjectReader) -> ClientAssertionKey? {
        let algorithm = object.parsed("clientAssertionAlg") { text throws(InvalidValue) in
            guard let algorithm = JWSAlgorithm(rawValue: text), Self.clientAssertionAlgorithms.contains(algorithm) else {
                let names = Self.clientAssertionAlgorithms.map(\.rawValue).joined(separator: ", ")
                throw InvalidValue("expected one of \(names), got \"\(text)\"")
            }
            return algorithm
        }
        let keyID = object.nonEmptyString("clientKeyId")
        let certificateField = object.field("clientCertFile")
        let certificateFile = certificateField.flatMap { context.files.pemText(inFile: $0) }
        // A certificate file named but unreadable has been reported; a key without it would
        // sign assertions the IdP cannot match to the certificate it registered.
        guard let keyFile = context.files.pemText(inFile: field), certificateField == nil || certificateFile != nil else { return nil }
        do throws(ClientAssertionKey.Problem) {
            return try ClientAssertionKey(keyPEM: keyFile.text, certificatePEM: certificateFile?.text,
                                          certificateMembers: certificateMembers ?? Self.defaultCertificateMembers,
                                          algorithm: algorithm, keyID: keyID)
        } catch {
            let certificate = certificateField.flatMap { field in certificateFile.map { (field, $0.path) } }
            report(error, key: (field, keyFile.path), certificate: certificate, algorithmField: object.field("clientAssertionAlg"))
            return nil
        }
    }

    /// Why the key (and certificate) files make no key, at the field naming the file at fault.
    private func report(_ problem: ClientAssertionKey.Problem, key: (field: Field, path: String),
                        certificate: (field: Field, path: String)?, algorithmField: Field?) {
        // The certificate's problems arise only when there is one.
        let certificate = certificate ?? key
        switch problem {
        case .unreadableKey(let reason):
            context.report(ReferencedFiles.unusablePrivateKey(reason, path: key.path), at: key.field)
        case .unsupportedKey:
            context.report("an Ed25519 key cannot sign client assertions here (RS256, PS256 or ES256: an RSA or EC P-256 key): "
                           + key.path, at: key.field)
        case .algorithmMismatch(let algorithm, let kind):
            context.report("clientAssertionAlg \(algorithm.rawValue) does not fit the \(kind) key in \(key.path)", at: algorithmField ?? key.field)
        case .unreadableCertificate(let reason):
            context.report("not a usable PEM certificate (\(reason)): \(certificate.path)", at: certificate.field)
        case .certificateKeyMismatch:
            context.report("the certificate in \(certificate.path) is not for the private key in \(key.path): their public keys differ",
                           at: certificate.field)
        }
    }
}
