import Crypto
import Endpoints
import JOSE
import OAuth2
import SafeText
import XCTest

/// RFC 7662 §2.1: the question about a caller's token, with the client authentication every
/// request to the IdP uses; and the reading of the answer's errors.
final class IntrospectionRequestTests: XCTestCase {
    private let endpoint = HTTPURL(scheme: .https, host: "idp.example.com", path: "/oauth2/introspect")
    private let tokenEndpoint = HTTPURL(scheme: .https, host: "idp.example.com", path: "/oauth2/token")
    private let callerToken = Secret("mF_9.B5f-4.1JqM")

    private func question(_ identity: Identity, token: Secret? = nil) -> TokenRequest {
        TokenRequest.introspection(for: identity, token: token ?? callerToken, at: endpoint, tokenEndpoint: tokenEndpoint)
    }

    /// RFC 7662 §2.1's example request, client `s6BhdRkqt3` with HTTP Basic.
    func testRFC7662ExampleWithBasicAuthentication() {
        let request = question(makeIdentity(clientId: "s6BhdRkqt3", secret: "gX1fBat3bV", auth: .basic))
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.url, endpoint)
        XCTAssertEqual(request.purpose, .introspection)
        XCTAssertEqual(request.header("Authorization"), "Basic czZCaGRSa3F0MzpnWDFmQmF0M2JW")
        XCTAssertEqual(request.header("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(request.header("Accept"), "application/json")
        XCTAssertEqual(request.bodyText, "token=mF_9.B5f-4.1JqM&token_type_hint=access_token")
        XCTAssertFalse(request.needsClientAssertion)
    }

    func testPostAuthenticationPutsTheClientInTheForm() {
        let request = question(makeIdentity(clientId: "orders-relay", secret: "s3cret", auth: .post), token: Secret("tok en+1"))
        XCTAssertNil(request.header("Authorization"))
        XCTAssertEqual(request.bodyText, "token=tok+en%2B1&token_type_hint=access_token&client_id=orders-relay&client_secret=s3cret")
    }

    /// private_key_jwt: a fresh assertion signed just before sending, naming the token endpoint.
    func testPrivateKeyJWTSendsAnAssertionForTheTokenEndpoint() throws {
        let key = try PrivateKey.generate(.ecP256)
        let identity = makeIdentity { $0.clientAuth = .privateKeyJWT(id: "svc", key: try! ClientAssertionKey(privateKey: key)) }
        let request = question(identity)
        XCTAssertTrue(request.needsClientAssertion)
        var random = FixedRandom(fraction: 0.5)
        let signed = try request.withClientAssertion(unixTime: 1_700_000_000, random: &random)
        XCTAssertEqual(signed.fieldNames, ["token", "token_type_hint", "client_id", "client_assertion_type", "client_assertion"])
        let assertion = try XCTUnwrap(FormURLEncoding.decode(signed.bodyText).first { $0.name == "client_assertion" }?.value)
        let claims = try JWT.verifiedClaims(assertion, key: JWSVerificationKey(publicKey: key.publicKey),
                                            rules: JWTValidationRules(issuer: "svc", audience: tokenEndpoint.description), now: 1_700_000_000)
        XCTAssertEqual(claims.subject, "svc")
        XCTAssertNil(signed.header("Authorization"))
    }

    /// Without a known token endpoint the assertion names the introspection endpoint.
    func testWithoutATokenEndpointTheAssertionNamesTheIntrospectionEndpoint() throws {
        let identity = makeIdentity { $0.clientAuth = .clientSecretJWT(id: "svc", secret: Secret("0123456789abcdef0123456789abcdef")) }
        var random = FixedRandom(fraction: 0.5)
        let signed = try TokenRequest.introspection(for: identity, token: callerToken, at: endpoint, tokenEndpoint: nil)
            .withClientAssertion(unixTime: 1_700_000_000, random: &random)
        let assertion = try XCTUnwrap(FormURLEncoding.decode(signed.bodyText).first { $0.name == "client_assertion" }?.value)
        XCTAssertEqual(try JWTClaims(payload: JWS(compact: assertion).payload).audience, [endpoint.description])
    }

    func testTheIdentitysParamsStayOutAndItsHeadersGoAlong() {
        let identity = makeIdentity(auth: .basic) {
            $0.params = ["tenant": "acme"]
            $0.headers = ["X-Tenant": "acme"]
        }
        let request = question(identity)
        XCTAssertEqual(request.fieldNames, ["token", "token_type_hint"])
        XCTAssertEqual(request.header("X-Tenant"), "acme")
    }

    func testTheTokenIsNeverDescribed() {
        let request = question(makeIdentity(auth: .post))
        for text in everyRendering(of: request) {
            XCTAssertFalse(text.contains(callerToken.value), text)
        }
        XCTAssertEqual(request.describe(.unreachable(reason: "connection refused")),
                       "the introspection endpoint is unreachable: connection refused")
    }

    // MARK: The answer's errors

    /// A client the IdP does not accept: an OAuth error, not a verdict on the caller's token.
    func testAnOAuthErrorIsTheRelaysNotTheCallers() {
        let request = question(makeIdentity(auth: .basic))
        XCTAssertThrowsError(try request.parseIntrospection(reply(401, #"{"error":"invalid_client"}"#), unixTime: 0)) { error in
            XCTAssertEqual((error as? TokenEndpointError)?.oauthError?.code.rawValue, "invalid_client")
        }
    }

    /// DOT answers a client it cannot authenticate with a bare 403.
    func testABare403IsAnUnexpectedStatus() {
        let request = question(makeIdentity(auth: .basic))
        XCTAssertThrowsError(try request.parseIntrospection(reply(403, "", contentType: "text/html"), unixTime: 0)) { error in
            XCTAssertEqual(error as? TokenEndpointError, .unexpectedStatus(status: 403, contentType: "text/html", excerpt: nil, retryAfter: nil))
        }
    }

    func testAnOutageIsTemporary() {
        let request = question(makeIdentity(auth: .basic))
        XCTAssertThrowsError(try request.parseIntrospection(reply(503, "busy", contentType: "text/plain", headers: [("Retry-After", "7")]),
                                                            unixTime: 0)) { error in
            XCTAssertEqual((error as? TokenEndpointError)?.isTemporary, true)
            XCTAssertEqual((error as? TokenEndpointError)?.retryAfter, 7)
        }
    }

    /// An IdP that echoes the form in its error page never gets the caller's token into a log.
    func testAnEchoedTokenIsRemovedFromErrors() {
        let request = question(makeIdentity(auth: .post))
        let echo = reply(400, #"{"error":"invalid_request","error_description":"bad token=\#(callerToken.value)"}"#)
        XCTAssertThrowsError(try request.parseIntrospection(echo, unixTime: 0)) { error in
            XCTAssertFalse("\(error)".contains(callerToken.value), "\(error)")
            XCTAssertFalse("\(error)".contains("mF_9"), "\(error)")
        }
        let page = reply(500, "<p>token=\(callerToken.value) secret=s3cret</p>", contentType: "text/html")
        XCTAssertThrowsError(try request.parseIntrospection(page, unixTime: 0)) { error in
            XCTAssertFalse("\(error)".contains(callerToken.value), "\(error)")
            XCTAssertFalse("\(error)".contains("s3cret"), "\(error)")
        }
    }

    func testARedirectIsNotFollowed() {
        let request = question(makeIdentity(auth: .basic))
        XCTAssertThrowsError(try request.parseIntrospection(reply(302, "", headers: [("Location", "https://evil.test/x?token=1")]),
                                                            unixTime: 0)) { error in
            guard case .redirect(302, _)? = error as? TokenEndpointError else { return XCTFail("\(error)") }
        }
    }

    /// A 200 whose body is no introspection answer is the IdP's fault, named without its content.
    func testA200ThatIsNoAnswerIsAnInvalidResponse() {
        let request = question(makeIdentity(auth: .basic))
        XCTAssertThrowsError(try request.parseIntrospection(reply(200, #"{"active":"true","sub":"alice"}"#), unixTime: 0)) { error in
            XCTAssertEqual(error as? TokenEndpointError,
                           .invalidTokenResponse(status: 200, contentType: "application/json", reason: "active is not a JSON boolean"))
        }
        XCTAssertThrowsError(try request.parseIntrospection(reply(200, "active=true", contentType: "application/x-www-form-urlencoded"),
                                                            unixTime: 0)) { error in
            XCTAssertEqual(error as? TokenEndpointError, .invalidTokenResponse(status: 200, contentType: "application/x-www-form-urlencoded",
                                                                                reason: "the body is not a JSON object"))
        }
    }

    func testAnAnswerIsRead() throws {
        let request = question(makeIdentity(auth: .basic))
        XCTAssertEqual(try request.parseIntrospection(reply(200, #"{"active":false}"#), unixTime: 0), .inactive)
        guard case .active(let token) = try request.parseIntrospection(reply(200, #"{"active":true,"scope":"orders.read"}"#), unixTime: 0) else {
            return XCTFail("not active")
        }
        XCTAssertEqual(token.scopes, ["orders.read"])
    }
}
