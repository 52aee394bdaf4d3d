import Endpoints
import HTTPFields
import OAuth2
import SafeText
import XCTest

/// Token requests: exact bodies and headers for every grant and client authentication.
final class TokenRequestTests: XCTestCase {
    private func grantRequest(_ identity: Identity, file: StaticString = #filePath, line: UInt = #line) throws -> TokenRequest {
        try XCTUnwrap(TokenRequest.grant(for: identity), file: file, line: line)
    }

    func testRequestIsAPostToTheTokenURL() throws {
        let request = try grantRequest(makeIdentity())
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.url.host, "idp.example.com")
        XCTAssertEqual(request.url.port, 443)
        XCTAssertEqual(request.url.requestTarget, "/oauth2/token")
    }

    func testClientCredentialsWithBasicAuthentication() throws {
        let request = try grantRequest(makeIdentity())
        XCTAssertEqual(request.bodyText, "grant_type=client_credentials")
        XCTAssertEqual(request.headers, [
            HTTPField(name: "Content-Type", value: "application/x-www-form-urlencoded"),
            HTTPField(name: "Accept", value: "application/json"),
            HTTPField(name: "Authorization", value: "Basic b3JkZXJzLXJlbGF5OnMzY3JldA=="),
        ])
        XCTAssertEqual(request.purpose, .grant(.clientCredentials))
    }

    func testBasicAuthenticationFormEncodesIdAndSecretBeforeBase64() throws {
        let request = try grantRequest(makeIdentity(clientId: "my client:1", secret: "p@ss w+rd/é"))
        // base64("my+client%3A1:p%40ss+w%2Brd%2F%C3%A9")
        XCTAssertEqual(request.header("Authorization"), "Basic bXkrY2xpZW50JTNBMTpwJTQwc3MrdyUyQnJkJTJGJUMzJUE5")
    }

    func testPostAuthenticationPutsIdAndSecretInTheBody() throws {
        let request = try grantRequest(makeIdentity(clientId: "my client", secret: "a&b=c", auth: .post))
        XCTAssertEqual(request.bodyText, "grant_type=client_credentials&client_id=my+client&client_secret=a%26b%3Dc")
        XCTAssertNil(request.header("Authorization"))
    }

    func testPublicClientSendsOnlyItsId() throws {
        let request = try grantRequest(makeIdentity(.password(username: "svc", password: Secret("pw")), secret: nil))
        XCTAssertEqual(request.bodyText, "grant_type=password&username=svc&password=pw&client_id=orders-relay")
        XCTAssertNil(request.header("Authorization"))
    }

    func testScopeAudienceRepeatedResourceAndParams() throws {
        let request = try grantRequest(makeIdentity {
            $0.scope = "orders.read orders.write"
            $0.audience = "orders-api"
            $0.resource = ["https://orders.internal/", "https://billing.internal/"]
            $0.params = ["tenant": "acme", "b": "2"]
        })
        XCTAssertEqual(request.bodyText, "grant_type=client_credentials&scope=orders.read+orders.write&audience=orders-api"
                       + "&resource=https%3A%2F%2Forders.internal%2F&resource=https%3A%2F%2Fbilling.internal%2F&b=2&tenant=acme")
    }

    func testPasswordGrantSendsUsernameAndPassword() throws {
        let request = try grantRequest(makeIdentity(.password(username: "svc-legacy", password: Secret("p@ss word"))))
        XCTAssertEqual(request.bodyText, "grant_type=password&username=svc-legacy&password=p%40ss+word")
    }

    func testRefreshTokenGrantSendsItsSeedWithScope() throws {
        let request = try grantRequest(makeIdentity(.refreshToken(Secret("seed/rt"))) { $0.scope = "offline" })
        XCTAssertEqual(request.bodyText, "grant_type=refresh_token&refresh_token=seed%2Frt&scope=offline")
        XCTAssertEqual(request.purpose, .grant(.refreshToken))
    }

    func testRefreshSendsTheRefreshTokenAndAsksForNothingNew() {
        let identity = makeIdentity(.password(username: "u", password: Secret("p"))) {
            $0.scope = "orders.read"
            $0.resource = ["https://orders.internal/"]
            $0.params = ["tenant": "acme"]
        }
        let request = TokenRequest.refresh(for: identity, refreshToken: Secret("rt-1"))
        XCTAssertEqual(request.bodyText, "grant_type=refresh_token&refresh_token=rt-1&tenant=acme")
        XCTAssertEqual(request.purpose, .refresh)
        XCTAssertNotNil(request.header("Authorization"))
    }

    func testTokenExchangeSendsSubjectAndActorTokens() throws {
        let request = try grantRequest(makeIdentity(.tokenExchange(
            subject: ExchangedToken(token: Secret("subject.jwt"), type: "urn:ietf:params:oauth:token-type:jwt"),
            actor: ExchangedToken(token: Secret("actor.jwt"), type: "urn:ietf:params:oauth:token-type:access_token")),
            auth: .post) { $0.audience = "backend" })
        XCTAssertEqual(request.bodyText, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
                       + "&subject_token=subject.jwt&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt"
                       + "&actor_token=actor.jwt&actor_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token"
                       + "&audience=backend&client_id=orders-relay&client_secret=s3cret")
    }

    func testJWTBearerSendsTheAssertion() throws {
        let request = try grantRequest(makeIdentity(.jwtBearer(assertion: Secret("eyJ.eyJ.sig")), clientId: nil, secret: nil))
        XCTAssertEqual(request.bodyText, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=eyJ.eyJ.sig")
    }

    func testExtensionGrantTakesItsFieldsFromParams() throws {
        let request = try grantRequest(makeIdentity(.extension(uri: "urn:example:grant", fields: ExtensionFields()), clientId: nil, secret: nil) {
            $0.params = ["ticket": "t 1"]
        })
        XCTAssertEqual(request.bodyText, "grant_type=urn%3Aexample%3Agrant&ticket=t+1")
    }

    func testRefreshOfAnExtensionGrantLeavesItsParamsOut() {
        let identity = makeIdentity(.tokenExchange(subject: ExchangedToken(), actor: ExchangedToken()), clientId: nil, secret: nil) {
            $0.params = ["subject_token": "s", "subject_token_type": "urn:x"]
        }
        XCTAssertEqual(TokenRequest.refresh(for: identity, refreshToken: Secret("rt")).bodyText,
                       "grant_type=refresh_token&refresh_token=rt")
    }

    func testAParamReplacesAFieldOfTheSameName() throws {
        let request = try grantRequest(makeIdentity { $0.scope = "a"; $0.params = ["scope": "b"] })
        XCTAssertEqual(request.bodyText, "grant_type=client_credentials&scope=b")
    }

    func testExtraHeadersAreAddedSortedAndReplaceDefaultsOfTheSameName() throws {
        let request = try grantRequest(makeIdentity {
            $0.headers = ["X-Request-Source": "oauth-relay", "accept": "application/json, text/plain"]
        })
        XCTAssertEqual(request.headers.map(\.name), ["Content-Type", "Authorization", "accept", "X-Request-Source"])
        XCTAssertEqual(request.header("Accept"), "application/json, text/plain")
    }

    func testInteractiveGrantsHaveNoRequestOfTheirOwn() {
        XCTAssertNil(TokenRequest.grant(for: makeIdentity(.authorizationCode(seed: Secret("seed")))))
        XCTAssertNil(TokenRequest.grant(for: makeIdentity(.deviceCode(seed: nil))))
    }

    func testResponseFormatComesFromTheIdentity() throws {
        let request = try grantRequest(makeIdentity {
            $0.responseFields = ResponseFields(token: "token")
            $0.defaultExpiresInSeconds = 120
        })
        XCTAssertEqual(request.responseFormat, TokenResponseFormat(fields: ResponseFields(token: "token"), defaultExpiresInSeconds: 120))
    }

    func testAnExtensionGrantSendsEveryFieldItCarriesInRFCOrder() throws {
        let fields = ExtensionFields(assertion: Secret("a"), subject: ExchangedToken(token: Secret("s"), type: "urn:s"),
                                     actor: ExchangedToken(type: "urn:a"))
        let request = try grantRequest(makeIdentity(.extension(uri: "urn:example:grant", fields: fields), clientId: nil, secret: nil))
        XCTAssertEqual(request.bodyText, "grant_type=urn%3Aexample%3Agrant&assertion=a&subject_token=s&subject_token_type=urn%3As"
                       + "&actor_token_type=urn%3Aa")
    }

    func testPostWithAnEmptyIdSendsOnlyTheSecret() throws {
        let request = try grantRequest(makeIdentity(.jwtBearer(assertion: Secret("j")), clientId: nil, secret: "s3cret", auth: .post))
        XCTAssertEqual(request.bodyText, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=j&client_secret=s3cret")
    }

    func testAnUnidentifiedClientSendsNoClientFields() throws {
        let identity = makeIdentity(.jwtBearer(assertion: Secret("j")), clientId: nil, secret: nil)
        XCTAssertEqual(identity.clientAuth, .unidentified)
        let request = try grantRequest(identity)
        XCTAssertEqual(request.bodyText, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=j")
        XCTAssertNil(request.header("Authorization"))
    }

    func testTheGrantsNameDescribesTheRequestNotItsValues() throws {
        let request = try grantRequest(makeIdentity(.password(username: "svc", password: Secret("pw-0123456789abcdef"))))
        XCTAssertEqual(request.purpose, .grant(.password))
        XCTAssertTrue(String(describing: request).contains("(password grant)"), String(describing: request))
        XCTAssertEqual(String(describing: Grant.password(username: "svc", password: Secret("pw-0123456789abcdef"))), "password")
    }
}
