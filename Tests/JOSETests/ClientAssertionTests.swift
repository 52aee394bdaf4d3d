import CertificateTestSupport
import Crypto
import JOSE
import XCTest

final class ClientAssertionTests: JOSETestCase {
    private let now: Int64 = 1_800_000_000

    private func make(_ signer: JWSSigner, keyID: String? = nil, lifetime: Int64 = 60) throws -> JWS {
        var random = CountingRandom()
        let text = try ClientAssertion.make(clientID: "client-1", audience: "https://idp.test/token", signer: signer,
                                            keyID: keyID, now: now, lifetime: lifetime, random: &random)
        return try JWS(compact: text)
    }

    func testCarriesTheRFC7523Claims() throws {
        let jws = try make(TestKeys.signer(.es256), keyID: "key-1")
        let claims = try JWTClaims(payload: jws.payload)
        XCTAssertEqual(claims.issuer, "client-1")
        XCTAssertEqual(claims.subject, "client-1")
        XCTAssertEqual(claims.audience, ["https://idp.test/token"])
        XCTAssertEqual(claims["aud"], .string("https://idp.test/token"))
        XCTAssertEqual(claims.issuedAt, now)
        XCTAssertEqual(claims.expiry, now + 60)
        XCTAssertEqual(claims.jwtID, Base64URL.encode([1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]))
        XCTAssertEqual(jws.header.keyID, "key-1")
        XCTAssertEqual(jws.header.type, "JWT")
        XCTAssertNoThrow(try claims.validate(JWTValidationRules(issuer: "client-1", audience: "https://idp.test/token"), now: now))
    }

    func testVerifiesForPrivateKeyJWTAndClientSecretJWT() throws {
        for algorithm in JWSAlgorithm.allCases {
            XCTAssertNoThrow(try make(TestKeys.signer(algorithm)).verify(with: TestKeys.verificationKey(algorithm)), "\(algorithm)")
        }
    }

    func testLifetimeIsCappedAtSixtySeconds() throws {
        XCTAssertEqual(try JWTClaims(payload: make(TestKeys.signer(.rs256), lifetime: 3600).payload).expiry, now + 60)
        XCTAssertEqual(try JWTClaims(payload: make(TestKeys.signer(.rs256), lifetime: 30).payload).expiry, now + 30)
    }

    func testDefaultLifetimeLeavesRoomForAnIdPWhoseClockTrailsOurs() throws {
        var random = CountingRandom()
        let text = try ClientAssertion.make(clientID: "c", audience: "a", signer: TestKeys.signer(.hs256), now: now,
                                            random: &random)
        let claims = try JWTClaims(payload: JWS(compact: text).payload)
        // An IdP capping `exp - its now` at 60 s accepts this even when its clock is 10 s behind.
        XCTAssertEqual(claims.expiry, now + 50)
    }

    func testEachAssertionHasItsOwnJTI() throws {
        var random = CountingRandom()
        let signer = try TestKeys.signer(.hs256)
        let ids = try (0..<50).map { _ in
            try JWTClaims(payload: JWS(compact: ClientAssertion.make(clientID: "c", audience: "a", signer: signer, now: now,
                                                                    random: &random)).payload).jwtID
        }
        XCTAssertEqual(Set(ids).count, 50)
    }

    func testSignerDescriptionsHideTheKey() throws {
        XCTAssertEqual(try TestKeys.signer(.hs256).description, "JWSSigner(HS256, redacted)")
        XCTAssertFalse("\(TestKeys.secret)".contains("0123"))
    }
}

/// The header members naming the signer's certificate (RFC 7515 §4.1.6–§4.1.8), with the values
/// the `openssl` command computed for the fixture certificates (CertificateFixtures).
final class CertificateHeaderTests: JOSETestCase {
    private func header(_ members: [JWSCertificateReference.Member], chainPEM: String = CertificateFixtures.leafPEM + CertificateFixtures.caPEM,
                        keyID: String? = "k1") throws -> (json: String, header: JWSHeader) {
        var random = CountingRandom()
        let reference = JWSCertificateReference(try CertificateChain(pem: chainPEM), members: members)
        let text = try ClientAssertion.make(clientID: "client-1", audience: "https://idp.test/token", signer: TestKeys.signer(.rs256),
                                            keyID: keyID, certificate: reference, now: 1_800_000_000, random: &random)
        let segment = try XCTUnwrap(text.split(separator: ".").first)
        return (String(decoding: try XCTUnwrap(Base64URL.decode(segment)), as: UTF8.self), try JWS(compact: text).header)
    }

    func testTheSHA256ThumbprintIsTheHeadersOnlyCertificateMemberByDefault() throws {
        let (json, header) = try header([.sha256Thumbprint])
        XCTAssertEqual(json, #"{"typ":"JWT","alg":"RS256","kid":"k1","x5t#S256":"\#(CertificateFixtures.leafSHA256Thumbprint)"}"#)
        XCTAssertEqual(header.x509SHA256Thumbprint, CertificateFixtures.leafSHA256Thumbprint)
        XCTAssertNil(header.x509SHA1Thumbprint)
        XCTAssertNil(header.x509Chain)
        XCTAssertEqual(header.keyID, "k1")
    }

    func testTheSHA1ThumbprintAndTheChainLeafFirst() throws {
        let (json, header) = try header([.chain, .sha1Thumbprint], keyID: nil)
        XCTAssertEqual(json, #"{"typ":"JWT","alg":"RS256","x5t":"\#(CertificateFixtures.leafSHA1Thumbprint)","#
                             + #""x5c":["\#(CertificateFixtures.leafDERBase64)","\#(CertificateFixtures.caDERBase64)"]}"#)
        XCTAssertEqual(header.x509SHA1Thumbprint, CertificateFixtures.leafSHA1Thumbprint)
        XCTAssertEqual(header.x509Chain, [CertificateFixtures.leafDERBase64, CertificateFixtures.caDERBase64])
        XCTAssertNil(header.x509SHA256Thumbprint)
    }

    func testAllThreeMembers() throws {
        let (_, header) = try header([.sha256Thumbprint, .sha1Thumbprint, .chain], chainPEM: CertificateFixtures.leafPEM)
        XCTAssertEqual(header.x509SHA256Thumbprint, CertificateFixtures.leafSHA256Thumbprint)
        XCTAssertEqual(header.x509SHA1Thumbprint, CertificateFixtures.leafSHA1Thumbprint)
        XCTAssertEqual(header.x509Chain, [CertificateFixtures.leafDERBase64])
    }

    func testReferencesCompareByWhatTheySend() throws {
        let leaf = try CertificateChain(pem: CertificateFixtures.leafPEM)
        XCTAssertEqual(JWSCertificateReference(leaf, members: [.sha256Thumbprint]), JWSCertificateReference(leaf, members: [.sha256Thumbprint]))
        XCTAssertNotEqual(JWSCertificateReference(leaf, members: [.sha256Thumbprint]), JWSCertificateReference(leaf, members: [.sha1Thumbprint]))
        let ca = try CertificateChain(pem: CertificateFixtures.caPEM)
        XCTAssertNotEqual(JWSCertificateReference(leaf, members: [.sha256Thumbprint]), JWSCertificateReference(ca, members: [.sha256Thumbprint]))
        XCTAssertEqual("\(JWSCertificateReference(leaf, members: [.sha256Thumbprint, .chain]))", "x5t#S256, x5c")
    }

    func testAnX5cThatIsNotAnArrayOfStringsIsMalformed() throws {
        for x5c in [#""one""#, "[]", "[1]"] {
            let header = Base64URL.encode(Array(#"{"alg":"RS256","x5c":\#(x5c)}"#.utf8))
            XCTAssertThrowsError(try JWS(compact: header + ".e30.AA"), x5c)
        }
    }
}
