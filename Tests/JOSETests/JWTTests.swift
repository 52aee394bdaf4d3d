import Crypto
import JOSE
import XCTest

/// ID-token style verification: signature first, then claims.
final class JWTTests: JOSETestCase {
    private let now: Int64 = 1_800_000_000
    private let rules = JWTValidationRules(issuer: "https://idp.test", audience: "relay", nonce: "nonce-1")
    private let jwks = JWKSet(keys: [try! JWK(publicKey: TestKeys.ec.publicKey, keyID: "k1"),
                                     try! JWK(publicKey: TestKeys.rsa.publicKey, keyID: "k2")])

    private func idToken(signer: JWSSigner, keyID: String = "k1", expiry: Int64? = nil, audience: String = "relay") throws -> String {
        var claims = JWTClaims()
        claims.issuer = "https://idp.test"
        claims.subject = "person-1"
        claims.audience = [audience]
        claims.issuedAt = now - 5
        claims.expiry = expiry ?? now + 300
        claims.nonce = "nonce-1"
        return try JWS.sign(claims.payload, header: JWSHeader(algorithm: signer.algorithm, type: "JWT", keyID: keyID), with: signer)
            .compactSerialization
    }

    func testAValidIDTokenGivesItsClaims() throws {
        for (algorithm, keyID) in [(JWSAlgorithm.es256, "k1"), (.rs256, "k2"), (.ps256, "k2")] {
            let token = try idToken(signer: TestKeys.signer(algorithm), keyID: keyID)
            let claims = try JWT.verifiedClaims(token, keys: jwks, allowing: [.rs256, .ps256, .es256], rules: rules, now: now)
            XCTAssertEqual(claims.subject, "person-1")
        }
    }

    func testATokenSignedByAnotherKeyIsRefusedWhateverItsClaims() throws {
        let forged = try idToken(signer: JWSSigner(privateKey: TestKeys.otherEC, algorithm: .es256))
        XCTAssertThrowsJOSE(try JWT.verifiedClaims(forged, keys: jwks, allowing: [.es256], rules: rules, now: now), .invalidSignature)
    }

    func testAnExpiredTokenIsRefusedAfterItsSignatureVerifies() throws {
        let token = try idToken(signer: TestKeys.signer(.es256), expiry: now - 120)
        XCTAssertThrowsJOSE(try JWT.verifiedClaims(token, keys: jwks, allowing: [.es256], rules: rules, now: now), .claimRejected(.expired))
    }

    func testATokenForAnotherAudienceIsRefused() throws {
        let token = try idToken(signer: TestKeys.signer(.es256), audience: "other-client")
        XCTAssertThrowsJOSE(try JWT.verifiedClaims(token, keys: jwks, allowing: [.es256], rules: rules, now: now),
                            .claimRejected(.audienceMismatch(expected: "relay")))
    }

    func testAnUnknownKidAsksForAJWKSRefetch() throws {
        let token = try idToken(signer: TestKeys.signer(.es256), keyID: "rotated")
        XCTAssertThrowsJOSE(try JWT.verifiedClaims(token, keys: jwks, allowing: [.es256], rules: rules, now: now),
                            .keyNotFound(keyID: "rotated"))
    }

    func testAClientSecretJWTVerifiesWithTheSecret() throws {
        let token = try idToken(signer: TestKeys.signer(.hs256))
        XCTAssertEqual(try JWT.verifiedClaims(token, key: JWSVerificationKey(hmacSecret: TestKeys.secret), rules: rules, now: now).subject,
                       "person-1")
    }
}
