import JOSE
import TLS
import XCTest

final class DPoPProofTests: JOSETestCase {
    private let now: Int64 = 1_800_000_000

    private func proof(_ builder: DPoPProofBuilder, url: String = "https://api.test/orders/42?x=1#f",
                       token: String? = "access-token-1", nonce: String? = nil) throws -> JWS {
        var random = CountingRandom()
        return try JWS(compact: builder.proof(method: "POST", url: url, accessToken: token, nonce: nonce, now: now, random: &random))
    }

    func testHeaderCarriesTypeAlgorithmAndThePublicKey() throws {
        let builder = try DPoPProofBuilder(signer: TestKeys.signer(.es256))
        let jws = try proof(builder)
        XCTAssertEqual(jws.header.type, "dpop+jwt")
        XCTAssertEqual(jws.header.algorithm, .es256)
        XCTAssertEqual(jws.header.jwk, try JWK(publicKey: TestKeys.ec.publicKey))
        XCTAssertEqual(builder.keyThumbprint, try JWK(publicKey: TestKeys.ec.publicKey).thumbprint)
    }

    func testVerifiesWithTheKeyInItsOwnHeader() throws {
        for algorithm in [JWSAlgorithm.es256, .rs256, .ps256, .edDSA] {
            let jws = try proof(DPoPProofBuilder(signer: TestKeys.signer(algorithm)))
            XCTAssertNoThrow(try jws.verify(with: JWSVerificationKey(jwk: XCTUnwrap(jws.header.jwk))), "\(algorithm)")
        }
    }

    func testClaimsFollowRFC9449() throws {
        let claims = try JWTClaims(payload: proof(DPoPProofBuilder(signer: TestKeys.signer(.es256)), nonce: "server-nonce").payload)
        XCTAssertEqual(claims["htm"], .string("POST"))
        XCTAssertEqual(claims["htu"], .string("https://api.test/orders/42"))
        XCTAssertEqual(claims.issuedAt, now)
        XCTAssertEqual(claims.nonce, "server-nonce")
        XCTAssertEqual(claims.jwtID?.count, 22)
        // ath = base64url(SHA-256("access-token-1"))
        XCTAssertEqual(claims["ath"], .string(Base64URL.encode(SHA256.hash(Array("access-token-1".utf8)))))
        XCTAssertEqual(claims["ath"], .string("xbDyM5Wjs8mTAhnyPZlETAJ9RLSTjApm6mLfP1ASgro"))
    }

    func testTokenRequestProofsHaveNoATH() throws {
        let claims = try JWTClaims(payload: proof(DPoPProofBuilder(signer: TestKeys.signer(.es256)), token: nil).payload)
        XCTAssertNil(claims["ath"])
        XCTAssertNil(claims.nonce)
    }

    func testEachProofHasItsOwnJTI() throws {
        let builder = try DPoPProofBuilder(signer: TestKeys.signer(.es256))
        var random = CountingRandom()
        let ids = try (0..<100).map { _ in
            try JWTClaims(payload: JWS(compact: builder.proof(method: "GET", url: "https://a/", now: now, random: &random)).payload).jwtID
        }
        XCTAssertEqual(Set(ids).count, 100)
    }

    func testHMACCannotMakeProofs() {
        XCTAssertThrowsJOSE(try DPoPProofBuilder(signer: TestKeys.signer(.hs256)),
                            .algorithmNotAllowed("DPoP proofs need an asymmetric key, not HS256"))
    }
}
