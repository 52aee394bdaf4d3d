import Endpoints
import OAuth2
import SafeText
import XCTest

/// A grant on behalf of the caller (`Grant.caller`): the exchange request's exact form (RFC 8693
/// §2.1; Entra ID's on-behalf-of), the caller's token kept out of every error text, the request
/// made again with new client credentials, what the token endpoint's answer means for the caller
/// (`CallerRefusal`), and an identity that never fetches a token of its own.
final class CallerExchangeRequestTests: XCTestCase {
    private let caller = Secret("caller.access.token-of-alice")
    private let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
    private let jwtType = "urn:ietf:params:oauth:token-type:jwt"

    private func exchangeIdentity(_ grant: CallerGrant = .tokenExchange(subjectTokenType: CallerGrant.accessTokenType, actor: ExchangedToken()),
                                  auth: TestClientAuth = .basic, configure: (inout Identity) -> Void = { _ in }) -> Identity {
        makeIdentity(.caller(grant), auth: auth, configure: configure)
    }

    private func exchange(_ identity: Identity, file: StaticString = #filePath, line: UInt = #line) throws -> TokenRequest {
        try XCTUnwrap(TokenRequest.exchange(for: identity, callerToken: caller, at: identity.tokenUrl!), file: file, line: line)
    }

    // MARK: The request

    func testATokenExchangeSendsTheCallersTokenAsTheSubjectWithTheIdentitysTarget() throws {
        let request = try exchange(exchangeIdentity {
            $0.scope = "orders.read"
            $0.audience = "orders-api"
            $0.resource = ["https://orders.internal/", "https://billing.internal/"]
        })
        XCTAssertEqual(request.bodyText, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
                       + "&subject_token=caller.access.token-of-alice"
                       + "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token"
                       + "&scope=orders.read&audience=orders-api"
                       + "&resource=https%3A%2F%2Forders.internal%2F&resource=https%3A%2F%2Fbilling.internal%2F")
        XCTAssertEqual(request.header("Authorization"), "Basic b3JkZXJzLXJlbGF5OnMzY3JldA==")
        XCTAssertEqual(request.purpose, .grant(.tokenExchange))
        XCTAssertEqual(request.url.requestTarget, "/oauth2/token")
    }

    func testTheSubjectTypeAndAnActorTokenAreTheIdentitys() throws {
        let request = try exchange(exchangeIdentity(.tokenExchange(subjectTokenType: jwtType,
                                                                   actor: ExchangedToken(token: Secret("actor-jwt"), type: jwtType))))
        XCTAssertEqual(request.fieldNames, ["grant_type", "subject_token", "subject_token_type", "actor_token", "actor_token_type"])
        XCTAssertTrue(request.bodyText.contains("subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&actor_token=actor-jwt"))
    }

    func testOnBehalfOfSendsTheCallersTokenAsTheAssertion() throws {
        let request = try exchange(exchangeIdentity(.onBehalfOf, auth: .post) { $0.scope = "api://orders/.default" })
        XCTAssertEqual(request.bodyText, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
                       + "&assertion=caller.access.token-of-alice&requested_token_use=on_behalf_of"
                       + "&scope=api%3A%2F%2Forders%2F.default&client_id=orders-relay&client_secret=s3cret")
        XCTAssertNil(request.header("Authorization"))
        XCTAssertEqual(request.purpose, .grant(.jwtBearer))
    }

    func testAnyClientAuthenticationGoesWithIt() throws {
        var identity = exchangeIdentity()
        identity.clientAuth = .clientAssertion(id: "orders-relay", assertion: Secret("platform.written.jwt"))
        let request = try exchange(identity)
        XCTAssertEqual(request.fieldNames, ["grant_type", "subject_token", "subject_token_type", "client_id", "client_assertion_type",
                                            "client_assertion"])
    }

    func testIdentityParamsAndHeadersGoToo() throws {
        let request = try exchange(exchangeIdentity {
            $0.params = ["tenant": "acme"]
            $0.headers = ["X-Request-Source": "oauth-relay"]
        })
        XCTAssertTrue(request.bodyText.hasSuffix("&tenant=acme"))
        XCTAssertEqual(request.header("X-Request-Source"), "oauth-relay")
    }

    func testNoOtherGrantIsExchangedAndACallerGrantHasNoRequestOfItsOwn() {
        XCTAssertNil(TokenRequest.exchange(for: makeIdentity(), callerToken: caller, at: makeIdentity().tokenUrl!))
        XCTAssertNil(TokenRequest.grant(for: exchangeIdentity()))
        XCTAssertNil(TokenRequest.grant(for: exchangeIdentity(.onBehalfOf)))
    }

    func testTheCallersTokenNeverShowsInAnErrorOrADescription() throws {
        let request = try exchange(exchangeIdentity())
        let answer = reply(400, #"{"error": "invalid_grant", "error_description": "token caller.access.token-of-alice revoked"}"#)
        do {
            _ = try request.parseResponse(answer, unixTime: 1_700_000_000)
            XCTFail("expected an error")
        } catch {
            XCTAssertFalse("\(error)".contains("token-of-alice"), "\(error)")
            XCTAssertEqual(error.oauthError?.code, .invalidGrant)
        }
        for text in everyRendering(of: request) { XCTAssertFalse(text.contains("token-of-alice"), text) }
    }

    func testMadeAgainWithANewClientSecretItKeepsTheCallersToken() throws {
        let request = try exchange(exchangeIdentity(auth: .post))
        let rotated = exchangeIdentity(auth: .post) { $0.clientAuth = .post(id: "orders-relay", secret: Secret("rotated")) }
        let rebuilt = request.rebuilt(for: rotated)
        XCTAssertEqual(rebuilt.bodyText, request.bodyText.replacingOccurrences(of: "client_secret=s3cret", with: "client_secret=rotated"))
    }

    // MARK: What the answer means for the caller

    private func refusal(_ code: String, status: Int = 400) -> CallerRefusal {
        CallerRefusal(.oauth(OAuthError(code: OAuthErrorCode(code), errorDescription: "because"), status: status, retryAfter: nil),
                      identity: "orders")
    }

    func testTheTokenEndpointsErrorSaysWhoseFaultItIs() {
        let table: [(code: String, status: Int, reason: TokenUnavailable.Reason)] = [
            ("invalid_grant", 401, .callerUnauthorized), ("invalid_token", 401, .callerUnauthorized),
            ("invalid_request", 401, .callerUnauthorized), ("interaction_required", 401, .callerUnauthorized),
            ("invalid_scope", 403, .callerForbidden), ("access_denied", 403, .callerForbidden),
            ("insufficient_scope", 403, .callerForbidden), ("consent_required", 403, .callerForbidden),
            ("unauthorized_client", 502, .refused), ("invalid_target", 502, .refused),
            ("invalid_client", 502, .refused), ("unsupported_grant_type", 502, .refused), ("something_else", 502, .refused),
        ]
        for (code, status, reason) in table {
            let refusal = refusal(code)
            XCTAssertEqual(refusal.problem.status, status, code)
            XCTAssertEqual(refusal.problem.reason, reason, code)
            XCTAssertEqual(refusal.problem.oauthError, code)
            XCTAssertEqual(refusal.problem.oauthErrorDescription, "because")
            XCTAssertNil(refusal.problem.retryAfterSeconds)
            XCTAssertEqual(refusal.seconds, CallerRefusal.refusalSeconds)
        }
    }

    func testAnOutageIs503ForItsRetryAfterWithinBounds() {
        let cases: [(TokenEndpointError, Int)] = [
            (.unreachable(reason: "connection refused"), 1), (.timedOut(seconds: 5), 1),
            (.unexpectedStatus(status: 503, contentType: nil, excerpt: nil, retryAfter: 3), 3),
            (.unexpectedStatus(status: 429, contentType: nil, excerpt: nil, retryAfter: 2.2), 3),
            (.oauth(OAuthError(code: .temporarilyUnavailable), status: 400, retryAfter: nil), 1),
            (.unexpectedStatus(status: 500, contentType: nil, excerpt: nil, retryAfter: 86_400), 30),
        ]
        for (error, seconds) in cases {
            let refusal = CallerRefusal(error, identity: "orders")
            XCTAssertEqual(refusal.problem.status, 503, "\(error)")
            XCTAssertEqual(refusal.problem.retryAfterSeconds, seconds, "\(error)")
            XCTAssertEqual(refusal.seconds, Double(seconds), "\(error)")
        }
    }

    func testABareRefusalWithoutAnOAuthErrorIsTheRelays() {
        let refusal = CallerRefusal(.unexpectedStatus(status: 400, contentType: "text/html", excerpt: nil, retryAfter: nil), identity: "orders")
        XCTAssertEqual(refusal.problem.status, 502)
        XCTAssertNil(refusal.problem.oauthError)
    }

    // MARK: The identity itself

    func testTheIdentityNeverFetchesATokenOfItsOwn() {
        var lifecycle = TokenLifecycle(identity: exchangeIdentity())
        guard case .idle = lifecycle.nextAction(at: 0) else { return XCTFail("a per-caller identity started a fetch") }
        XCTAssertEqual(lifecycle.status(at: 0).state, .perCaller)
        guard case .fail(let problem) = lifecycle.decision(at: 0) else { return XCTFail("expected a failure") }
        XCTAssertTrue(problem.detail.contains("has no token of its own"), problem.detail)
        XCTAssertEqual(CallerGrant.onBehalfOf.type, .jwtBearer)
        XCTAssertEqual(Grant.caller(.onBehalfOf).grantType, "urn:ietf:params:oauth:grant-type:jwt-bearer")
    }

    func testTheCallersJWTExpiryIsReadWithoutVerifying() {
        XCTAssertEqual(CallerGrant.unverifiedExpiry(ofCallerToken: makeJWT(#"{"exp": 1700000600}"#)), 1_700_000_600)
        XCTAssertNil(CallerGrant.unverifiedExpiry(ofCallerToken: "opaque-token"))
    }
}
