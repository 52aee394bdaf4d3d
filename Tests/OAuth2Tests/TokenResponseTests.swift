import Endpoints
import OAuth2
import XCTest

/// Successful token responses, from standard and non-standard IdPs.
final class TokenResponseTests: XCTestCase {
    func testStandardResponse() throws {
        let token = try parsedToken(reply(200, #"""
        {"access_token":"at-1","token_type":"Bearer","expires_in":300,"refresh_token":"rt-1","scope":"orders.read"}
        """#))
        XCTAssertEqual(token.accessToken.value, "at-1")
        XCTAssertEqual(token.tokenType, "Bearer")
        XCTAssertEqual(token.expiresIn, 300)
        XCTAssertEqual(token.expirySource, .expiresIn)
        XCTAssertEqual(token.refreshToken?.value, "rt-1")
        XCTAssertEqual(token.scope, "orders.read")
    }

    func testExpiresInAsANumericString() throws {
        XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a","expires_in":" 3599 "}"#)).expiresIn, 3599)
    }

    func testFractionalExpiresIn() throws {
        XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a","expires_in":2.5}"#)).expiresIn, 2.5)
    }

    func testMissingExpiresInFallsBackToTheJWTExpClaim() throws {
        let jwt = makeJWT(#"{"sub":"svc","exp":1700000120}"#)
        let token = try parsedToken(reply(200, #"{"access_token":"\#(jwt)"}"#), unixTime: 1_700_000_000)
        XCTAssertEqual(token.expiresIn, 120)
        XCTAssertEqual(token.expirySource, .jwtExp)
    }

    func testMissingExpiresInOnAnOpaqueTokenFallsBackToTheDefault() throws {
        let format = TokenResponseFormat(defaultExpiresInSeconds: 900)
        let token = try parsedToken(reply(200, #"{"access_token":"opaque"}"#), format: format)
        XCTAssertEqual(token.expiresIn, 900)
        XCTAssertEqual(token.expirySource, .defaultLifetime)
    }

    func testUnusableExpiresInCountsAsMissing() throws {
        for value in ["0", "-5", "true", #""soon""#, "null", "[]"] {
            let token = try parsedToken(reply(200, #"{"access_token":"a","expires_in":\#(value)}"#))
            XCTAssertEqual(token.expirySource, .defaultLifetime, value)
            XCTAssertEqual(token.expiresIn, 3600, value)
        }
    }

    func testJWTWithoutExpFallsBackToTheDefault() throws {
        let token = try parsedToken(reply(200, #"{"access_token":"\#(makeJWT(#"{"sub":"svc"}"#))"}"#))
        XCTAssertEqual(token.expirySource, .defaultLifetime)
    }

    func testTokenTypeIsNormalizedCaseInsensitively() throws {
        let dpop = TokenResponseFormat(acceptsDPoP: true)
        for (sent, expected) in [("bearer", "Bearer"), ("BEARER", "Bearer"), ("dpop", "DPoP"), ("DPOP", "DPoP")] {
            XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a","token_type":"\#(sent)"}"#), format: dpop).tokenType, expected)
        }
    }

    func testADPoPTokenIsRefusedWithoutADPoPKey() {
        let error = parseError(reply(200, #"{"access_token":"tok-1","token_type":"DPoP"}"#))
        guard case .invalidTokenResponse(200, _, let reason)? = error else { return XCTFail(String(describing: error)) }
        XCTAssertEqual(reason, "token_type DPoP, but the identity has no dpop key to prove possession with")
    }

    func testAnIdentityWithDPoPTakesDPoPAndBearerTokens() throws {
        var identity = Identity(name: "svc", tokenUrl: HTTPURL(scheme: .https, host: "idp.test", path: "/token"))
        identity.dpop = .generatedKey(.es256)
        let format = TokenResponseFormat(identity: identity)
        XCTAssertTrue(format.acceptsDPoP)
        XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a","token_type":"DPoP"}"#), format: format).tokenType, "DPoP")
        // An IdP that does not bind (it ignored the proof) answers Bearer: the token goes as Bearer.
        XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a","token_type":"Bearer"}"#), format: format).tokenType, "Bearer")
    }

    func testATokenTypeOtherThanBearerOrDPoPIsRefused() {
        for sent in ["mac", "MAC", "N_A", "Basic", "bearer2"] {
            let error = parseError(reply(200, #"{"access_token":"tok-1","token_type":"\#(sent)"}"#))
            guard case .invalidTokenResponse(200, _, let reason)? = error else { return XCTFail("\(sent): \(String(describing: error))") }
            XCTAssertEqual(reason, #"token_type "\#(sent)" is not Bearer or DPoP, the only types the relay can send "#
                           + "(responseFields.typeValues maps an IdP's own names for them)")
            XCTAssertFalse(error!.isTemporary)
        }
    }

    func testARefusedTokenTypeNeverQuotesTheToken() {
        let error = parseError(reply(200, #"{"access_token":"tok-123456789","token_type":"mac tok-123456789"}"#))
        XCTAssertNotNil(error)
        XCTAssertFalse("\(String(describing: error))".contains("tok-123456789"))
    }

    func testMissingTokenTypeMeansBearer() throws {
        XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a"}"#)).tokenType, "Bearer")
    }

    func testResponseWithoutRefreshTokenHasNone() throws {
        XCTAssertNil(try parsedToken(reply(200, #"{"access_token":"a","expires_in":60}"#)).refreshToken)
        XCTAssertNil(try parsedToken(reply(200, #"{"access_token":"a","refresh_token":""}"#)).refreshToken)
    }

    func testCustomFieldNames() throws {
        let format = TokenResponseFormat(fields: ResponseFields(token: "token", expiry: "ttl", type: "kind"))
        let token = try parsedToken(reply(200, #"{"token":"custom-1","ttl":"45","kind":"bearer","access_token":"ignored"}"#),
                                    format: format)
        XCTAssertEqual(token.accessToken.value, "custom-1")
        XCTAssertEqual(token.expiresIn, 45)
        XCTAssertEqual(token.tokenType, "Bearer")
    }

    func testScopeGivenAsAnArrayIsJoined() throws {
        XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a","scope":["a","b"]}"#)).scope, "a b")
    }

    func testTokenExchangeIssuedTokenType() throws {
        let token = try parsedToken(reply(200, #"""
        {"access_token":"a","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer"}
        """#))
        XCTAssertEqual(token.issuedTokenType, "urn:ietf:params:oauth:token-type:access_token")
    }

    func testFormEncodedResponseOfOlderIdPs() throws {
        let token = try parsedToken(reply(200, "access_token=gho_16C7e42F292c&scope=repo&token_type=bearer&expires_in=60",
                                          contentType: "application/x-www-form-urlencoded; charset=utf-8"))
        XCTAssertEqual(token.accessToken.value, "gho_16C7e42F292c")
        XCTAssertEqual(token.expiresIn, 60)
        XCTAssertEqual(token.tokenType, "Bearer")
    }

    func testJSONIsReadWhateverTheContentTypeSays() throws {
        XCTAssertEqual(try parsedToken(reply(200, #"{"access_token":"a"}"#, contentType: "text/html")).accessToken.value, "a")
    }

    func testRequestParsesWithItsIdentitysFormat() throws {
        let request = try XCTUnwrap(TokenRequest.grant(for: makeIdentity { $0.responseFields = ResponseFields(token: "jwt") }))
        XCTAssertEqual(try request.parseResponse(reply(200, #"{"jwt":"j-1","expires_in":5}"#), unixTime: 0).accessToken.value, "j-1")
    }
}
