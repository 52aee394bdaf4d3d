import Crypto
import JOSE
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
        XCTAssertEqual(claims.jwtID?.count, 16, "96 random bits (§4.2), base64url")
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

/// The writer a worker keeps: the same proofs as the builder's, as bytes in buffers it reuses.
final class DPoPProofWriterTests: JOSETestCase {
    private let now: Int64 = 1_800_000_000

    private func proof(_ writer: DPoPProofWriter, method: String = "GET", origin: String = "https://api.test:8443",
                       target: String = "/v1/orders/42?page=2", ath: String? = "ath-value", nonce: String? = nil,
                       at now: Int64? = nil, random: inout CountingRandom) throws -> JWS {
        let now = now ?? self.now
        let text = try Array(method.utf8).withUnsafeBytes { method in
            try Array(origin.utf8).withUnsafeBytes { origin in
                try Array(target.utf8).withUnsafeBytes { target in
                    try writer.withProof(method: method, origin: origin, target: target, accessTokenHash: ath.map { Array($0.utf8) },
                                         nonce: nonce.map { Array($0.utf8) }, now: now, random: &random) { String(decoding: $0, as: UTF8.self) }
                }
            }
        }
        return try JWS(compact: text)
    }

    func testClaimsAreWrittenInAFixedOrder() throws {
        let writer = try DPoPProofWriter(builder: DPoPProofBuilder(signer: TestKeys.signer(.es256)))
        var random = CountingRandom()
        let jws = try proof(writer, nonce: "n-1", random: &random)
        // jti: 12 bytes, the counting number 1 and the low half of 2, little-endian, base64url.
        XCTAssertEqual(String(decoding: jws.payload, as: UTF8.self),
                       #"{"jti":"AQAAAAAAAAACAAAA","htm":"GET","htu":"https://api.test:8443/v1/orders/42","#
                       + #""iat":1800000000,"ath":"ath-value","nonce":"n-1"}"#)
    }

    func testEveryAlgorithmVerifiesWithTheKeyInTheHeader() throws {
        for algorithm in [JWSAlgorithm.es256, .rs256, .ps256, .edDSA] {
            let writer = try DPoPProofWriter(builder: DPoPProofBuilder(signer: TestKeys.signer(algorithm)))
            var random = CountingRandom()
            for _ in 0..<3 {
                let jws = try proof(writer, random: &random)
                XCTAssertEqual(jws.header.algorithm, algorithm)
                XCTAssertEqual(jws.header.type, "dpop+jwt")
                XCTAssertNoThrow(try jws.verify(with: JWSVerificationKey(jwk: XCTUnwrap(jws.header.jwk))), "\(algorithm)")
            }
        }
    }

    func testProofsMatchTheBuildersProof() throws {
        let builder = try DPoPProofBuilder(signer: TestKeys.signer(.es256))
        var first = CountingRandom(), second = CountingRandom()
        let written = try proof(DPoPProofWriter(builder: builder), method: "POST", origin: "", target: "https://idp.test/token?x#y",
                                ath: DPoPProofBuilder.accessTokenHash("tok"), nonce: "abc", random: &first)
        let built = try JWS(compact: builder.proof(method: "POST", url: "https://idp.test/token?x#y", accessToken: "tok", nonce: "abc",
                                                   now: now, random: &second))
        XCTAssertEqual(written.payload, built.payload)
        XCTAssertEqual(written.header, built.header)
    }

    func testEachProofHasItsOwnJTIAndVerifies() throws {
        let writer = try DPoPProofWriter(builder: DPoPProofBuilder(signer: TestKeys.signer(.es256)))
        var random = CountingRandom()
        var ids = Set<String>()
        for _ in 0..<200 {
            let jws = try proof(writer, random: &random)
            XCTAssertNoThrow(try jws.verify(with: JWSVerificationKey(publicKey: TestKeys.ec.publicKey)))
            ids.insert(try XCTUnwrap(JWTClaims(payload: jws.payload).jwtID))
        }
        XCTAssertEqual(ids.count, 200)
    }

    func testTheTargetEndsAtItsQueryOrFragmentAndOddBytesArePercentEncoded() throws {
        let writer = try DPoPProofWriter(builder: DPoPProofBuilder(signer: TestKeys.signer(.es256)))
        var random = CountingRandom()
        for (target, htu) in [("/a/b?c=d", "https://h/a/b"), ("/a#f", "https://h/a"), ("/", "https://h/"), ("", "https://h"),
                              ("/a b\"\\\u{7F}\u{e9}", "https://h/a%20b%22%5C%7F%C3%A9"), ("/%7E", "https://h/%7E")] {
            let claims = try JWTClaims(payload: proof(writer, origin: "https://h", target: target, random: &random).payload)
            XCTAssertEqual(claims["htu"], .string(htu), target)
        }
    }

    func testMethodAndNonceAreJSONEscaped() throws {
        let writer = try DPoPProofWriter(builder: DPoPProofBuilder(signer: TestKeys.signer(.es256)))
        var random = CountingRandom()
        let claims = try JWTClaims(payload: proof(writer, method: "GE\"T", nonce: "a\\b\u{1}", random: &random).payload)
        XCTAssertEqual(claims["htm"], .string("GE\"T"))
        XCTAssertEqual(claims.nonce, "a\\b\u{1}")
    }

    func testIATFollowsTheClockFromProofToProof() throws {
        let writer = try DPoPProofWriter(builder: DPoPProofBuilder(signer: TestKeys.signer(.es256)))
        var random = CountingRandom()
        for seconds: Int64 in [now, now, now + 1, 999, now + 1, 0] {
            XCTAssertEqual(try JWTClaims(payload: proof(writer, at: seconds, random: &random).payload).issuedAt, seconds)
        }
    }

    func testWithoutATHOrNonceThoseClaimsAreAbsent() throws {
        let writer = try DPoPProofWriter(builder: DPoPProofBuilder(signer: TestKeys.signer(.es256)))
        var random = CountingRandom()
        let claims = try JWTClaims(payload: proof(writer, ath: nil, random: &random).payload)
        XCTAssertNil(claims["ath"])
        XCTAssertNil(claims.nonce)
        XCTAssertEqual(Set(claims.members.map(\.name)), ["jti", "htm", "htu", "iat"])
    }
}
