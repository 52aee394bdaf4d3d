import Crypto
import Endpoints
import JOSE
import OAuth2
import SafeText
import XCTest

/// The requests of the interactive grants and of the device authorization and revocation
/// endpoints: exact bodies, client authentication, where they go.
final class InteractiveTokenRequestTests: XCTestCase {
    private let tokenEndpoint = HTTPURL(scheme: .https, host: "login.example.com", path: "/oauth2/v2/token")
    private let deviceEndpoint = HTTPURL(scheme: .https, host: "login.example.com", path: "/oauth2/v2/device")
    private let revocationEndpoint = HTTPURL(scheme: .https, host: "login.example.com", path: "/oauth2/v2/revoke")
    private let code = Secret("SplxlOBeZQQYbYS6WxSbIA-code")
    private let verifier = Secret("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")

    func testExplicitTokenEndpointOverridesTokenURL() throws {
        let request = try XCTUnwrap(TokenRequest.grant(for: makeIdentity(), at: tokenEndpoint))
        XCTAssertEqual(request.url, tokenEndpoint)
        XCTAssertEqual(TokenRequest.refresh(for: makeIdentity(), refreshToken: Secret("r"), at: tokenEndpoint).url, tokenEndpoint)
        XCTAssertEqual(try XCTUnwrap(TokenRequest.grant(for: makeIdentity())).url.host, "idp.example.com", "the old form uses tokenUrl")
    }

    func testCodeExchangeOfAPublicClient() {
        let request = TokenRequest.authorizationCode(for: interactiveIdentity(), code: code, verifier: verifier,
                                                     redirectUri: callbackURI, at: tokenEndpoint)
        XCTAssertEqual(request.url, tokenEndpoint)
        XCTAssertEqual(request.purpose, .grant(.authorizationCode))
        XCTAssertEqual(request.bodyText, "grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA-code"
                       + "&redirect_uri=http%3A%2F%2F127.0.0.1%3A8180%2F.oauth-relay%2Fcallback"
                       + "&code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk&client_id=cli-app")
        XCTAssertNil(request.header("Authorization"))
    }

    func testCodeExchangeOfAConfidentialClientUsesBasic() {
        let identity = makeIdentity(.authorizationCode(seed: nil), clientId: "web", secret: "s3cret")
        let request = TokenRequest.authorizationCode(for: identity, code: code, verifier: verifier, redirectUri: callbackURI,
                                                     at: tokenEndpoint)
        XCTAssertEqual(request.header("Authorization"), "Basic d2ViOnMzY3JldA==")
        XCTAssertFalse(request.bodyText.contains("client_id"))
    }

    func testAnAutoIdentitysCodeExchangeAndDevicePollNameItsUpstream() {
        var identity = interactiveIdentity()
        identity.resource = ["https://api.example.com/mcp"]
        identity.auto = AutoSettings(resource: HTTPURL(scheme: .https, host: "api.example.com", path: "/mcp"))
        let exchange = TokenRequest.authorizationCode(for: identity, code: code, verifier: verifier, redirectUri: callbackURI,
                                                      at: tokenEndpoint)
        XCTAssertTrue(exchange.bodyText.contains("&resource=https%3A%2F%2Fapi.example.com%2Fmcp"), exchange.bodyText)
        let poll = TokenRequest.deviceCodePoll(for: identity, deviceCode: Secret("GmRhmhcxhwAzkoEqiMEg"), at: tokenEndpoint)
        XCTAssertTrue(poll.bodyText.contains("&resource=https%3A%2F%2Fapi.example.com%2Fmcp"), poll.bodyText)
        // A configured identity's code exchange stays as it was (its resources go in the authorization request).
        identity.auto = nil
        XCTAssertFalse(TokenRequest.authorizationCode(for: identity, code: code, verifier: verifier, redirectUri: callbackURI,
                                                      at: tokenEndpoint).bodyText.contains("resource="))
    }

    func testDevicePoll() {
        let request = TokenRequest.deviceCodePoll(for: makeIdentity(.deviceCode(seed: nil), clientId: "tv", secret: nil),
                                                  deviceCode: Secret("GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS"), at: tokenEndpoint)
        XCTAssertEqual(request.purpose, .grant(.deviceCode))
        XCTAssertEqual(request.bodyText, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code"
                       + "&device_code=GmRhmhcxhwAzkoEqiMEg_DnyEysNkuNhszIySk9eS&client_id=tv")
    }

    func testDeviceAuthorizationAsksForScopeAudienceAndResources() {
        let identity = makeIdentity(.deviceCode(seed: nil), clientId: "tv", secret: nil) {
            $0.scope = "openid offline_access"
            $0.audience = "orders-api"
            $0.resource = ["https://orders.internal/"]
            $0.params = ["tenant": "acme"]
        }
        let request = TokenRequest.deviceAuthorization(for: identity, at: deviceEndpoint, tokenEndpoint: tokenEndpoint)
        XCTAssertEqual(request.url, deviceEndpoint)
        XCTAssertEqual(request.purpose, .deviceAuthorization)
        XCTAssertEqual(request.bodyText, "scope=openid+offline_access&audience=orders-api&resource=https%3A%2F%2Forders.internal%2F"
                       + "&client_id=tv&tenant=acme")
    }

    func testRevocationOfTheRefreshToken() {
        let identity = makeIdentity(.authorizationCode(seed: nil), clientId: "web", secret: "s3cret", auth: .post) {
            $0.params = ["tenant": "acme"]
        }
        let request = TokenRequest.revocation(for: identity, token: Secret("rt-1234567890abcdef"), at: revocationEndpoint,
                                              tokenEndpoint: tokenEndpoint)
        XCTAssertEqual(request.url, revocationEndpoint)
        XCTAssertEqual(request.purpose, .revocation)
        XCTAssertEqual(request.bodyText, "token=rt-1234567890abcdef&token_type_hint=refresh_token&client_id=web&client_secret=s3cret")
        let withoutHint = TokenRequest.revocation(for: identity, token: Secret("t"), hint: nil, at: revocationEndpoint,
                                                  tokenEndpoint: tokenEndpoint)
        XCTAssertEqual(withoutHint.fieldNames, ["token", "client_id", "client_secret"])
    }

    func testClientAssertionOfADeviceAuthorizationNamesTheTokenEndpoint() throws {
        let identity = makeIdentity(.deviceCode(seed: nil)) {
            $0.clientAuth = .clientSecretJWT(id: "tv", secret: Secret("0123456789abcdef0123456789abcdef"))
        }
        var random = SeededRandom()
        for request in [TokenRequest.deviceAuthorization(for: identity, at: deviceEndpoint, tokenEndpoint: tokenEndpoint),
                        TokenRequest.revocation(for: identity, token: Secret("t"), at: revocationEndpoint, tokenEndpoint: tokenEndpoint)] {
            XCTAssertTrue(request.needsClientAssertion)
            let signed = try request.withClientAssertion(unixTime: 1_700_000_000, random: &random)
            let assertion = try XCTUnwrap(FormURLEncoding.decode(signed.bodyText).first { $0.name == "client_assertion" }?.value)
            let claims = try JWTClaims(payload: JWS(compact: assertion).payload)
            XCTAssertEqual(claims.audience, [tokenEndpoint.description], "\(request.purpose)")
        }
        var byIssuer = identity
        byIssuer.clientAssertionAudience = .issuer
        byIssuer.issuer = "https://login.example.com"
        let signed = try TokenRequest.deviceAuthorization(for: byIssuer, at: deviceEndpoint, tokenEndpoint: tokenEndpoint)
            .withClientAssertion(unixTime: 1_700_000_000, random: &random)
        let assertion = try XCTUnwrap(FormURLEncoding.decode(signed.bodyText).first { $0.name == "client_assertion" }?.value)
        XCTAssertEqual(try JWTClaims(payload: JWS(compact: assertion).payload).audience, ["https://login.example.com"])
    }

    func testErrorsQuoteNoCodeOrVerifier() throws {
        let request = TokenRequest.authorizationCode(for: interactiveIdentity(), code: code, verifier: verifier,
                                                     redirectUri: callbackURI, at: tokenEndpoint)
        let echo = reply(400, "<html><body>bad request: code=\(code.value) code_verifier=\(verifier.value)</body></html>",
                         contentType: "text/html")
        XCTAssertThrowsError(try request.parseResponse(echo, unixTime: 0)) { error in
            XCTAssertFalse("\(error)".contains(code.value))
            XCTAssertFalse("\(error)".contains(verifier.value))
            XCTAssertTrue("\(error)".contains("bad request"), "\(error)")
        }
    }

    func testCodeExchangeKeepsTheIDToken() throws {
        let request = TokenRequest.authorizationCode(for: interactiveIdentity(), code: code, verifier: verifier,
                                                     redirectUri: callbackURI, at: tokenEndpoint)
        let idToken = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
        let response = try request.parseResponse(reply(200, #"{"access_token":"at-1","token_type":"Bearer","expires_in":300,"#
                                                       + #""refresh_token":"rt-1","id_token":"\#(idToken)"}"#), unixTime: 0)
        XCTAssertEqual(response.idToken, Secret(idToken))
        XCTAssertTrue(response.description.hasSuffix("with an ID token"), response.description)
        assertHidden([idToken], in: response)
        XCTAssertNil(try parsedToken(reply(200, #"{"access_token":"a","id_token":""}"#)).idToken)
    }

    func testDescribeNamesTheEndpointThatAnswered() {
        let identity = makeIdentity(.deviceCode(seed: nil), clientId: "tv", secret: nil)
        let device = TokenRequest.deviceAuthorization(for: identity, at: deviceEndpoint, tokenEndpoint: tokenEndpoint)
        let revocation = TokenRequest.revocation(for: identity, token: Secret("t"), at: revocationEndpoint, tokenEndpoint: tokenEndpoint)
        let error = TokenEndpointError.unreachable(reason: "connection refused")
        XCTAssertEqual(device.describe(error), "the device authorization endpoint is unreachable: connection refused")
        XCTAssertEqual(revocation.describe(error), "the revocation endpoint is unreachable: connection refused")
        XCTAssertEqual(error.description, "the token endpoint is unreachable: connection refused")
    }
}
