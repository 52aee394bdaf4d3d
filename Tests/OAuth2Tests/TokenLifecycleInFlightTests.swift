import Endpoints
import OAuth2
import SafeText
import XCTest

/// Events that meet a fetch under way: a logout (whose answer must not bring the login back) and
/// a login's code arriving during a refresh or during another tab's code exchange (which must not
/// be lost, nor checked against the other login's nonce).
final class TokenLifecycleInFlightTests: XCTestCase {
    private func browserIdentity(scope: String? = "openid") -> Identity {
        makeIdentity(.authorizationCode(seed: nil), clientId: "cli-app", secret: nil) {
            $0.authorizationUrl = HTTPURL(scheme: .https, host: "idp.example.com", path: "/authorize")
            $0.redirectUri = HTTPURL(scheme: .http, host: "127.0.0.1", port: 8180, path: "/.oauth-relay/callback")
            $0.scope = scope
        }
    }

    /// A login started for `identity`; each seed gives other values (state, verifier, nonce).
    private func login(for identity: Identity, seed: UInt64) -> LoginStart {
        var random = SeededRandom(seed: seed)
        return freshLogin(identity, redirectUri: identity.redirectUri!.description, returnTo: nil, at: 0, random: &random)
    }

    /// Logged in at time 1 with `at-1`/`rt-1` (60 s), by the code of login seed 1.
    private func loggedIn(_ identity: Identity) throws -> TokenLifecycle {
        var lifecycle = makeLifecycle(identity)
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-1"), login: login(for: identity, seed: 1)))
        try lifecycle.startFetch(at: 1)
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 60, refreshToken: "rt-1"), at: 1)
        XCTAssertEqual(lifecycle.injected(at: 1), "at-1")
        return lifecycle
    }

    // MARK: A logout while a fetch is under way

    func testALogoutDuringARefreshDropsTheRefreshsAnswer() throws {
        var lifecycle = try loggedIn(browserIdentity())
        let refresh = try lifecycle.startFetch(at: 55)
        XCTAssertEqual(refresh.purpose, .refresh)
        lifecycle.forget()
        XCTAssertEqual(lifecycle.failure(at: 55)?.reason, .needsLogin, "logged out: requests are told so at once")
        lifecycle.fetchSucceeded(tokenResponse("at-2", expiresIn: 60, refreshToken: "rt-2"), at: 56)
        XCTAssertNil(lifecycle.token, "the refresh answered after the logout: its token is not taken")
        XCTAssertNil(lifecycle.heldRefreshToken, "nor its rotated refresh token")
        XCTAssertEqual(lifecycle.failure(at: 56)?.reason, .needsLogin)
        XCTAssertEqual(lifecycle.status(at: 56).state, .needsLogin)
        XCTAssertFalse(lifecycle.status(at: 56).hasRefreshToken)
        guard case .idle = lifecycle.nextAction(at: 56) else { return XCTFail("nothing to fetch until a person logs in") }
    }

    func testAFailureOfAnAbandonedFetchCostsNoBackoff() throws {
        var lifecycle = try loggedIn(browserIdentity())
        try lifecycle.startFetch(at: 55)
        lifecycle.forget()
        lifecycle.fetchFailed(idpDown, at: 56)
        XCTAssertEqual(lifecycle.consecutiveFailures, 0)
        XCTAssertEqual(lifecycle.failure(at: 56)?.reason, .needsLogin)
    }

    func testALogoutDuringAClientCredentialsFetchFetchesAnewOnceItEnds() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.startFetch(at: 0)
        lifecycle.forget()
        XCTAssertEqual(lifecycle.decision(at: 0), .wait)
        XCTAssertNil(lifecycle.startFetchIfDue(at: 0), "one request at a time: the abandoned one is still out")
        lifecycle.fetchSucceeded(tokenResponse("at-old", expiresIn: 300), at: 1)
        XCTAssertNil(lifecycle.token)
        XCTAssertEqual(lifecycle.decision(at: 1), .wait)
        try lifecycle.fetch(at: 1, answer: tokenResponse("at-new", expiresIn: 300))
        XCTAssertEqual(lifecycle.injected(at: 2), "at-new")
    }

    func testALogoutDuringACodeExchangeDropsThatLogin() throws {
        let identity = browserIdentity()
        var lifecycle = makeLifecycle(identity)
        _ = lifecycle.codeReceived(Secret("code-1"), login: login(for: identity, seed: 1))
        try lifecycle.startFetch(at: 0)
        lifecycle.forget()
        lifecycle.loggedIn(as: "alice")
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 60, refreshToken: "rt-1"), at: 1)
        XCTAssertNil(lifecycle.token)
        XCTAssertNil(lifecycle.status(at: 1).loggedInAs)
        XCTAssertEqual(lifecycle.status(at: 1).state, .needsLogin)
    }

    func testALogoutDropsACodeWaitingForItsExchange() throws {
        let identity = browserIdentity()
        var lifecycle = makeLifecycle(identity)
        _ = lifecycle.codeReceived(Secret("code-1"), login: login(for: identity, seed: 1))
        lifecycle.forget()
        XCTAssertNil(lifecycle.startFetchIfDue(at: 0))
        XCTAssertEqual(lifecycle.status(at: 0).state, .needsLogin)
    }

    func testAFetchAbandonedWhileItAwaitedTheStoreLockSendsNothing() throws {
        var lifecycle = try loggedIn(browserIdentity())
        try lifecycle.startFetch(at: 55)
        lifecycle.forget()
        let stored = AccessToken(value: "at-other", type: "Bearer", issuedAt: 50, expiresAt: 110, refreshAt: 100, scope: nil, serial: 0)
        guard case .satisfied = lifecycle.storedEntryRead(stored, refreshToken: Secret("rt-other"), at: 56) else {
            return XCTFail("an abandoned fetch sends no request")
        }
        XCTAssertNil(lifecycle.token, "nor takes what another process stored before the logout removed it")
        XCTAssertNil(lifecycle.heldRefreshToken)
        XCTAssertFalse(lifecycle.isFetching)
    }

    // MARK: A login's code while a fetch is under way

    func testACallbackDuringABackgroundRefreshIsExchangedAfterIt() throws {
        let identity = browserIdentity()
        var lifecycle = try loggedIn(identity)
        let refresh = try lifecycle.startFetch(at: 55)
        XCTAssertEqual(refresh.purpose, .refresh)
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-2"), login: login(for: identity, seed: 2)))
        XCTAssertEqual(lifecycle.decision(at: 55), .wait, "requests wait for the new login")
        lifecycle.fetchSucceeded(tokenResponse("at-refreshed", expiresIn: 60, refreshToken: "rt-2"), at: 56)
        XCTAssertEqual(lifecycle.status(at: 56).state, .loginPending, "the refresh ending does not end the login")
        XCTAssertEqual(lifecycle.decision(at: 56), .wait)
        let exchange = try lifecycle.startFetch(at: 56)
        XCTAssertEqual(exchange.purpose, .grant(.authorizationCode))
        XCTAssertTrue(exchange.bodyText.contains("code=code-2"))
        lifecycle.fetchSucceeded(tokenResponse("at-login-2", expiresIn: 60, refreshToken: "rt-3"), at: 57)
        XCTAssertEqual(lifecycle.injected(at: 57), "at-login-2")
    }

    func testASecondTabsCodeWaitsForTheFirstExchangeAndEachIsCheckedAgainstItsOwnNonce() throws {
        let identity = browserIdentity()
        let first = login(for: identity, seed: 1), second = login(for: identity, seed: 2)
        XCTAssertNotEqual(first.nonce, second.nonce)
        var lifecycle = makeLifecycle(identity)
        _ = lifecycle.codeReceived(Secret("code-1"), login: first)
        let exchange1 = try lifecycle.startFetch(at: 0)
        XCTAssertTrue(exchange1.bodyText.contains("code=code-1"))
        XCTAssertEqual(lifecycle.expectedNonce, first.nonce)
        // The second tab's callback arrives while the first exchange is under way.
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-2"), login: second))
        XCTAssertEqual(lifecycle.expectedNonce, first.nonce, "the answer under way is checked against its own login")
        XCTAssertNil(lifecycle.startFetchIfDue(at: 0), "one exchange at a time")
        lifecycle.loggedIn(as: "alice")
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 60, refreshToken: "rt-1"), at: 1)
        XCTAssertEqual(lifecycle.decision(at: 1), .wait, "the second login is still to finish")
        let exchange2 = try lifecycle.startFetch(at: 1)
        XCTAssertTrue(exchange2.bodyText.contains("code=code-2"))
        XCTAssertTrue(exchange2.bodyText.contains("code_verifier=\(second.verifier.value)"))
        XCTAssertEqual(lifecycle.expectedNonce, second.nonce)
        lifecycle.loggedIn(as: "bob")
        lifecycle.fetchSucceeded(tokenResponse("at-2", expiresIn: 60, refreshToken: "rt-2"), at: 2)
        XCTAssertEqual(lifecycle.injected(at: 2), "at-2")
        XCTAssertEqual(lifecycle.status(at: 2).loggedInAs, "bob")
    }

    func testAFailedFirstExchangeDoesNotDropTheSecondTabsCode() throws {
        let identity = browserIdentity()
        var lifecycle = makeLifecycle(identity)
        _ = lifecycle.codeReceived(Secret("code-1"), login: login(for: identity, seed: 1))
        try lifecycle.startFetch(at: 0)
        _ = lifecycle.codeReceived(Secret("code-2"), login: login(for: identity, seed: 2))
        lifecycle.fetchFailed(.idToken(reason: "nonce mismatch"), at: 1)
        XCTAssertEqual(lifecycle.status(at: 1).state, .loginPending)
        let exchange2 = try lifecycle.startFetch(at: 1)
        XCTAssertTrue(exchange2.bodyText.contains("code=code-2"))
        lifecycle.fetchSucceeded(tokenResponse("at-2", expiresIn: 60), at: 2)
        XCTAssertEqual(lifecycle.injected(at: 2), "at-2")
        XCTAssertNil(lifecycle.status(at: 2).lastLoginFailure)
    }

    func testARefreshAwaitingTheStoreLockBecomesTheExchangeOfACodeThatArrivedMeanwhile() throws {
        let identity = browserIdentity()
        var lifecycle = try loggedIn(identity)
        try lifecycle.startFetch(at: 55)
        let second = login(for: identity, seed: 2)
        _ = lifecycle.codeReceived(Secret("code-2"), login: second)
        guard case .fetch(let request) = lifecycle.storedEntryRead(nil, refreshToken: nil, at: 55) else {
            return XCTFail("the fetch goes on")
        }
        XCTAssertTrue(request.bodyText.contains("code=code-2"))
        XCTAssertEqual(lifecycle.fetchPurpose, .grant(.authorizationCode))
        XCTAssertEqual(lifecycle.expectedNonce, second.nonce)
        lifecycle.fetchSucceeded(tokenResponse("at-2", expiresIn: 60), at: 56)
        XCTAssertNil(lifecycle.startFetchIfDue(at: 56), "the code is exchanged once")
        XCTAssertEqual(lifecycle.injected(at: 56), "at-2")
    }
}
