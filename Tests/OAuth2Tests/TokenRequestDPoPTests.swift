import Crypto
import Endpoints
import JOSE
import OAuth2
import SafeText
import XCTest

/// A token request of a DPoP identity carries a proof for the token endpoint (RFC 9449 §5).
final class TokenRequestDPoPTests: XCTestCase {
    private let key = try! DPoPKey(privateKey: PrivateKey.generate(.ecP256))

    private func request() throws -> TokenRequest {
        var identity = Identity(name: "svc", tokenUrl: HTTPURL(scheme: .https, host: "idp.test", port: 8443, path: "/oauth/token",
                                                               query: "tenant=a"),
                                clientAuth: .post(id: "svc", secret: Secret("s3cret")))
        identity.dpop = .key(key)
        return try XCTUnwrap(TokenRequest.grant(for: identity))
    }

    private func proof(of request: TokenRequest) throws -> JWS {
        try JWS(compact: XCTUnwrap(request.headers.first { $0.name == "DPoP" }?.value))
    }

    func testTheProofNamesThePostToTheTokenURLWithoutItsQuery() throws {
        var random = SecureRandomNumberGenerator()
        let signed = try request().withDPoPProof(key, nonce: nil, unixTime: 1_800_000_000, random: &random)
        let jws = try proof(of: signed)
        XCTAssertNoThrow(try jws.verify(with: JWSVerificationKey(jwk: XCTUnwrap(jws.header.jwk))))
        XCTAssertEqual(jws.header.jwk?.thumbprint, key.thumbprint)
        let claims = try JWTClaims(payload: jws.payload)
        XCTAssertEqual(claims["htm"]?.string, "POST")
        XCTAssertEqual(claims["htu"]?.string, "https://idp.test:8443/oauth/token")
        XCTAssertEqual(claims.issuedAt, 1_800_000_000)
        XCTAssertNil(claims["ath"], "a token request carries no access token")
        XCTAssertNil(claims.nonce)
        XCTAssertEqual(signed.body, try request().body, "the form is untouched")
    }

    func testTheNonceGoesInAndEachProofReplacesThePrevious() throws {
        var random = SecureRandomNumberGenerator()
        let once = try request().withDPoPProof(key, nonce: "n-1", unixTime: 1, random: &random)
        let twice = try once.withDPoPProof(key, nonce: "n-2", unixTime: 2, random: &random)
        XCTAssertEqual(twice.headers.filter { $0.name.lowercased() == "dpop" }.count, 1)
        XCTAssertEqual(try JWTClaims(payload: proof(of: twice).payload).nonce, "n-2")
        XCTAssertNotEqual(try JWTClaims(payload: proof(of: once).payload).jwtID, try JWTClaims(payload: proof(of: twice).payload).jwtID)
    }

    func testAGeneratedKeyIsMadeOnlyForES256AndEdDSA() throws {
        XCTAssertEqual(try DPoPBinding.generatedKey(.edDSA).makeKey().algorithm, .edDSA)
        XCTAssertNotEqual(try DPoPBinding.generatedKey(.es256).makeKey(), try DPoPBinding.generatedKey(.es256).makeKey(),
                          "each generation is a new key")
        XCTAssertThrowsError(try DPoPBinding.generatedKey(.rs256).makeKey()) { error in
            XCTAssertEqual("\(error)", "the relay generates ES256 and EdDSA keys only; RS256 needs a keyFile")
        }
    }
}
