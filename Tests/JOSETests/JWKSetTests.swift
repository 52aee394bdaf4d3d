import Crypto
import JOSE
import XCTest

final class JWKSetTests: JOSETestCase {
    private func set(_ keys: [JWK], extra: [String] = []) throws -> JWKSet {
        let entries = keys.map(\.jsonValue.serialized) + extra
        return try JWKSet(json: Array(#"{"keys":[\#(entries.joined(separator: ","))]}"#.utf8))
    }

    private let rsaKey = try! JWK(publicKey: TestKeys.rsa.publicKey, keyID: "rsa-1", use: "sig")
    private let ecKey = try! JWK(publicKey: TestKeys.ec.publicKey, keyID: "ec-1")

    func testLooksUpKeysByKid() throws {
        let jwks = try set([rsaKey, ecKey])
        XCTAssertEqual(jwks.key(withID: "ec-1"), ecKey)
        XCTAssertNil(jwks.key(withID: "missing"))
    }

    func testSkipsKeysItCannotUse() throws {
        let jwks = try set([rsaKey], extra: [#"{"kty":"oct","k":"AAAA"}"#, #"{"kty":"EC","crv":"P-521","x":"AA","y":"AA"}"#, "17"])
        XCTAssertEqual(jwks.keys, [rsaKey])
        XCTAssertEqual(jwks.skippedCount, 3)
    }

    func testRefusesADocumentWithoutKeys() {
        XCTAssertThrowsJOSE(try JWKSet(json: Array(#"{"key":[]}"#.utf8)), .malformed("the JWKS has no keys array"))
        XCTAssertThrowsJOSE(try JWKSet(json: Array("not json".utf8)), .malformed("the JWKS is not a JSON object"))
    }

    func testVerifiesWithTheKeyTheHeaderNames() throws {
        let jwks = try set([rsaKey, ecKey])
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .es256, keyID: "ec-1"), with: TestKeys.signer(.es256))
        XCTAssertEqual(try jwks.verify(jws, allowing: [.rs256, .es256]), ecKey)
    }

    func testAnUnknownKidIsKeyNotFound() throws {
        let jwks = try set([rsaKey])
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .rs256, keyID: "rotated"), with: TestKeys.signer(.rs256))
        XCTAssertThrowsJOSE(try jwks.verify(jws, allowing: [.rs256]), .keyNotFound(keyID: "rotated"))
    }

    func testWithoutKidEveryFittingKeyIsTried() throws {
        let other = try JWK(publicKey: TestKeys.otherRSA.publicKey)
        let jwks = try set([other, ecKey, JWK(publicKey: TestKeys.rsa.publicKey)])
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .rs256), with: TestKeys.signer(.rs256))
        XCTAssertEqual(try jwks.verify(jws, allowing: [.rs256]).components, try JWK(publicKey: TestKeys.rsa.publicKey).components)
    }

    func testAnAlgorithmOutsideTheAllowedSetIsRefused() throws {
        let jwks = try set([rsaKey])
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .ps256, keyID: "rsa-1"), with: TestKeys.signer(.ps256))
        XCTAssertThrowsJOSE(try jwks.verify(jws, allowing: [.rs256]), .algorithmNotAllowed("PS256 is not allowed for this key"))
    }

    func testEncryptionKeysAreNotUsedForSignatures() throws {
        var encryption = rsaKey
        encryption.use = "enc"
        let jwks = try set([encryption])
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .rs256, keyID: "rsa-1"), with: TestKeys.signer(.rs256))
        XCTAssertThrowsJOSE(try jwks.verify(jws, allowing: [.rs256]), .keyNotFound(keyID: "rsa-1"))
    }

    func testAnHS256TokenIsNeverCheckedAgainstAJWKS() throws {
        let jwks = try set([rsaKey])
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .hs256, keyID: "rsa-1"), with: TestKeys.signer(.hs256))
        XCTAssertThrowsJOSE(try jwks.verify(jws, allowing: Set(JWSAlgorithm.allCases)), .algorithmNotAllowed("HS256 is not allowed for this key"))
    }
}
