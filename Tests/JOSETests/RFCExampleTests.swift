import Crypto
import JOSE
import XCTest

/// The published examples, checked byte for byte.
final class RFCExampleTests: JOSETestCase {
    private func key(_ json: String) throws -> JWSVerificationKey {
        try JWSVerificationKey(jwk: JWK(json: Array(json.utf8)))
    }

    func testRFC7515A2RS256Verifies() throws {
        let jws = try JWS(compact: RFCExamples.a2JWS)
        XCTAssertEqual(jws.header.algorithm, .rs256)
        XCTAssertNoThrow(try jws.verify(with: key(RFCExamples.a2JWK)))
        XCTAssertEqual(try JWTClaims(payload: jws.payload).issuer, "joe")
    }

    func testRFC7515A3ES256Verifies() throws {
        let jws = try JWS(compact: RFCExamples.a3JWS)
        XCTAssertEqual(jws.header.algorithm, .es256)
        XCTAssertNoThrow(try jws.verify(with: key(RFCExamples.a3JWK)))
        XCTAssertEqual(try JWTClaims(payload: jws.payload).expiry, RFCExamples.exampleExpiry)
    }

    func testRFC7515ExamplesReSerialiseToTheSameText() throws {
        XCTAssertEqual(try JWS(compact: RFCExamples.a2JWS).compactSerialization, RFCExamples.a2JWS)
        XCTAssertEqual(try JWS(compact: RFCExamples.a3JWS).compactSerialization, RFCExamples.a3JWS)
    }

    func testRFC7515A2WithAChangedSignatureFails() throws {
        let jws = try JWS(compact: flippingCharacter(of: RFCExamples.a2JWS, at: -5))
        XCTAssertThrowsJOSE(try jws.verify(with: key(RFCExamples.a2JWK)), .invalidSignature)
    }

    func testRFC7515A3WithAChangedPayloadFails() throws {
        let segments = RFCExamples.a3JWS.split(separator: ".").map(String.init)
        let tampered = [segments[0], flippingCharacter(of: segments[1], at: 10), segments[2]].joined(separator: ".")
        XCTAssertThrowsJOSE(try JWS(compact: tampered).verify(with: key(RFCExamples.a3JWK)), .invalidSignature)
    }

    func testRFC7515A2DoesNotVerifyWithTheA3Key() throws {
        XCTAssertThrowsJOSE(try JWS(compact: RFCExamples.a2JWS).verify(with: key(RFCExamples.a3JWK)),
                            .algorithmNotAllowed("RS256 is not allowed for this key"))
    }

    func testRFC7638ThumbprintExample() throws {
        let jwk = try JWK(json: Array(RFCExamples.rfc7638JWK.utf8))
        XCTAssertEqual(jwk.thumbprint, RFCExamples.rfc7638Thumbprint)
    }

    func testThumbprintIgnoresOptionalMembers() throws {
        var jwk = try JWK(json: Array(RFCExamples.rfc7638JWK.utf8))
        jwk.keyID = "other"
        jwk.use = "sig"
        jwk.algorithm = nil
        XCTAssertEqual(jwk.thumbprint, RFCExamples.rfc7638Thumbprint)
    }
}
