import CertificateTestSupport
import Crypto
import Endpoints
import JOSE
import OAuth2
import SafeText
import XCTest

/// A credential file's new content put in the identity's place (`withCredential`), what it
/// refuses, and the JWTs among the credentials that have expired.
final class CredentialFileTests: XCTestCase {
    private static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    private static let ec = try! PrivateKey.generate(.ecP256)
    private let jwt = makeJWT(#"{"iss":"cluster","exp":1800000000}"#)

    private func exchange(subject: String = "subject", actor: String? = nil) -> Grant {
        .tokenExchange(subject: ExchangedToken(token: Secret(subject), type: "urn:ietf:params:oauth:token-type:jwt"),
                       actor: ExchangedToken(token: actor.map(Secret.init), type: actor == nil ? nil : "urn:ietf:params:oauth:token-type:jwt"))
    }

    func testEachRoleReplacesItsCredentialTrimmed() throws {
        let cases: [(CredentialRole, Identity, (Identity) -> Secret?)] = [
            (.clientSecret, makeIdentity(), { $0.clientAuth.secretForTests }),
            (.clientSecret, makeIdentity(auth: .post), { $0.clientAuth.secretForTests }),
            (.clientSecret, makeIdentity { $0.clientAuth = .clientSecretJWT(id: "svc", secret: Secret("old")) }, { $0.clientAuth.secretForTests }),
            (.password, makeIdentity(.password(username: "svc", password: Secret("old"))), { $0.credential(.password) }),
            (.refreshToken, makeIdentity(.refreshToken(Secret("old"))), { $0.credential(.refreshToken) }),
            (.assertion, makeIdentity(.jwtBearer(assertion: Secret("old"))), { $0.credential(.assertion) }),
            (.subjectToken, makeIdentity(exchange()), { $0.credential(.subjectToken) }),
            (.actorToken, makeIdentity(exchange(actor: "old")), { $0.credential(.actorToken) }),
            (.assertion, makeIdentity(.extension(uri: "urn:x", fields: ExtensionFields(assertion: Secret("old")))), { $0.credential(.assertion) }),
            (.subjectToken, makeIdentity(.extension(uri: "urn:x", fields: ExtensionFields())), { $0.credential(.subjectToken) }),
            (.actorToken, makeIdentity(.extension(uri: "urn:x", fields: ExtensionFields())), { $0.credential(.actorToken) }),
        ]
        for (role, identity, read) in cases {
            let changed = try identity.withCredential(role, content: "  new-value\n")
            XCTAssertEqual(read(changed), Secret("new-value"), "\(role) of \(identity.grant)")
            XCTAssertEqual(changed.name, identity.name)
        }
    }

    func testTheTokenTypesAndTheOtherTokenStay() throws {
        let changed = try makeIdentity(exchange(subject: "s", actor: "a")).withCredential(.subjectToken, content: "s2")
        XCTAssertEqual(changed.grant, exchange(subject: "s2", actor: "a"))
        XCTAssertEqual(try makeIdentity(.password(username: "svc", password: Secret("p"))).withCredential(.password, content: "p2").grant,
                       .password(username: "svc", password: Secret("p2")))
    }

    func testAClientAssertionMustBeAJWTAndKeepsTheClientId() throws {
        let identity = makeIdentity { $0.clientAuth = .clientAssertion(id: "app", assertion: Secret(self.jwt)) }
        let next = makeJWT(#"{"iss":"cluster","exp":1800003600}"#)
        XCTAssertEqual(try identity.withCredential(.clientAssertion, content: next + "\n").clientAuth,
                       .clientAssertion(id: "app", assertion: Secret(next)))
        for junk in ["not-a-jwt", "a.b", "a.b.c.d", "e30.e30.", "e30..sig", "e30.e3+.sig"] {
            XCTAssertThrowsError(try identity.withCredential(.clientAssertion, content: junk), junk) {
                XCTAssertEqual($0 as? CredentialFileProblem, .notAJWT)
            }
        }
    }

    func testAClientKeyKeepsItsAlgorithmAndKeyId() throws {
        let identity = makeIdentity {
            $0.clientAuth = .privateKeyJWT(id: "svc", key: try! ClientAssertionKey(privateKey: Self.rsa, algorithm: .ps256, keyID: "k1"))
        }
        let other = try PrivateKey.generate(.rsa(bits: 2048))
        let changed = try identity.withCredential(.clientKey, content: other.pemRepresentation())
        XCTAssertEqual(changed.clientAuth, .privateKeyJWT(id: "svc", key: try ClientAssertionKey(privateKey: other, algorithm: .ps256, keyID: "k1")))
        XCTAssertNotEqual(changed.clientAuth, identity.clientAuth)
    }

    /// An identity signing with `key` whose assertions name `certificate` by `x5t` and `x5c`.
    private func certified(_ key: PrivateKey, _ certificate: IssuedCertificate) throws -> Identity {
        let assertionKey = try ClientAssertionKey(keyPEM: key.pemRepresentation(), certificatePEM: certificate.pem,
                                                  certificateMembers: [.sha1Thumbprint, .chain], algorithm: .ps256, keyID: "k1")
        return makeIdentity { $0.clientAuth = .privateKeyJWT(id: "svc", key: assertionKey) }
    }

    private func assertionKey(_ identity: Identity) throws -> ClientAssertionKey {
        guard case .privateKeyJWT(_, let key) = identity.clientAuth else { throw XCTSkip("not private_key_jwt") }
        return key
    }

    func testARenewedCertificateForTheSameKeyIsTakenWithTheSameHeaderMembers() throws {
        let pem = try Self.rsa.pemRepresentation()
        let identity = try certified(Self.rsa, try IssuedCertificate.selfSigned(forKey: pem, subject: "/CN=first"))
        let renewed = try IssuedCertificate.selfSigned(forKey: pem, subject: "/CN=renewed")
        let changed = try identity.withCredential(.clientCertificate, content: renewed.pem)
        XCTAssertEqual(try assertionKey(changed), try assertionKey(try certified(Self.rsa, renewed)))
        XCTAssertEqual(try assertionKey(changed).certificate?.members, [.sha1Thumbprint, .chain])
        XCTAssertEqual(try assertionKey(changed).algorithm, .ps256)
        XCTAssertEqual(try assertionKey(changed).keyID, "k1")
    }

    func testARotatedKeyKeepsItsCertificateWhichMustBeItsOwn() throws {
        let certificate = try IssuedCertificate.selfSigned(forKey: Self.rsa.pemRepresentation())
        let identity = try certified(Self.rsa, certificate)
        XCTAssertEqual(try identity.withCredential(.clientKey, content: Self.rsa.pemRepresentation()), identity)
        let other = try PrivateKey.generate(.rsa(bits: 2048))
        XCTAssertThrowsError(try identity.withCredential(.clientKey, content: other.pemRepresentation())) {
            XCTAssertEqual($0 as? CredentialFileProblem, .certificateKeyMismatch)
        }
        XCTAssertThrowsError(try identity.withCredential(.clientCertificate,
                                                         content: IssuedCertificate.selfSigned(forKey: other.pemRepresentation()).pem)) {
            XCTAssertEqual($0 as? CredentialFileProblem, .certificateKeyMismatch)
        }
        // Both at once: the new pair, with the identity's algorithm, kid and header members.
        let otherCertificate = try IssuedCertificate.selfSigned(forKey: other.pemRepresentation())
        let both = try identity.withClientKey(pem: other.pemRepresentation(), certificatePEM: otherCertificate.pem)
        XCTAssertEqual(try assertionKey(both), try assertionKey(try certified(other, otherCertificate)))
        XCTAssertThrowsError(try identity.withClientKey(pem: other.pemRepresentation(), certificatePEM: certificate.pem)) {
            XCTAssertEqual($0 as? CredentialFileProblem, .certificateKeyMismatch)
        }
    }

    func testWhatCannotStandInForACertificate() throws {
        let identity = try certified(Self.rsa, try IssuedCertificate.selfSigned(forKey: Self.rsa.pemRepresentation()))
        let keyOnly = makeIdentity { $0.clientAuth = .privateKeyJWT(id: "svc", key: try! ClientAssertionKey(privateKey: Self.rsa)) }
        let cases: [(Identity, String, String)] = [
            (keyOnly, try IssuedCertificate.selfSigned(forKey: Self.rsa.pemRepresentation()).pem,
             "the identity has no clientCertificate to replace"),
            (makeIdentity(), "x", "the identity has no clientCertificate to replace"),
            (identity, " \n", "the file is empty"),
            (identity, try Self.rsa.pemRepresentation(), "not a usable certificate: the certificate could not be read: no certificate"),
        ]
        for (candidate, content, expected) in cases {
            XCTAssertThrowsError(try candidate.withCredential(.clientCertificate, content: content), expected) {
                XCTAssertTrue("\($0)".hasPrefix(expected), "\($0)")
            }
        }
        XCTAssertTrue(identity.holdsCredential(.clientCertificate))
        XCTAssertFalse(keyOnly.holdsCredential(.clientCertificate))
        XCTAssertFalse(makeIdentity().holdsCredential(.clientCertificate))
    }

    func testAServiceAccountKeyFileRotatesTheKeyAndKeepsTheTokenItAsksFor() throws {
        let identity = makeIdentity {
            $0.grant = .serviceAccount(ServiceAccountGrant(key: try! ServiceAccountFixture.key(),
                                                           token: .tokenEndpoint(scope: "cloud-platform", subject: nil)))
        }
        XCTAssertTrue(identity.holdsCredential(.serviceAccountKey))
        XCTAssertFalse(makeIdentity().holdsCredential(.serviceAccountKey))
        let other = try PrivateKey.generate(.rsa(bits: 2048))
        let rotated = ServiceAccountFixture.json(["private_key_id": .string("fedcba9876543210")], key: other)
        let changed = try identity.withCredential(.serviceAccountKey, content: rotated)
        XCTAssertEqual(changed.grant.serviceAccount?.key, try ServiceAccountKey.parse(json: rotated))
        XCTAssertEqual(changed.grant.serviceAccount?.token, .tokenEndpoint(scope: "cloud-platform", subject: nil))
        XCTAssertThrowsError(try identity.withCredential(.serviceAccountKey, content: "{\"type\": \"authorized_user\"}")) { error in
            XCTAssertTrue("\(error)".hasPrefix("not a usable service account key: "), "\(error)")
        }
        XCTAssertThrowsError(try makeIdentity().withCredential(.serviceAccountKey, content: rotated)) { error in
            XCTAssertEqual("\(error)", "the identity has no serviceAccountKey to replace")
        }
    }

    func testAReloadThatReadARotatedFileKeepsTheIdentityButNotAChangedSetting() throws {
        let files = [CredentialFile(role: .clientSecret, path: "/run/secrets/client", key: "clientSecretFile"),
                     CredentialFile(role: .password, path: "/run/secrets/password", key: "passwordFile")]
        let loaded = makeIdentity(.password(username: "svc", password: Secret("one"))) { $0.credentialFiles = files }
        let reread = try loaded.withCredential(.clientSecret, content: "rotated").withCredential(.password, content: "two")
        XCTAssertNotEqual(reread, loaded)
        XCTAssertTrue(loaded.hasSameSettings(as: reread))
        var rescoped = reread
        rescoped.scope = "orders.write"
        XCTAssertFalse(loaded.hasSameSettings(as: rescoped), "a setting changed")
        var renamed = reread
        renamed.grant = .password(username: "other", password: Secret("two"))
        XCTAssertFalse(loaded.hasSameSettings(as: renamed), "the user name is no file's")
        var inline = reread
        inline.credentialFiles = [files[1]]
        XCTAssertFalse(loaded.hasSameSettings(as: inline), "the secret is no longer read from a file")
        // A secret given inline that changed is a changed setting.
        XCTAssertFalse(makeIdentity().hasSameSettings(as: makeIdentity(secret: "another")))

        let keyed = makeIdentity {
            $0.clientAuth = .privateKeyJWT(id: "svc", key: try! ClientAssertionKey(privateKey: Self.rsa, algorithm: .rs256, keyID: "k1"))
            $0.credentialFiles = [CredentialFile(role: .clientKey, path: "/run/secrets/key.pem", key: "clientKeyFile")]
        }
        let rekeyed = try keyed.withCredential(.clientKey, content: PrivateKey.generate(.rsa(bits: 2048)).pemRepresentation())
        XCTAssertTrue(keyed.hasSameSettings(as: rekeyed))
        var realg = rekeyed
        realg.clientAuth = .privateKeyJWT(id: "svc", key: try ClientAssertionKey(privateKey: Self.rsa, algorithm: .ps256, keyID: "k1"))
        XCTAssertFalse(keyed.hasSameSettings(as: realg), "another algorithm is a setting")

        let account = makeIdentity {
            $0.grant = .serviceAccount(ServiceAccountGrant(key: try! ServiceAccountFixture.key(), token: .selfSignedAudience("https://pubsub.googleapis.com/")))
            $0.credentialFiles = [CredentialFile(role: .serviceAccountKey, path: "/run/secrets/sa.json", key: "serviceAccountKeyFile")]
        }
        let rotated = try account.withCredential(.serviceAccountKey, content: ServiceAccountFixture.json(key: PrivateKey.generate(.rsa(bits: 2048))))
        XCTAssertTrue(account.hasSameSettings(as: rotated))
        XCTAssertThrowsError(try account.withCredential(.serviceAccountKey, content: ServiceAccountFixture.json(["private_key_id": nil]))) { error in
            XCTAssertEqual("\(error)", "not a usable service account key: it has no private_key_id, which a self-signed JWT names as its kid")
        }
    }

    func testAServiceAccountKeyOfAnotherAccountIsNotTakenUp() throws {
        let identity = makeIdentity {
            $0.grant = .serviceAccount(ServiceAccountGrant(key: try! ServiceAccountFixture.key(), token: .tokenEndpoint(scope: "cloud-platform", subject: nil)))
        }
        let other = ServiceAccountFixture.json(["client_email": .string("other@orders-project.iam.gserviceaccount.com")])
        XCTAssertThrowsError(try identity.withCredential(.serviceAccountKey, content: other)) { error in
            XCTAssertEqual("\(error)", "not a usable service account key: it is the key of other@orders-project.iam.gserviceaccount.com, "
                           + "not of relay@orders-project.iam.gserviceaccount.com; another account takes a reload")
        }
    }

    /// The refusals: the identity keeps what it had, and no message quotes the content.
    func testWhatCannotStandInForACredential() throws {
        let keyed = makeIdentity {
            $0.clientAuth = .privateKeyJWT(id: "svc", key: try! ClientAssertionKey(privateKey: Self.rsa, keyID: "k1"))
        }
        let junkKey = "-----BEGIN PRIVATE KEY-----\nTm90QUtleUF0QWxsSnVzdFNvbWVUZXh0\n-----END PRIVATE KEY-----\n"
        let cases: [(Identity, CredentialRole, String, String)] = [
            (makeIdentity(), .clientSecret, " \n\t", "the file is empty"),
            (makeIdentity(), .password, "p", "the identity has no password to replace"),
            (makeIdentity(secret: nil), .clientSecret, "s", "the identity has no clientSecret to replace"),
            (makeIdentity(.authorizationCode(seed: Secret("r"))), .refreshToken, "r2", "the identity has no refreshToken to replace"),
            (makeIdentity(.jwtBearer(assertion: nil)), .subjectToken, "t", "the identity has no subjectToken to replace"),
            (makeIdentity(), .clientAssertion, jwt, "the identity has no clientAssertion to replace"),
            (makeIdentity(), .clientKey, try Self.rsa.pemRepresentation(), "the identity has no clientKey to replace"),
            (keyed, .clientKey, "", "the file is empty"),
            (keyed, .clientKey, try Self.ec.pemRepresentation(), "not a usable private key: the EC P-256 key cannot sign RS256"),
            (keyed, .clientKey, try Self.rsa.publicKey.pemRepresentation(), "not a usable private key: "),
            (keyed, .clientKey, junkKey, "not a usable private key: "),
        ]
        for (identity, role, content, message) in cases {
            XCTAssertThrowsError(try identity.withCredential(role, content: content), "\(role) \(message)") { error in
                let text = "\(error)"
                XCTAssertTrue(text.hasPrefix(message), "\(role): \(text)")
                XCTAssertFalse(text.contains("Tm90QUtl") || text.contains("BEGIN"), text)
            }
        }
    }

    func testOnlyFilesTheIdentityUsesAreWorthWatching() {
        XCTAssertTrue(makeIdentity().holdsCredential(.clientSecret))
        XCTAssertFalse(makeIdentity().holdsCredential(.password))
        XCTAssertTrue(makeIdentity { $0.clientAuth = .privateKeyJWT(id: "svc", key: try! ClientAssertionKey(privateKey: Self.ec)) }
            .holdsCredential(.clientKey))
        XCTAssertFalse(makeIdentity(.deviceCode(seed: Secret("seed"))).holdsCredential(.refreshToken), "a seed is read at start only")
    }

    // MARK: - Expired JWTs

    private func federated(assertion: String, subject: String = "opaque-subject-token") -> Identity {
        makeIdentity(exchange(subject: subject)) {
            $0.clientAuth = .clientAssertion(id: nil, assertion: Secret(assertion))
            $0.credentialFiles = [CredentialFile(role: .clientAssertion, path: "/var/run/secrets/tokens/idp-token", key: "clientAssertionFile"),
                                  CredentialFile(role: .subjectToken, path: "/run/subject", key: "subjectTokenFile")]
        }
    }

    func testAnExpiredClientAssertionIsNamedWithItsFileAndUTCTime() throws {
        let identity = federated(assertion: makeJWT(#"{"exp":1795726800}"#))
        let expired = try XCTUnwrap(identity.expiredCredential(sentWith: .refresh, at: 1_795_726_800))
        XCTAssertEqual(expired.description,
                       "clientAssertionFile /var/run/secrets/tokens/idp-token holds a JWT that expired at 2026-11-26T21:00:00Z")
        XCTAssertEqual(TokenEndpointError.expiredCredential(expired).description,
                       "clientAssertionFile /var/run/secrets/tokens/idp-token holds a JWT that expired at 2026-11-26T21:00:00Z, "
                       + "so no request was sent to the token endpoint")
        XCTAssertEqual(TokenEndpointError.expiredCredential(expired).code, "credential_expired")
        XCTAssertNil(identity.expiredCredential(sentWith: .refresh, at: 1_795_726_799), "valid until its exp")
    }

    func testAGrantTokenCountsForTheGrantOnlyAndAnOpaqueOneNever() {
        let expiredSubject = makeJWT(#"{"exp":1000}"#)
        let identity = federated(assertion: makeJWT(#"{"exp":1900000000}"#), subject: expiredSubject)
        let now = 1_800_000_000.0
        XCTAssertEqual(identity.expiredCredential(sentWith: .grant(.tokenExchange), at: now)?.file.key, "subjectTokenFile")
        for purpose: TokenRequest.Purpose in [.refresh, .revocation, .deviceAuthorization, .grant(.deviceCode)] {
            XCTAssertNil(identity.expiredCredential(sentWith: purpose, at: now), "\(purpose) does not carry the subject token")
        }
        XCTAssertEqual(identity.expiredCredentials(at: now).map(\.file.key), ["subjectTokenFile"])
        XCTAssertEqual(federated(assertion: jwt).expiredCredentials(at: 2_000_000_000).map(\.file.key), ["clientAssertionFile"],
                       "an opaque subject token has no exp")
        XCTAssertEqual(makeIdentity { $0.clientAuth = .clientAssertion(id: nil, assertion: Secret(makeJWT(#"{"exp":1}"#))) }
            .expiredCredentials(at: now), [], "an inline credential is no file's")
    }
}

extension ClientAuth {
    /// The client secret, for assertions on what `withCredential` put in.
    var secretForTests: Secret? {
        switch self {
        case .basic(_, let secret), .post(_, let secret), .clientSecretJWT(_, let secret): secret
        default: nil
        }
    }
}
