import JOSE
import XCTest

final class JWTClaimsTests: JOSETestCase {
    private let now: Int64 = 1_800_000_000

    private func claims(_ json: String) throws -> JWTClaims {
        try JWTClaims(payload: Array(json.utf8))
    }

    func testReadsTheRegisteredClaims() throws {
        let read = try claims(#"{"iss":"https://idp","sub":"u1","aud":"c1","exp":1800000060,"iat":1800000000,"#
            + #""nbf":1799999990,"jti":"j","nonce":"n","email":"a@b"}"#)
        XCTAssertEqual(read.issuer, "https://idp")
        XCTAssertEqual(read.subject, "u1")
        XCTAssertEqual(read.audience, ["c1"])
        XCTAssertEqual(read.expiry, 1_800_000_060)
        XCTAssertEqual(read.issuedAt, 1_800_000_000)
        XCTAssertEqual(read.notBefore, 1_799_999_990)
        XCTAssertEqual(read.jwtID, "j")
        XCTAssertEqual(read.nonce, "n")
        XCTAssertEqual(read["email"], .string("a@b"))
    }

    func testAudienceMayBeAnArray() throws {
        XCTAssertEqual(try claims(#"{"aud":["a","b"]}"#).audience, ["a", "b"])
    }

    func testBooleansAreNotTimes() throws {
        XCTAssertNil(try claims(#"{"exp":true}"#).expiry)
        XCTAssertThrowsJOSE(try claims(#"{"exp":true}"#).validate(JWTValidationRules(), now: now), .malformed("the exp claim is not a number"))
    }

    /// RFC 7515 §5.2: of a repeated claim only the last one is kept, so setting it replaces it.
    func testARepeatedClaimIsReadAsTheLastOneAlone() throws {
        var read = try claims(#"{"exp":1,"sub":"u1","exp":2}"#)
        XCTAssertEqual(read.members.map(\.name), ["sub", "exp"])
        XCTAssertEqual(read.expiry, 2)
        read.expiry = 3
        XCTAssertEqual(String(decoding: read.payload, as: UTF8.self), #"{"sub":"u1","exp":3}"#)
    }

    func testReadClaimsKeepTheirOrder() throws {
        XCTAssertEqual(String(decoding: try claims(#"{"sub":"u1","aud":"c1","exp":5}"#).payload, as: UTF8.self),
                       #"{"sub":"u1","aud":"c1","exp":5}"#)
    }

    func testBuildsClaimsInTheOrderSet() {
        var built = JWTClaims()
        built.issuer = "c"
        built.audience = ["https://idp/token"]
        built.expiry = 5
        built["htm"] = .string("GET")
        XCTAssertEqual(String(decoding: built.payload, as: UTF8.self), #"{"iss":"c","aud":"https://idp/token","exp":5,"htm":"GET"}"#)
        built.audience = ["a", "b"]
        built.issuer = nil
        XCTAssertEqual(String(decoding: built.payload, as: UTF8.self), #"{"aud":["a","b"],"exp":5,"htm":"GET"}"#)
    }

    func testEscapesStringsWhenWriting() throws {
        var built = JWTClaims()
        built.subject = "a\"b\\c\n\u{1}é"
        XCTAssertEqual(String(decoding: built.payload, as: UTF8.self), #"{"sub":"a\"b\\c\n\u0001é"}"#)
        XCTAssertEqual(try JWTClaims(payload: built.payload).subject, built.subject)
    }

    func testExpiryHonoursTheLeeway() throws {
        let token = try claims(#"{"exp":1800000000}"#)
        XCTAssertNoThrow(try token.validate(JWTValidationRules(), now: now - 1, leeway: 0))
        XCTAssertThrowsJOSE(try token.validate(JWTValidationRules(), now: now, leeway: 0), .claimRejected(.expired))
        XCTAssertNoThrow(try token.validate(JWTValidationRules(), now: now + 59, leeway: 60))
        XCTAssertThrowsJOSE(try token.validate(JWTValidationRules(), now: now + 60, leeway: 60), .claimRejected(.expired))
    }

    func testExtremeTimesDoNotWrapAround() throws {
        XCTAssertNoThrow(try claims(#"{"exp":9223372036854775807}"#).validate(JWTValidationRules(), now: now))
        XCTAssertThrowsJOSE(try claims(#"{"exp":-9223372036854775807}"#).validate(JWTValidationRules(), now: now),
                            .claimRejected(.expired))
        let early = try claims(#"{"exp":1900000000,"nbf":-9223372036854775807,"iat":-9223372036854775807}"#)
        XCTAssertNoThrow(try early.validate(JWTValidationRules(), now: now))
        let late = try claims(#"{"exp":9223372036854775807,"nbf":9223372036854775807}"#)
        XCTAssertThrowsJOSE(try late.validate(JWTValidationRules(), now: now), .claimRejected(.notYetValid))
    }

    func testMissingExpiryIsRefusedUnlessAllowed() throws {
        XCTAssertThrowsJOSE(try claims("{}").validate(JWTValidationRules(), now: now), .claimRejected(.missing("exp")))
        XCTAssertNoThrow(try claims("{}").validate(JWTValidationRules(requiresExpiry: false), now: now))
    }

    func testNotBeforeAndIssuedAtHonourTheLeeway() throws {
        let token = try claims(#"{"exp":1900000000,"nbf":1800000100,"iat":1800000100}"#)
        XCTAssertNoThrow(try token.validate(JWTValidationRules(), now: now + 40, leeway: 60))
        XCTAssertThrowsJOSE(try token.validate(JWTValidationRules(), now: now + 39, leeway: 60), .claimRejected(.notYetValid))
        let issuedLater = try claims(#"{"exp":1900000000,"iat":1800000100}"#)
        XCTAssertThrowsJOSE(try issuedLater.validate(JWTValidationRules(), now: now, leeway: 60), .claimRejected(.issuedInTheFuture))
    }

    func testIssuerAudienceAndNonceMustMatch() throws {
        let token = try claims(#"{"exp":1900000000,"iss":"https://idp","aud":["x","client"],"nonce":"n-1"}"#)
        let rules = JWTValidationRules(issuer: "https://idp", audience: "client", nonce: "n-1")
        XCTAssertNoThrow(try token.validate(rules, now: now))
        var wrong = rules
        wrong.issuer = "https://evil"
        XCTAssertThrowsJOSE(try token.validate(wrong, now: now), .claimRejected(.issuerMismatch(expected: "https://evil")))
        wrong = rules
        wrong.audience = "other"
        XCTAssertThrowsJOSE(try token.validate(wrong, now: now), .claimRejected(.audienceMismatch(expected: "other")))
        wrong = rules
        wrong.nonce = "n-2"
        XCTAssertThrowsJOSE(try token.validate(wrong, now: now), .claimRejected(.nonceMismatch))
        XCTAssertThrowsJOSE(try claims(#"{"exp":1900000000}"#).validate(JWTValidationRules(nonce: "n"), now: now),
                            .claimRejected(.missing("nonce")))
    }

    func testANonceMismatchDoesNotShowTheNonce() {
        XCTAssertFalse(JOSEError.claimRejected(.nonceMismatch).description.contains("n-1"))
    }

    func testAPayloadThatIsNotAnObjectIsRefused() {
        XCTAssertThrowsJOSE(try claims("[]"), .malformed("the JWT claims set is not a JSON object"))
        XCTAssertThrowsJOSE(try claims("{"), .malformed("the JWT claims set is not a JSON object"))
    }
}
