import CertificateTestSupport
import Crypto
import Endpoints
import Foundation
import JOSE
import OAuth2
import SafeText
import XCTest

/// private_key_jwt and client_secret_jwt token requests: the form, and the assertion in it as the
/// IdP checks it (signature with the JOSE verifier, then RFC 7523 §3's claims).
final class ClientAssertionRequestTests: XCTestCase {
    private static let rsa = try! PrivateKey.generate(.rsa(bits: 2048))
    private static let ec = try! PrivateKey.generate(.ecP256)
    private static let jwtSecret = "0123456789abcdef0123456789abcdef-hs256"
    private let now: Int64 = 1_700_000_000
    private var random = SecureRandomNumberGenerator()

    private func privateKeyIdentity(_ grant: Grant = .clientCredentials, key: PrivateKey = rsa, algorithm: JWSAlgorithm? = nil,
                                    keyID: String? = "k1") throws -> Identity {
        let assertionKey = try ClientAssertionKey(privateKey: key, algorithm: algorithm, keyID: keyID)
        return makeIdentity(grant) { $0.clientAuth = .privateKeyJWT(id: "svc", key: assertionKey) }
    }

    private func secretIdentity(_ grant: Grant = .clientCredentials, secret: String = jwtSecret) -> Identity {
        makeIdentity(grant) { $0.clientAuth = .clientSecretJWT(id: "svc", secret: Secret(secret)) }
    }

    /// The request signed at `now`, its form fields by name.
    private func signed(_ request: TokenRequest?) throws -> (request: TokenRequest, fields: [String: [String]]) {
        let request = try XCTUnwrap(request).withClientAssertion(unixTime: now, random: &random)
        var fields: [String: [String]] = [:]
        for pair in FormURLEncoding.decode(request.bodyText) { fields[pair.name, default: []].append(pair.value) }
        return (request, fields)
    }

    /// The assertion's claims after its signature verified with `key` and RFC 7523 §3 checked.
    private func verifiedClaims(_ fields: [String: [String]], key: JWSVerificationKey,
                                audience: String = "https://idp.example.com/oauth2/token") throws -> JWTClaims {
        XCTAssertEqual(fields["client_assertion_type"], ["urn:ietf:params:oauth:client-assertion-type:jwt-bearer"])
        let assertion = try XCTUnwrap(fields["client_assertion"]?.first)
        XCTAssertEqual(fields["client_assertion"]?.count, 1)
        let claims = try JWT.verifiedClaims(assertion, key: key, rules: JWTValidationRules(issuer: "svc", audience: audience), now: now)
        XCTAssertEqual(claims.subject, "svc")
        XCTAssertEqual(claims.audience, [audience])
        XCTAssertEqual(claims.issuedAt, now)
        let expiry = try XCTUnwrap(claims.expiry)
        XCTAssertGreaterThan(expiry, now)
        XCTAssertLessThanOrEqual(expiry - now, 60)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(claims.jwtID).count, 16)
        return claims
    }

    func testPrivateKeyJWTClientCredentialsSendsAVerifiableAssertion() throws {
        let (request, fields) = try signed(TokenRequest.grant(for: try privateKeyIdentity()))
        XCTAssertEqual(request.fieldNames, ["grant_type", "client_id", "client_assertion_type", "client_assertion"])
        XCTAssertEqual(fields["grant_type"], ["client_credentials"])
        XCTAssertEqual(fields["client_id"], ["svc"])
        XCTAssertNil(request.header("Authorization"))
        XCTAssertNil(fields["client_secret"])
        _ = try verifiedClaims(fields, key: JWSVerificationKey(publicKey: Self.rsa.publicKey, allowing: [.rs256]))
        let header = try JWS(compact: try XCTUnwrap(fields["client_assertion"]?.first)).header
        XCTAssertEqual(header.algorithm, .rs256)
        XCTAssertEqual(header.keyID, "k1")
        XCTAssertEqual(header.type, "JWT")
    }

    func testPrivateKeyJWTRefreshSendsAVerifiableAssertion() throws {
        let (request, fields) = try signed(TokenRequest.refresh(for: try privateKeyIdentity(), refreshToken: Secret("rt-1")))
        XCTAssertEqual(request.purpose, .refresh)
        XCTAssertEqual(fields["grant_type"], ["refresh_token"])
        XCTAssertEqual(fields["refresh_token"], ["rt-1"])
        _ = try verifiedClaims(fields, key: JWSVerificationKey(publicKey: Self.rsa.publicKey))
    }

    func testPrivateKeyJWTWithAnECKeySignsES256AndWithPS256WhenAsked() throws {
        let (_, ecFields) = try signed(TokenRequest.grant(for: try privateKeyIdentity(key: Self.ec, keyID: nil)))
        _ = try verifiedClaims(ecFields, key: JWSVerificationKey(publicKey: Self.ec.publicKey, allowing: [.es256]))
        XCTAssertNil(try JWS(compact: try XCTUnwrap(ecFields["client_assertion"]?.first)).header.keyID)
        let (_, psFields) = try signed(TokenRequest.grant(for: try privateKeyIdentity(algorithm: .ps256)))
        _ = try verifiedClaims(psFields, key: JWSVerificationKey(publicKey: Self.rsa.publicKey, allowing: [.ps256]))
    }

    func testAnAssertionSignedWithAnotherKeyDoesNotVerify() throws {
        let (_, fields) = try signed(TokenRequest.grant(for: try privateKeyIdentity()))
        let other = try PrivateKey.generate(.ecP256)
        XCTAssertThrowsError(try verifiedClaims(fields, key: JWSVerificationKey(publicKey: other.publicKey)))
    }

    func testClientSecretJWTClientCredentialsSendsAnHS256AssertionAndNotTheSecret() throws {
        let (request, fields) = try signed(TokenRequest.grant(for: secretIdentity()))
        XCTAssertEqual(fields["grant_type"], ["client_credentials"])
        XCTAssertFalse(request.bodyText.contains(Self.jwtSecret))
        XCTAssertNil(request.header("Authorization"))
        _ = try verifiedClaims(fields, key: JWSVerificationKey(hmacSecret: SymmetricKey(Array(Self.jwtSecret.utf8))))
    }

    func testClientSecretJWTRefreshSendsAnHS256Assertion() throws {
        let (_, fields) = try signed(TokenRequest.refresh(for: secretIdentity(), refreshToken: Secret("rt-1")))
        XCTAssertEqual(fields["grant_type"], ["refresh_token"])
        _ = try verifiedClaims(fields, key: JWSVerificationKey(hmacSecret: SymmetricKey(Array(Self.jwtSecret.utf8))))
    }

    func testEveryRequestGetsANewJTI() throws {
        let request = try XCTUnwrap(TokenRequest.grant(for: secretIdentity()))
        let key = JWSVerificationKey(hmacSecret: SymmetricKey(Array(Self.jwtSecret.utf8)))
        var seen = Set<String>()
        for _ in 0..<50 {
            let (_, fields) = try signed(request)
            seen.insert(try XCTUnwrap(verifiedClaims(fields, key: key).jwtID))
        }
        XCTAssertEqual(seen.count, 50)
    }

    func testTheIssuerIsTheAudienceWhenAsked() throws {
        var identity = try privateKeyIdentity()
        identity.issuer = "https://idp.example.com"
        identity.clientAssertionAudience = .issuer
        let (_, fields) = try signed(TokenRequest.grant(for: identity))
        _ = try verifiedClaims(fields, key: JWSVerificationKey(publicKey: Self.rsa.publicKey), audience: "https://idp.example.com")
    }

    func testAnUnsignedRequestSaysItNeedsItsAssertionAndOtherMethodsDoNot() throws {
        let unsigned = try XCTUnwrap(TokenRequest.grant(for: try privateKeyIdentity()))
        XCTAssertTrue(unsigned.needsClientAssertion)
        XCTAssertFalse(unsigned.bodyText.contains("client_assertion"))
        XCTAssertFalse(try signed(unsigned).request.needsClientAssertion)
        let basic = try XCTUnwrap(TokenRequest.grant(for: makeIdentity()))
        XCTAssertFalse(basic.needsClientAssertion)
        XCTAssertEqual(try basic.withClientAssertion(unixTime: now, random: &random).bodyText, basic.bodyText)
    }

    func testATooShortHS256SecretFailsWithoutSendingOrQuotingIt() throws {
        let request = try XCTUnwrap(TokenRequest.grant(for: secretIdentity(secret: "short-secret-value")))
        XCTAssertThrowsError(try request.withClientAssertion(unixTime: now, random: &random)) { error in
            guard case .clientAssertionFailed(let reason) = error as? TokenEndpointError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("32 bytes"), reason)
            XCTAssertFalse("\(error)".contains("short-secret-value"))
        }
    }

    func testNeitherKeyNorAssertionAppearsInDescriptions() throws {
        let identity = try privateKeyIdentity()
        let (request, fields) = try signed(TokenRequest.grant(for: identity))
        let assertion = try XCTUnwrap(fields["client_assertion"]?.first)
        let pem = try Self.rsa.pemRepresentation()
        let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
        for text in ["\(request)", String(reflecting: request), "\(identity)", String(reflecting: identity), "\(identity.clientAuth)"] {
            XCTAssertFalse(text.contains(assertion), text)
            XCTAssertFalse(text.contains(String(assertion.split(separator: ".").last ?? "")), text)
            XCTAssertFalse(text.contains(body), text)
        }
        XCTAssertTrue("\(identity.clientAuth)".contains("RS256"))
    }

    func testAnEchoedAssertionIsRemovedFromErrors() throws {
        let (request, fields) = try signed(TokenRequest.grant(for: try privateKeyIdentity()))
        let assertion = try XCTUnwrap(fields["client_assertion"]?.first)
        XCTAssertThrowsError(try request.parseResponse(reply(400, #"{"error":"invalid_client","error_description":"bad \#(assertion)"}"#),
                                                       unixTime: 1_700_000_000)) { error in
            XCTAssertEqual((error as? TokenEndpointError)?.oauthError?.code.rawValue, "invalid_client")
            XCTAssertFalse("\(error)".contains(assertion))
        }
    }

    // MARK: client_id beside the assertion

    func testClientIdGoesBesideTheAssertionByDefaultForBothMethods() throws {
        for identity in [try privateKeyIdentity(), secretIdentity()] {
            XCTAssertTrue(identity.sendClientIdWithAssertion)
            let (grant, grantFields) = try signed(TokenRequest.grant(for: identity))
            XCTAssertEqual(grantFields["client_id"], ["svc"], "\(identity.clientAuth.name)")
            XCTAssertEqual(grant.fieldNames.filter { $0 == "client_id" }.count, 1)
            let (_, refreshFields) = try signed(TokenRequest.refresh(for: identity, refreshToken: Secret("rt-1")))
            XCTAssertEqual(refreshFields["client_id"], ["svc"], "\(identity.clientAuth.name)")
        }
    }

    func testClientIdIsLeftOutWhenTheIdentitySaysSo() throws {
        for var identity in [try privateKeyIdentity(), secretIdentity()] {
            identity.sendClientIdWithAssertion = false
            let (request, fields) = try signed(TokenRequest.grant(for: identity))
            XCTAssertNil(fields["client_id"], "\(identity.clientAuth.name)")
            XCTAssertEqual(request.fieldNames, ["grant_type", "client_assertion_type", "client_assertion"])
            let (_, refreshFields) = try signed(TokenRequest.refresh(for: identity, refreshToken: Secret("rt-1")))
            XCTAssertNil(refreshFields["client_id"])
            // The assertion still names the client.
            _ = try verifiedClaims(refreshFields, key: identity.clientAuth.name == "private_key_jwt"
                                   ? JWSVerificationKey(publicKey: Self.rsa.publicKey)
                                   : JWSVerificationKey(hmacSecret: SymmetricKey(Array(Self.jwtSecret.utf8))))
        }
    }

    func testAnAssertionFromAFileHasItsClientIdBeforeItUnlessLeftOut() throws {
        let assertion = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhcHAifQ.c2ln"
        var identity = makeIdentity { $0.clientAuth = .clientAssertion(id: "app", assertion: Secret(assertion)) }
        XCTAssertEqual(try XCTUnwrap(TokenRequest.grant(for: identity)).fieldNames,
                       ["grant_type", "client_id", "client_assertion_type", "client_assertion"])
        identity.sendClientIdWithAssertion = false
        XCTAssertEqual(try XCTUnwrap(TokenRequest.grant(for: identity)).fieldNames, ["grant_type", "client_assertion_type", "client_assertion"])
        let anonymous = makeIdentity { $0.clientAuth = .clientAssertion(id: nil, assertion: Secret(assertion)) }
        XCTAssertEqual(try XCTUnwrap(TokenRequest.grant(for: anonymous)).fieldNames, ["grant_type", "client_assertion_type", "client_assertion"])
    }

    func testTheSettingDoesNotTouchMethodsWithoutAnAssertion() throws {
        for auth in [TestClientAuth.basic, .post, .publicClient] {
            let identity = makeIdentity(auth: auth) { $0.sendClientIdWithAssertion = false }
            let sent = try XCTUnwrap(TokenRequest.grant(for: identity)).fieldNames.filter { $0 == "client_id" }
            XCTAssertEqual(sent, auth == .basic ? [] : ["client_id"], "\(auth)")
        }
    }

    // MARK: certificates (x5t#S256, x5t, x5c)

    /// The assertion's header when the key comes with a certificate for it (made by openssl).
    private func certificateHeader(_ members: [JWSCertificateReference.Member], key: PrivateKey = rsa,
                                   certificate: IssuedCertificate) throws -> JWSHeader {
        let assertionKey = try ClientAssertionKey(keyPEM: key.pemRepresentation(), certificatePEM: certificate.pem,
                                                  certificateMembers: members, keyID: "k1")
        let identity = makeIdentity { $0.clientAuth = .privateKeyJWT(id: "svc", key: assertionKey) }
        let (_, fields) = try signed(TokenRequest.grant(for: identity))
        _ = try verifiedClaims(fields, key: JWSVerificationKey(publicKey: key.publicKey))
        return try JWS(compact: try XCTUnwrap(fields["client_assertion"]?.first)).header
    }

    func testACertificateIsNamedByItsSHA256ThumbprintAsOpenSSLComputesIt() throws {
        let certificate = try IssuedCertificate.selfSigned(forKey: Self.rsa.pemRepresentation())
        let header = try certificateHeader([.sha256Thumbprint], certificate: certificate)
        XCTAssertEqual(header.x509SHA256Thumbprint, certificate.sha256Thumbprint)
        XCTAssertNil(header.x509SHA1Thumbprint)
        XCTAssertNil(header.x509Chain)
        XCTAssertEqual(header.keyID, "k1", "the kid stays as configured")
        XCTAssertEqual(header.algorithm, .rs256)
    }

    func testTheSHA1ThumbprintAndTheChainWhenAsked() throws {
        let certificate = try IssuedCertificate.selfSigned(forKey: Self.ec.pemRepresentation())
        let header = try certificateHeader([.sha1Thumbprint, .chain], key: Self.ec, certificate: certificate)
        XCTAssertEqual(header.x509SHA1Thumbprint, certificate.sha1Thumbprint)
        XCTAssertNil(header.x509SHA256Thumbprint)
        let chain = try XCTUnwrap(header.x509Chain)
        XCTAssertEqual(chain.count, 1)
        XCTAssertEqual(Base64URL.encode(SHA256.hash(try XCTUnwrap(Data(base64Encoded: chain[0])))), certificate.sha256Thumbprint)
    }

    func testAKeyFromPEMWithoutACertificateIsTheKeyItself() throws {
        let key = try ClientAssertionKey(keyPEM: Self.rsa.pemRepresentation(), keyID: "k1")
        XCTAssertEqual(key, try ClientAssertionKey(privateKey: Self.rsa, keyID: "k1"))
        XCTAssertNil(key.certificate)
    }

    func testKeyAndCertificateTextThatCannotSignAreRefused() throws {
        let rsaPEM = try Self.rsa.pemRepresentation()
        let otherCertificate = try IssuedCertificate.selfSigned(forKey: PrivateKey.generate(.rsa(bits: 2048)).pemRepresentation())
        let cases: [(String, String, String?, JWSAlgorithm?, (ClientAssertionKey.Problem) -> Bool)] = [
            ("not a key", "junk", nil, nil, { if case .unreadableKey = $0 { true } else { false } }),
            ("a certificate as the key", otherCertificate.pem, nil, nil, { if case .unreadableKey = $0 { true } else { false } }),
            ("Ed25519", try PrivateKey.generate(.ed25519).pemRepresentation(), nil, nil, { $0 == .unsupportedKey(.ed25519) }),
            ("ES256 on RSA", rsaPEM, nil, .es256, { $0 == .algorithmMismatch(.es256, .rsa(bits: 2048)) }),
            ("not a certificate", rsaPEM, "junk", nil, { if case .unreadableCertificate = $0 { true } else { false } }),
            ("the key as the certificate", rsaPEM, rsaPEM, nil, { if case .unreadableCertificate = $0 { true } else { false } }),
            ("another key's certificate", rsaPEM, otherCertificate.pem, nil, { $0 == .certificateKeyMismatch }),
        ]
        for (label, keyPEM, certificatePEM, algorithm, expected) in cases {
            XCTAssertThrowsError(try ClientAssertionKey(keyPEM: keyPEM, certificatePEM: certificatePEM, algorithm: algorithm), label) { error in
                guard let problem = error as? ClientAssertionKey.Problem else { return XCTFail("\(label): \(error)") }
                XCTAssertTrue(expected(problem), "\(label): \(problem)")
                XCTAssertFalse("\(problem)".contains(String(rsaPEM.split(separator: "\n")[1])), label)
            }
        }
    }

    func testKeysWithCertificatesCompareByWhatTheHeaderSends() throws {
        let pem = try Self.rsa.pemRepresentation()
        let first = try IssuedCertificate.selfSigned(forKey: pem, subject: "/CN=first")
        let renewed = try IssuedCertificate.selfSigned(forKey: pem, subject: "/CN=renewed")
        let key = try ClientAssertionKey(keyPEM: pem, certificatePEM: first.pem, keyID: "k1")
        XCTAssertEqual(key, try ClientAssertionKey(keyPEM: pem, certificatePEM: first.pem, keyID: "k1"))
        XCTAssertNotEqual(key, try ClientAssertionKey(keyPEM: pem, certificatePEM: renewed.pem, keyID: "k1"))
        XCTAssertNotEqual(key, try ClientAssertionKey(keyPEM: pem, certificatePEM: first.pem, certificateMembers: [.sha1Thumbprint], keyID: "k1"))
        XCTAssertNotEqual(key, try ClientAssertionKey(keyPEM: pem, keyID: "k1"))
        XCTAssertEqual("\(key)", #"RS256 key "k1" with certificate (x5t#S256)"#)
    }

    func testKeysCompareByPublicHalfAlgorithmAndKeyID() throws {
        let key = try ClientAssertionKey(privateKey: Self.rsa, keyID: "k1")
        XCTAssertEqual(key, try ClientAssertionKey(privateKey: Self.rsa, algorithm: .rs256, keyID: "k1"))
        XCTAssertNotEqual(key, try ClientAssertionKey(privateKey: Self.rsa, algorithm: .ps256, keyID: "k1"))
        XCTAssertNotEqual(key, try ClientAssertionKey(privateKey: Self.rsa, keyID: "k2"))
        XCTAssertNotEqual(key, try ClientAssertionKey(privateKey: try PrivateKey.generate(.rsa(bits: 2048)), keyID: "k1"))
        XCTAssertThrowsError(try ClientAssertionKey(privateKey: Self.ec, algorithm: .rs256))
    }
}
