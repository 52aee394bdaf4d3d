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
