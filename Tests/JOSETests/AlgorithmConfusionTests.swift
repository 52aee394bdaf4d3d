import Crypto
import JOSE
import XCTest

/// The header's `alg` never picks a check the key did not allow.
final class AlgorithmConfusionTests: JOSETestCase {
    private func compact(header: String, payload: String = #"{"sub":"x"}"#, signature: [UInt8] = []) -> String {
        Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8)) + "." + Base64URL.encode(signature)
    }

    func testAlgNoneIsRefusedWhenRead() {
        XCTAssertThrowsJOSE(try JWS(compact: compact(header: #"{"alg":"none"}"#)),
                            .algorithmNotAllowed("\"none\" (an unsigned JWS) is never accepted"))
        XCTAssertThrowsJOSE(try JWS(compact: compact(header: #"{"alg":"NoNe"}"#)),
                            .algorithmNotAllowed("\"none\" (an unsigned JWS) is never accepted"))
    }

    /// RFC 7515 §5.2: with a repeated header member, the lexically last one counts.
    func testARepeatedAlgIsReadAsTheLastOne() throws {
        XCTAssertThrowsJOSE(try JWS(compact: compact(header: #"{"alg":"ES256","alg":"none"}"#)),
                            .algorithmNotAllowed("\"none\" (an unsigned JWS) is never accepted"))
        XCTAssertEqual(try JWS(compact: compact(header: #"{"alg":"none","alg":"ES256"}"#)).header.algorithm, .es256)
    }

    func testUnknownAlgorithmsAreRefused() {
        XCTAssertThrowsJOSE(try JWS(compact: compact(header: #"{"alg":"HS512"}"#)), .unsupportedAlgorithm("HS512"))
        XCTAssertThrowsJOSE(try JWS(compact: compact(header: #"{"alg":"ES256K"}"#)), .unsupportedAlgorithm("ES256K"))
    }

    /// The classic attack: HS256 "signed" with the server's RSA public key (its PEM) as the secret.
    func testHS256SignedWithThePublicKeyIsRefusedByAPublicKey() throws {
        let publicPEM = try TestKeys.rsa.publicKey.pemRepresentation()
        let header = Base64URL.encode(Array(#"{"alg":"HS256"}"#.utf8))
        let payload = Base64URL.encode(Array(#"{"sub":"admin"}"#.utf8))
        let mac = try HMACSHA256.authenticationCode(for: Array("\(header).\(payload)".utf8), key: SymmetricKey(Array(publicPEM.utf8)))
        let forged = try JWS(compact: "\(header).\(payload).\(Base64URL.encode(mac))")
        XCTAssertThrowsJOSE(try forged.verify(with: JWSVerificationKey(publicKey: TestKeys.rsa.publicKey)),
                            .algorithmNotAllowed("HS256 is not allowed for this key"))
    }

    func testAPublicKeyNeverAllowsHS256EvenWhenAsked() {
        XCTAssertThrowsJOSE(try JWSVerificationKey(publicKey: TestKeys.rsa.publicKey, allowing: [.hs256]),
                            .algorithmNotAllowed("none of the allowed algorithms fits an RSA 2048 key"))
    }

    func testAnES256HeaderIsRefusedByAnRSAKey() throws {
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .es256), with: TestKeys.signer(.es256))
        XCTAssertThrowsJOSE(try jws.verify(with: JWSVerificationKey(publicKey: TestKeys.rsa.publicKey)),
                            .algorithmNotAllowed("ES256 is not allowed for this key"))
    }

    func testAnRSAKeyLimitedToPS256RefusesRS256() throws {
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .rs256), with: TestKeys.signer(.rs256))
        XCTAssertThrowsJOSE(try jws.verify(with: JWSVerificationKey(publicKey: TestKeys.rsa.publicKey, allowing: [.ps256])),
                            .algorithmNotAllowed("RS256 is not allowed for this key"))
    }

    func testAJWKWithAlgAllowsOnlyThatAlgorithm() throws {
        let jwk = try JWK(publicKey: TestKeys.rsa.publicKey, algorithm: .ps256)
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .rs256), with: TestKeys.signer(.rs256))
        XCTAssertThrowsJOSE(try jws.verify(with: JWSVerificationKey(jwk: jwk)), .algorithmNotAllowed("RS256 is not allowed for this key"))
    }

    func testAnHMACSecretAllowsOnlyHS256() throws {
        let jws = try JWS.sign([1], header: JWSHeader(algorithm: .es256), with: TestKeys.signer(.es256))
        XCTAssertThrowsJOSE(try jws.verify(with: JWSVerificationKey(hmacSecret: TestKeys.secret)),
                            .algorithmNotAllowed("ES256 is not allowed for this key"))
    }

    func testASignerRefusesAKeyThatDoesNotFit() {
        XCTAssertThrowsJOSE(try JWSSigner(privateKey: TestKeys.ec, algorithm: .rs256),
                            .algorithmNotAllowed("RS256 does not fit an EC P-256 key"))
        XCTAssertThrowsJOSE(try JWSSigner(privateKey: TestKeys.rsa, algorithm: .hs256),
                            .algorithmNotAllowed("HS256 does not fit an RSA 2048 key"))
    }

    func testAShortHMACSecretIsRefused() {
        XCTAssertThrowsJOSE(try JWSSigner(hmacSecret: SymmetricKey(Array("short".utf8))),
                            .invalidKey("an HS256 secret must be at least 32 bytes (RFC 7518 §3.2)"))
    }

    func testCriticalExtensionsAreRefused() {
        XCTAssertThrowsJOSE(try JWS(compact: compact(header: #"{"alg":"ES256","crit":["b64"],"b64":false}"#)),
                            .unsupportedCriticalHeader)
    }

    func testErrorsDoNotEchoControlCharactersOrLongNames() {
        // The name decodes to ESC followed by 100 X: shown are the 31 X left of the first 32 characters.
        let name = #"\u001b"# + String(repeating: "X", count: 100)
        XCTAssertThrowsJOSE(try JWS(compact: compact(header: #"{"alg":"\#(name)"}"#)),
                            .unsupportedAlgorithm(String(repeating: "X", count: 31)))
    }
}
