import CertificateTestSupport
import Config
import Crypto
import JOSE
import OAuth2
import SafeText
import XCTest

/// private_key_jwt and client_secret_jwt in the config: their keys, and what `check` reports.
final class ClientAuthDecodingTests: XCTestCase {
    private static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    private static let ec = try! PrivateKey.generate(.ecP256)
    private static let longSecret = "0123456789abcdef0123456789abcdef"

    /// The file `key.pem` beside the config: `key` (or the text `pem`).
    private func keyFile(_ key: PrivateKey?, pem: String? = nil) throws -> [String: String] {
        ["key.pem": try pem ?? key?.pemRepresentation() ?? ""]
    }

    /// Identity `x` with `body`, decoded next to `key.pem` holding `key`.
    private func decoded(_ body: String, key: PrivateKey? = rsa, file: StaticString = #filePath, line: UInt = #line) throws -> Identity {
        switch try decodeConfig(identityJSON(body), besideFiles: keyFile(key)) {
        case .success(let config): return try XCTUnwrap(config.identities["x"], file: file, line: line)
        case .failure(let errors):
            XCTFail("\(errors)", file: file, line: line)
            throw errors
        }
    }

    private func errors(_ body: String, key: PrivateKey? = rsa, pem: String? = nil) throws -> [String] {
        try configErrors(identityJSON(body), besideFiles: keyFile(key, pem: pem))
    }

    func testPrivateKeyJWTLoadsTheKeyWithItsIdAndDefaultAlgorithm() throws {
        let identity = try decoded(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "clientKeyId": "k1""#)
        XCTAssertEqual(identity.clientAuth, .privateKeyJWT(id: "svc", key: try ClientAssertionKey(privateKey: Self.rsa, keyID: "k1")))
        guard case .privateKeyJWT(_, let key) = identity.clientAuth else { return XCTFail() }
        XCTAssertEqual(key.algorithm, .rs256)
        XCTAssertEqual(identity.clientAssertionAudience, .tokenEndpoint)
    }

    func testAnECKeyDefaultsToES256AndAnRSAKeyMaySignPS256() throws {
        let ec = try decoded(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem""#, key: Self.ec)
        guard case .privateKeyJWT(_, let ecKey) = ec.clientAuth else { return XCTFail() }
        XCTAssertEqual(ecKey.algorithm, .es256)
        let ps = try decoded(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "clientAssertionAlg": "PS256""#)
        guard case .privateKeyJWT(_, let psKey) = ps.clientAuth else { return XCTFail() }
        XCTAssertEqual(psKey.algorithm, .ps256)
    }

    func testClientSecretJWTKeepsTheSecret() throws {
        let identity = try decoded(#""clientId": "svc", "clientAuth": "client_secret_jwt", "clientSecret": "\#(Self.longSecret)""#)
        XCTAssertEqual(identity.clientAuth, .clientSecretJWT(id: "svc", secret: Secret(Self.longSecret)))
    }

    func testTheIssuerAudienceNeedsAnIssuer() throws {
        let identity = try decoded(#""clientId": "svc", "clientAuth": "client_secret_jwt", "clientSecret": "\#(Self.longSecret)", "#
                                   + #""issuer": "https://idp.example.com", "clientAssertionAudience": "issuer""#)
        XCTAssertEqual(identity.issuer, "https://idp.example.com")
        XCTAssertEqual(identity.clientAssertionAudience, .issuer)
        XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "client_secret_jwt", "clientSecret": "\#(Self.longSecret)", "#
                                  + #""clientAssertionAudience": "issuer""#),
                       [#"$.identities.x.clientAssertionAudience: "issuer" needs the identity's issuer key"#])
        XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "#
                                  + #""clientAssertionAudience": "realm""#),
                       [#"$.identities.x.clientAssertionAudience: expected "tokenUrl" or "issuer", got "realm""#])
    }

    func testPrivateKeyJWTNeedsAKeyFileAndNoSecret() throws {
        XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "private_key_jwt""#),
                       ["$.identities.x.clientAuth: clientAuth private_key_jwt needs clientKeyFile"])
        XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "clientSecret": "s""#),
                       ["$.identities.x.clientAuth: clientAuth private_key_jwt signs with clientKeyFile; remove the client secret"])
    }

    func testTheJWTMethodsNeedAClientId() throws {
        XCTAssertEqual(try errors(#""grant": "urn:example:grant", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem""#),
                       ["$.identities.x.clientId: required with clientAuth private_key_jwt: the client assertion's iss and sub"])
    }

    func testAShortClientSecretJWTSecretIsAnErrorThatShowsOnlyItsLength() throws {
        let errors = try errors(#""clientId": "svc", "clientAuth": "client_secret_jwt", "clientSecret": "too-short-secret""#)
        XCTAssertEqual(errors, ["$.identities.x.clientAuth: clientAuth client_secret_jwt signs with HS256, which needs a client secret "
                                + "of at least 32 bytes (RFC 7518 §3.2); this one has 16"])
        XCTAssertFalse(errors.joined().contains("too-short-secret"))
        XCTAssertEqual(try self.errors(#""clientId": "svc", "clientAuth": "client_secret_jwt""#),
                       ["$.identities.x.clientAuth: clientAuth client_secret_jwt needs clientSecret or clientSecretFile"])
    }

    func testAnAlgorithmThatDoesNotFitTheKeyIsReported() throws {
        XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "clientAssertionAlg": "RS256""#,
                                  key: Self.ec).map { $0.replacing(#/in /\S+/key\.pem/#, with: "in key.pem") },
                       ["$.identities.x.clientAssertionAlg: clientAssertionAlg RS256 does not fit the EC P-256 key in key.pem"])
    }

    func testOnlyRS256PS256AndES256AreAllowed() throws {
        for name in ["HS256", "EdDSA", "none", "RS512"] {
            XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "clientAssertionAlg": "\#(name)""#),
                           [#"$.identities.x.clientAssertionAlg: expected one of RS256, PS256, ES256, got "\#(name)""#])
        }
    }

    func testAnUnusableKeyFileIsReportedWithoutItsContent() throws {
        let junk = "-----BEGIN PRIVATE KEY-----\nTm90QUtleUF0QWxsSnVzdFNvbWVUZXh0\n-----END PRIVATE KEY-----\n"
        let junkErrors = try errors(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem""#, pem: junk)
        XCTAssertEqual(junkErrors.count, 1)
        XCTAssertTrue(junkErrors[0].hasPrefix("$.identities.x.clientKeyFile: not a usable PEM private key"), junkErrors[0])
        XCTAssertFalse(junkErrors[0].contains("Tm90QUtl"))
        let edErrors = try errors(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem""#,
                                  key: try PrivateKey.generate(.ed25519))
        XCTAssertEqual(edErrors.count, 1)
        XCTAssertTrue(edErrors[0].contains("an Ed25519 key cannot sign client assertions"), edErrors[0])
        XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "missing.pem""#)
                        .map { $0.replacing(#/: /\S+/missing\.pem/#, with: ": missing.pem") },
                       ["$.identities.x.clientKeyFile: no such file: missing.pem"])
    }

    func testAPublicKeyFileIsNotAPrivateKey() throws {
        let errors = try errors(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem""#,
                                pem: try Self.rsa.publicKey.pemRepresentation())
        XCTAssertEqual(errors.count, 1)
        XCTAssertTrue(errors[0].contains("no unencrypted private key"), errors[0])
    }

    func testAssertionKeysAreRefusedForOtherMethods() throws {
        XCTAssertEqual(try errors(#""clientId": "svc", "clientSecret": "s", "clientKeyFile": "key.pem", "clientAssertionAudience": "issuer", "issuer": "https://i""#), [
            "$.identities.x.clientKeyFile: clientKeyFile is only used by clientAuth private_key_jwt, not by basic",
            "$.identities.x.clientAssertionAudience: clientAssertionAudience is only used by clientAuth private_key_jwt and client_secret_jwt, not by basic",
        ])
        XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "client_secret_jwt", "clientSecret": "\#(Self.longSecret)", "clientKeyId": "k1""#),
                       ["$.identities.x.clientKeyId: clientKeyId is only used by clientAuth private_key_jwt, not by client_secret_jwt"])
    }

    // MARK: sendClientIdWithAssertion

    func testClientIdGoesWithTheAssertionUnlessTurnedOff() throws {
        let jwt = #""clientId": "svc", "clientAuth": "client_secret_jwt", "clientSecret": "\#(Self.longSecret)""#
        XCTAssertTrue(try decoded(jwt).sendClientIdWithAssertion)
        XCTAssertFalse(try decoded(jwt + #", "sendClientIdWithAssertion": false"#).sendClientIdWithAssertion)
        XCTAssertFalse(try decoded(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "#
                                   + #""sendClientIdWithAssertion": false"#).sendClientIdWithAssertion)
    }

    func testSendClientIdWithAssertionRefusals() throws {
        XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "#
                                  + #""sendClientIdWithAssertion": "no""#),
                       ["$.identities.x.sendClientIdWithAssertion: expected a boolean (true or false), got string"])
        XCTAssertEqual(try errors(#""clientId": "svc", "clientSecret": "s", "sendClientIdWithAssertion": false"#),
                       ["$.identities.x.sendClientIdWithAssertion: sendClientIdWithAssertion is only used by clientAuth "
                        + "private_key_jwt, client_secret_jwt and client_assertion_file, not by basic"])
        XCTAssertEqual(try errors(#""clientId": "svc", "clientAuth": "none", "sendClientIdWithAssertion": true"#),
                       ["$.identities.x.sendClientIdWithAssertion: sendClientIdWithAssertion is only used by clientAuth "
                        + "private_key_jwt, client_secret_jwt and client_assertion_file, not by none"])
    }

    // MARK: clientCertFile and clientCertHeaders

    /// `key.pem` holding `rsa`, `cert.pem` a certificate openssl made for it, and `other.pem` one
    /// it made for another key.
    private func certificateFiles() throws -> (files: [String: String], certificate: IssuedCertificate) {
        let pem = try Self.rsa.pemRepresentation()
        let certificate = try IssuedCertificate.selfSigned(forKey: pem)
        let other = try IssuedCertificate.selfSigned(forKey: PrivateKey.generate(.ecP256).pemRepresentation())
        return (["key.pem": pem, "cert.pem": certificate.pem, "other.pem": other.pem, "chain.pem": certificate.pem + other.pem], certificate)
    }

    private let certificateIdentity = #""clientId": "svc", "clientAuth": "private_key_jwt", "clientKeyFile": "key.pem", "clientKeyId": "k1""#

    private func assertionKey(_ body: String) throws -> ClientAssertionKey {
        let config = try decodeConfig(identityJSON(body), besideFiles: certificateFiles().files).get()
        guard case .privateKeyJWT(_, let key) = try XCTUnwrap(config.identities["x"]).clientAuth else {
            throw XCTSkip("not private_key_jwt")
        }
        return key
    }

    func testTheCertificateBesideTheKeyIsNamedByBothThumbprintsByDefault() throws {
        let (files, certificate) = try certificateFiles()
        let config = try decodeConfig(identityJSON(certificateIdentity + #", "clientCertFile": "cert.pem""#), besideFiles: files).get()
        guard case .privateKeyJWT(let id, let key) = try XCTUnwrap(config.identities["x"]).clientAuth else { return XCTFail() }
        XCTAssertEqual(id, "svc")
        XCTAssertEqual(key.keyID, "k1")
        XCTAssertEqual(key, try ClientAssertionKey(keyPEM: Self.rsa.pemRepresentation(), certificatePEM: certificate.pem,
                                                   certificateMembers: [.sha256Thumbprint, .sha1Thumbprint], keyID: "k1"))
        XCTAssertEqual(key.certificate?.members, [.sha256Thumbprint, .sha1Thumbprint], "Entra's x5t#S256 and ADFS's x5t")
    }

    func testClientCertHeadersChooseTheMembersInTheirOrder() throws {
        let key = try assertionKey(certificateIdentity + #", "clientCertFile": "chain.pem", "clientCertHeaders": ["x5c", "x5t"]"#)
        XCTAssertEqual(key.certificate?.members, [.chain, .sha1Thumbprint])
        XCTAssertEqual(try assertionKey(certificateIdentity + #", "clientCertFile": "cert.pem", "clientCertHeaders": ["x5t#S256", "x5t", "x5c"]"#)
                        .certificate?.members, [.sha256Thumbprint, .sha1Thumbprint, .chain])
    }

    func testClientCertRefusals() throws {
        let (files, _) = try certificateFiles()
        let jwtSecret = #""clientId": "svc", "clientAuth": "client_secret_jwt", "clientSecret": "\#(Self.longSecret)""#
        let table: [(body: String, expected: [String])] = [
            (#", "clientCertFile": "cert.pem", "clientCertHeaders": "x5t""#,
             ["$.identities.x.clientCertHeaders: expected an array, got string"]),
            (#", "clientCertFile": "cert.pem", "clientCertHeaders": []"#,
             [#"$.identities.x.clientCertHeaders: must name at least one of "x5t#S256", "x5t" or "x5c""#]),
            (#", "clientCertFile": "cert.pem", "clientCertHeaders": ["x5t", "x5u"]"#,
             [#"$.identities.x.clientCertHeaders[1]: expected "x5t#S256", "x5t" or "x5c", got "x5u""#]),
            (#", "clientCertFile": "cert.pem", "clientCertHeaders": ["X5T"]"#,
             [#"$.identities.x.clientCertHeaders[0]: expected "x5t#S256", "x5t" or "x5c", got "X5T""#]),
            (#", "clientCertFile": "cert.pem", "clientCertHeaders": ["x5t", "x5c", "x5t"]"#,
             [#"$.identities.x.clientCertHeaders[2]: "x5t" is listed twice"#]),
            (#", "clientCertFile": "cert.pem", "clientCertHeaders": [1]"#,
             ["$.identities.x.clientCertHeaders[0]: expected a string, got number"]),
            (#", "clientCertHeaders": ["x5t"]"#,
             ["$.identities.x.clientCertHeaders: clientCertHeaders needs clientCertFile, the certificate they name"]),
            (#", "clientCertFile": "missing.pem""#,
             ["$.identities.x.clientCertFile: no such file: DIR/missing.pem"]),
            (#", "clientCertFile": "other.pem""#,
             ["$.identities.x.clientCertFile: the certificate in DIR/other.pem is not for the private key in DIR/key.pem: "
              + "their public keys differ"]),
            (#", "clientCertFile": "key.pem""#,
             ["$.identities.x.clientCertFile: not a usable PEM certificate (the certificate could not be read: no certificate "
              + "in the PEM text (no start line)): DIR/key.pem"]),
        ]
        for (body, expected) in table {
            let errors = try configErrors(identityJSON(certificateIdentity + body), besideFiles: files)
            XCTAssertEqual(errors.map { $0.replacing(#/\/\S+/oauth-relay-tests-[^/]+/#, with: "DIR") }, expected, body)
            XCTAssertFalse(errors.joined().contains("BEGIN"), body)
        }
        let otherMethods: [(body: String, expected: [String])] = [
            (#""clientId": "svc", "clientSecret": "s", "clientCertFile": "cert.pem""#,
             ["$.identities.x.clientCertFile: clientCertFile is only used by clientAuth private_key_jwt, not by basic"]),
            (jwtSecret + #", "clientCertFile": "cert.pem", "clientCertHeaders": ["x5t"]"#, [
                "$.identities.x.clientCertFile: clientCertFile is only used by clientAuth private_key_jwt, not by client_secret_jwt",
                "$.identities.x.clientCertHeaders: clientCertHeaders is only used by clientAuth private_key_jwt, not by client_secret_jwt",
            ]),
        ]
        for (body, expected) in otherMethods {
            XCTAssertEqual(try configErrors(identityJSON(body), besideFiles: files), expected, body)
        }
    }
}
