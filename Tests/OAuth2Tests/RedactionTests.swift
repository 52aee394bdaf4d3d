import Endpoints
import OAuth2
import SafeText
import XCTest

/// No description, debug description or mirror of an OAuth2 type shows a token or secret.
final class RedactionTests: XCTestCase {
    private let accessToken = "eyJhbGciOiJub25lIn0.ACCESS-TOKEN-BODY.sig-A1b2"
    private let refreshToken = "REFRESH-TOKEN-0123456789-r3f9"
    private let clientSecret = "CLIENT-SECRET-0123456789"
    private let password = "PASSWORD-0123456789"
    private let assertion = "ASSERTION-0123456789"
    private let subjectToken = "SUBJECT-TOKEN-0123456789"

    private var leaks: [String] {
        [accessToken, "ACCESS-TOKEN-BODY", refreshToken, "REFRESH-TOKEN-0", clientSecret, "CLIENT-SECRET", password, "PASSWORD-0",
         assertion, "ASSERTION-0", subjectToken, "SUBJECT-TOKEN-0", "Q0xJRU5U"]  // base64 of "CLIENT", as in a Basic header
    }

    private func assertNoLeak(_ value: Any, file: StaticString = #filePath, line: UInt = #line) {
        for text in everyRendering(of: value) {
            for leak in leaks {
                XCTAssertFalse(text.contains(leak), "\(leak) in \(text)", file: file, line: line)
            }
        }
    }

    private var identity: Identity {
        makeIdentity(.password(username: "svc", password: Secret(password)), clientId: "CLIENT", secret: clientSecret)
    }

    func testTokenRequestsShowNoSecret() throws {
        let request = try XCTUnwrap(TokenRequest.grant(for: identity))
        assertNoLeak(request)
        assertNoLeak(request.headers)
        assertNoLeak(TokenRequest.refresh(for: identity, refreshToken: Secret(refreshToken)))
        let exchange = try XCTUnwrap(TokenRequest.grant(for: makeIdentity(.tokenExchange(subject: ExchangedToken(token: Secret(subjectToken), type: "urn:x"), actor: ExchangedToken()),
                                                                       secret: clientSecret, auth: .post)))
        assertNoLeak(exchange)
        let jwtBearer = try XCTUnwrap(TokenRequest.grant(for: makeIdentity(.jwtBearer(assertion: Secret(assertion)))))
        assertNoLeak(jwtBearer)
        XCTAssertTrue(String(describing: request).contains("grant_type, username, password"), String(describing: request))
    }

    func testTokenResponsesAndRepliesShowNoToken() throws {
        let reply = reply(200, #"{"access_token":"\#(accessToken)","refresh_token":"\#(refreshToken)","expires_in":60}"#)
        assertNoLeak(reply)
        let response = try parsedToken(reply)
        assertNoLeak(response)
        XCTAssertTrue(String(describing: response).contains("…A1b2"), String(describing: response))
    }

    func testAccessTokensAndDecisionsShowNoToken() {
        let token = AccessToken(value: accessToken, issuedAt: 0, expiresAt: 60, refreshAt: 50)
        assertNoLeak(token)
        assertNoLeak(TokenDecision.inject(token))
    }

    func testLifecycleShowsNoTokenOrSecret() throws {
        var lifecycle = makeLifecycle(identity)
        try lifecycle.fetch(at: 0, answer: tokenResponse(accessToken, expiresIn: 60, refreshToken: refreshToken))
        assertNoLeak(lifecycle)
        assertNoLeak(lifecycle.status(at: 1))
        try lifecycle.fail(at: 54, with: .oauth(OAuthError(code: .invalidGrant), status: 400, retryAfter: nil))
        assertNoLeak(lifecycle)
        assertNoLeak(lifecycle.failure(at: 70) as Any)
    }

    func testErrorsQuotingTheEndpointShowNoSecretTheRequestCarried() throws {
        let request = try XCTUnwrap(TokenRequest.grant(for: identity))
        let echo = reply(500, "invalid secret \(clientSecret) for user svc / \(password)", contentType: "text/plain")
        XCTAssertThrowsError(try request.parseResponse(echo, unixTime: 0)) { error in
            assertNoLeak(error)
            XCTAssertTrue(String(describing: error).contains("invalid secret … for user svc / …"), String(describing: error))
        }
    }

    func testEchoedFormEncodedSecretAndBasicCredentialsAreRemoved() throws {
        let request = try XCTUnwrap(TokenRequest.grant(for: makeIdentity(secret: "p@ss w0rd/0123456789")))
        let credentials = try XCTUnwrap(request.header("Authorization"))
        let echo = reply(400, "got client_secret=p%40ss+w0rd%2F0123456789 and \(credentials)", contentType: "text/plain")
        XCTAssertThrowsError(try request.parseResponse(echo, unixTime: 0)) { error in
            XCTAssertEqual(error as? TokenEndpointError,
                           .unexpectedStatus(status: 400, contentType: "text/plain", excerpt: "got client_secret=… and Basic …", retryAfter: nil))
        }
    }
}
