import Crypto
import JOSE
import XCTest

final class JWKTests: JOSETestCase {
    private func jwk(_ json: String) throws -> JWK {
        try JWK(json: Array(json.utf8))
    }

    func testReadsAnRSAKeyWithKidUseAndAlg() throws {
        let key = try jwk(RFCExamples.rfc7638JWK)
        XCTAssertEqual(key.keyID, "2011-04-29")
        XCTAssertEqual(key.algorithm, "RS256")
        XCTAssertNil(key.use)
        guard case .rsa(let modulus, let exponent) = key.components else { return XCTFail("not RSA") }
        XCTAssertEqual(modulus.count, 256)
        XCTAssertEqual(exponent, [1, 0, 1])
        XCTAssertEqual(try key.publicKey().kind, .rsa(bits: 2048))
    }

    func testReadsAnECKey() throws {
        let key = try jwk(RFCExamples.a3JWK)
        XCTAssertEqual(try key.publicKey().kind, .ecP256)
    }

    func testGeneratedKeysRoundTripThroughJSON() throws {
        for privateKey in [TestKeys.rsa, TestKeys.ec, TestKeys.ed25519] {
            let original = try JWK(publicKey: privateKey.publicKey, keyID: "k1", use: "sig")
            let read = try JWK(json: Array(original.jsonValue.serialized.utf8))
            XCTAssertEqual(read, original)
            XCTAssertEqual(try read.publicKey(), privateKey.publicKey)
        }
    }

    func testPrivateMembersAreRefused() throws {
        let withD = #"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","#
            + #""y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}"#
        XCTAssertThrowsJOSE(try jwk(withD), .invalidKey("the JWK holds private or symmetric key material where a public key is expected"))
    }

    func testSymmetricAndUnknownKeyTypesAreRefused() {
        XCTAssertThrowsJOSE(try jwk(#"{"kty":"oct","k":"AAAA"}"#),
                            .invalidKey("the JWK holds private or symmetric key material where a public key is expected"))
        XCTAssertThrowsJOSE(try jwk(#"{"kty":"XYZ"}"#), .invalidKey("unsupported key type \"XYZ\""))
        XCTAssertThrowsJOSE(try jwk(#"{"n":"AQAB"}"#), .malformed("the JWK has no kty"))
    }

    func testOtherCurvesAreRefused() {
        XCTAssertThrowsJOSE(try jwk(#"{"kty":"EC","crv":"P-384","x":"AA","y":"AA"}"#), .invalidKey("only the EC curve P-256 is supported"))
    }

    func testAPointOffTheCurveIsRefused() throws {
        let key = try jwk(#"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","#
            + #""y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a4"}"#)
        XCTAssertThrowsError(try key.publicKey())
    }

    func testShortRSAKeysAreRefused() throws {
        let key = JWK(components: .rsa(modulus: [0xC1] + [UInt8](repeating: 0x55, count: 127), exponent: [1, 0, 1]))
        XCTAssertThrowsError(try key.publicKey()) { error in
            XCTAssertEqual(error as? JOSEError, .invalidKey("unsupported key: RSA keys must have 2048 to 16384 bits, this one has 1024"))
        }
    }

    func testMembersOfTheWrongTypeAreRefused() {
        XCTAssertThrowsJOSE(try jwk(#"{"kty":"RSA","n":1,"e":"AQAB"}"#), .malformed("the JWK member n is not a string"))
        XCTAssertThrowsJOSE(try jwk(#"{"kty":"RSA","n":"a+b","e":"AQAB"}"#), .malformed("the JWK member n is not base64url"))
    }

    func testThumbprintsDifferBetweenKeys() throws {
        let one = try JWK(publicKey: TestKeys.ec.publicKey)
        let other = try JWK(publicKey: TestKeys.otherEC.publicKey)
        XCTAssertNotEqual(one.thumbprint, other.thumbprint)
        XCTAssertEqual(Base64URL.decode(one.thumbprint)?.count, 32)
    }
}
