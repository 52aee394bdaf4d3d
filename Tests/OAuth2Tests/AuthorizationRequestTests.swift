import Endpoints
import OAuth2
import XCTest

/// The authorization endpoint URL a login sends the browser to.
final class AuthorizationRequestTests: XCTestCase {
    private let endpoint = HTTPURL(scheme: .https, host: "idp.example.com", path: "/authorize")

    private func start(_ identity: Identity, seed: UInt64 = 1) -> LoginStart {
        var random = SeededRandom(seed: seed)
        return freshLogin(identity, at: 100, random: &random)
    }

    func testCarriesCodeFlowPKCEStateAndNonceInOrder() throws {
        let identity = interactiveIdentity()
        let login = start(identity)
        let request = AuthorizationRequest(endpoint: endpoint, identity: identity, login: login)
        let pairs = queryPairs(request.url)
        XCTAssertEqual(pairs.map(\.name), ["response_type", "client_id", "redirect_uri", "scope", "state", "nonce",
                                           "code_challenge", "code_challenge_method"])
        let values = Dictionary(uniqueKeysWithValues: pairs.map { ($0.name, $0.value) })
        XCTAssertEqual(values["response_type"], "code")
        XCTAssertEqual(values["client_id"], "cli-app")
        XCTAssertEqual(values["redirect_uri"], callbackURI)
        XCTAssertEqual(values["scope"], "openid profile orders.read")
        XCTAssertEqual(values["state"], login.state.value)
        XCTAssertEqual(values["nonce"], login.nonce?.value)
        XCTAssertEqual(values["code_challenge"], login.pkce.challenge)
        XCTAssertEqual(values["code_challenge_method"], "S256")
        XCTAssertEqual(request.url.host, "idp.example.com")
        XCTAssertEqual(request.url.path, "/authorize")
    }

    func testQueryIsFormEncoded() throws {
        let identity = interactiveIdentity()
        let request = AuthorizationRequest(endpoint: endpoint, identity: identity, login: start(identity))
        XCTAssertTrue(request.location.hasPrefix("https://idp.example.com/authorize?response_type=code&client_id=cli-app"
                                                 + "&redirect_uri=http%3A%2F%2F127.0.0.1%3A8180%2F.oauth-relay%2Fcallback"
                                                 + "&scope=openid+profile+orders.read&state="), request.location)
    }

    func testNoNonceWithoutOpenIDScope() {
        let identity = interactiveIdentity(scope: "orders.read")
        let login = start(identity)
        XCTAssertNil(login.nonce)
        let names = queryPairs(AuthorizationRequest(endpoint: endpoint, identity: identity, login: login).url).map(\.name)
        XCTAssertFalse(names.contains("nonce"))
        XCTAssertTrue(names.contains("code_challenge"))
    }

    func testAudienceAndResourcesButNotParams() {
        let identity = interactiveIdentity(scope: nil) {
            $0.audience = "orders-api"
            $0.resource = ["https://orders.internal/", "https://billing.internal/"]
            $0.params = ["tenant": "acme"]
        }
        let pairs = queryPairs(AuthorizationRequest(endpoint: endpoint, identity: identity, login: start(identity)).url)
        XCTAssertEqual(pairs.filter { $0.name == "resource" }.map(\.value), ["https://orders.internal/", "https://billing.internal/"])
        XCTAssertEqual(pairs.first { $0.name == "audience" }?.value, "orders-api")
        XCTAssertFalse(pairs.contains { $0.name == "tenant" || $0.name == "scope" })
    }

    func testEndpointQueryIsKeptWithoutParametersTheRequestSets() throws {
        var withQuery = endpoint
        withQuery.query = "tenant=acme&client_id=other&p=a%20b"
        let identity = interactiveIdentity()
        let request = AuthorizationRequest(endpoint: withQuery, identity: identity, login: start(identity))
        XCTAssertTrue(request.url.query?.hasPrefix("tenant=acme&p=a%20b&response_type=code&client_id=cli-app&") ?? false,
                      request.url.query ?? "")
        XCTAssertEqual(queryPairs(request.url).filter { $0.name == "client_id" }.count, 1)
    }

    func testAuthorizationParamsFollowTheStandardParametersByName() {
        let identity = interactiveIdentity(scope: "openid email") {
            $0.authorizationParams = ["prompt": "consent", "access_type": "offline", "hd": "example.com"]
        }
        let pairs = queryPairs(AuthorizationRequest(endpoint: endpoint, identity: identity, login: start(identity)).url)
        XCTAssertEqual(pairs.map(\.name), ["response_type", "client_id", "redirect_uri", "scope", "state", "nonce",
                                           "code_challenge", "code_challenge_method", "access_type", "hd", "prompt"])
        XCTAssertEqual(pairs.suffix(3).map(\.value), ["offline", "example.com", "consent"])
    }

    func testAuthorizationParamsAreFormEncoded() {
        let identity = interactiveIdentity(scope: nil) { $0.authorizationParams = ["user_scope": "search:read chat:write", "a&b": "c=d"] }
        let request = AuthorizationRequest(endpoint: endpoint, identity: identity, login: start(identity))
        XCTAssertTrue(request.location.hasSuffix("&a%26b=c%3Dd&user_scope=search%3Aread+chat%3Awrite"), request.location)
    }

    /// The config refuses them; a programmatic identity cannot slip one in either.
    func testAuthorizationParamsNeverReplaceTheRelaysOwn() {
        let identity = interactiveIdentity { identity in
            identity.authorizationParams = Dictionary(uniqueKeysWithValues: AuthorizationRequest.relayParameters.map { ($0, "forged") })
        }
        let pairs = queryPairs(AuthorizationRequest(endpoint: endpoint, identity: identity, login: start(identity)).url)
        XCTAssertFalse(pairs.contains { $0.value == "forged" })
        XCTAssertEqual(pairs.count, 8)
    }

    /// A request object (RFC 9101) would replace state, PKCE and redirect_uri: never sent.
    func testARequestObjectIsNeverSent() {
        var withQuery = endpoint
        withQuery.query = "request_uri=urn%3Aforged&tenant=acme&request=forged.jwt"
        let identity = interactiveIdentity { $0.authorizationParams = ["request": "forged", "request_uri": "https://forged/"] }
        let pairs = queryPairs(AuthorizationRequest(endpoint: withQuery, identity: identity, login: start(identity)).url)
        XCTAssertFalse(pairs.contains { $0.name == "request" || $0.name == "request_uri" }, "\(pairs.map(\.name))")
        XCTAssertEqual(pairs.first?.name, "tenant")
        XCTAssertEqual(pairs.count, 9)
    }

    func testAnEndpointQueryParameterNamedLikeAnAuthorizationParamGivesWay() {
        var withQuery = endpoint
        withQuery.query = "prompt=login&tenant=acme"
        let identity = interactiveIdentity { $0.authorizationParams = ["prompt": "consent"] }
        let pairs = queryPairs(AuthorizationRequest(endpoint: withQuery, identity: identity, login: start(identity)).url)
        XCTAssertEqual(pairs.filter { $0.name == "prompt" }.map(\.value), ["consent"])
        XCTAssertEqual(pairs.first?.name, "tenant", "the endpoint's own query is kept first")
    }

    func testDescriptionHidesTheQuery() {
        let identity = interactiveIdentity()
        let login = start(identity)
        let request = AuthorizationRequest(endpoint: endpoint, identity: identity, login: login)
        XCTAssertEqual(request.description, "GET https://idp.example.com/authorize?… (authorization request)")
        assertHidden([login.state.value, login.nonce?.value ?? "", login.pkce.challenge], in: request)
    }
}
