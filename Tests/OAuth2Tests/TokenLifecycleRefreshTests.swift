import Endpoints
import OAuth2
import SafeText
import XCTest

/// When tokens are fetched and refreshed, which grant is used, and what a request gets.
final class TokenLifecycleRefreshTests: XCTestCase {
    func testFirstRequestWaitsForExactlyOneFetch() throws {
        var lifecycle = makeLifecycle()
        XCTAssertEqual(lifecycle.decision(at: 0), .wait)
        let request = try lifecycle.startFetch(at: 0)
        XCTAssertEqual(request.purpose, .grant(.clientCredentials))
        for _ in 0..<500 {
            XCTAssertNil(lifecycle.startFetchIfDue(at: 0))
        }
        XCTAssertEqual(lifecycle.decision(at: 0), .wait)
        XCTAssertTrue(lifecycle.isFetching)
    }

    func testTokenIsInjectedOnceFetched() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        XCTAssertEqual(lifecycle.injected(at: 1), "at-1")
        XCTAssertEqual(lifecycle.token?.type, "Bearer")
    }

    func testLongLivedTokenIsRefreshedTenPercentBeforeExpiry() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        XCTAssertEqual(lifecycle.nextFetchAt(after: 1), 3240)
        XCTAssertNil(lifecycle.startFetchIfDue(at: 3239.9))
        XCTAssertNotNil(lifecycle.startFetchIfDue(at: 3240))
    }

    func testValidTokenIsInjectedWhileItsRefreshIsInFlight() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        try lifecycle.startFetch(at: 3240)
        XCTAssertEqual(lifecycle.injected(at: 3300), "at-1")
        lifecycle.fetchSucceeded(tokenResponse("at-2", expiresIn: 3600), at: 3301)
        XCTAssertEqual(lifecycle.injected(at: 3302), "at-2")
    }

    func testTwentySecondTokenIsNotRefreshedOnEveryRequest() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 20))
        for now in stride(from: 0.0, to: 10, by: 0.5) {
            XCTAssertNil(lifecycle.startFetchIfDue(at: now), "at \(now)")
        }
        XCTAssertNotNil(lifecycle.startFetchIfDue(at: 10))
    }

    func testLifetimeCountsFromWhenTheRequestWasSent() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.startFetch(at: 100)
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 60), at: 103)
        XCTAssertEqual(lifecycle.token?.expiresAt, 160)
        XCTAssertEqual(lifecycle.token?.refreshAt, 150)
    }

    func testExpiredTokenIsNeverInjected() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 60))
        XCTAssertEqual(lifecycle.injected(at: 59.999), "at-1")
        XCTAssertNil(lifecycle.injected(at: 60))
        XCTAssertEqual(lifecycle.decision(at: 60), .wait)
    }

    func testTokenThatExpiredBeforeItArrivedIsAFailure() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.startFetch(at: 0)
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 5), at: 10)
        XCTAssertNil(lifecycle.token)
        XCTAssertEqual(lifecycle.consecutiveFailures, 1)
        XCTAssertEqual(lifecycle.nextFetchAt(after: 10), 11)
    }

    func testTokensOfAFewMillisecondsCauseAtMostOneFetchPerSecond() throws {
        // An IdP that hands out 10 ms tokens and answers in 1 ms: one token request a second,
        // not one per answer; the token is never injected after it expired.
        var lifecycle = makeLifecycle()
        var fetches = 0
        for tick in 0..<10_000 {
            let now = Double(tick) * 0.001
            if lifecycle.startFetchIfDue(at: now) != nil {
                fetches += 1
                lifecycle.fetchSucceeded(tokenResponse("at-\(fetches)", expiresIn: 0.010), at: now + 0.001)
            }
            if let token = lifecycle.token, lifecycle.injected(at: now) != nil {
                XCTAssertLessThan(now, token.expiresAt)
            }
        }
        XCTAssertEqual(fetches, 10)
        XCTAssertEqual(lifecycle.consecutiveFailures, 0)
    }

    func testRefreshUsesTheIssuedRefreshToken() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        let first = try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100, refreshToken: "rt-1"))
        XCTAssertEqual(first.purpose, .grant(.password))
        let refresh = try lifecycle.startFetch(at: 90)
        XCTAssertEqual(refresh.purpose, .refresh)
        XCTAssertEqual(refresh.bodyText, "grant_type=refresh_token&refresh_token=rt-1")
    }

    func testRotatedRefreshTokenReplacesTheOldOne() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100, refreshToken: "rt-1"))
        try lifecycle.fetch(at: 90, answer: tokenResponse("at-2", expiresIn: 100, refreshToken: "rt-2"))
        XCTAssertEqual(try lifecycle.startFetch(at: 180).bodyText, "grant_type=refresh_token&refresh_token=rt-2")
    }

    func testRefreshTokenIsKeptWhenTheResponseHasNone() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100, refreshToken: "rt-1"))
        try lifecycle.fetch(at: 90, answer: tokenResponse("at-2", expiresIn: 100))
        XCTAssertEqual(try lifecycle.startFetch(at: 180).bodyText, "grant_type=refresh_token&refresh_token=rt-1")
    }

    func testRejectedRefreshTokenFallsBackToTheOriginalGrantAtOnce() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100, refreshToken: "rt-1"))
        try lifecycle.fail(at: 90, with: invalidGrant)
        XCTAssertEqual(lifecycle.injected(at: 90), "at-1")
        let fallback = try lifecycle.startFetch(at: 90)
        XCTAssertEqual(fallback.purpose, .grant(.password))
        XCTAssertEqual(fallback.bodyText, "grant_type=password&username=svc&password=pw")
    }

    func testRequestsWaitForTheFallbackRatherThanFailOnARejectedRefresh() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100, refreshToken: "rt-1"))
        try lifecycle.startFetch(at: 90)
        lifecycle.fetchFailed(invalidGrant, at: 100)
        XCTAssertEqual(lifecycle.decision(at: 100), .wait)
    }

    func testRefreshTokenGrantFallsBackToItsSeedWhenARotatedTokenIsRejected() throws {
        var lifecycle = makeLifecycle(makeIdentity(.refreshToken(Secret("seed"))))
        XCTAssertEqual(try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100, refreshToken: "rt-2")).bodyText,
                       "grant_type=refresh_token&refresh_token=seed")
        try lifecycle.fail(at: 90, with: invalidGrant)
        XCTAssertEqual(try lifecycle.startFetch(at: 90).bodyText, "grant_type=refresh_token&refresh_token=seed")
    }

    func testRejectedGrantIsNotRetriedAtOnce() throws {
        var lifecycle = makeLifecycle(makeIdentity(.refreshToken(Secret("seed"))))
        try lifecycle.fail(at: 0, with: invalidGrant)
        XCTAssertNil(lifecycle.startFetchIfDue(at: 0))
        XCTAssertEqual(lifecycle.consecutiveFailures, 1)
    }

    func testInteractiveIdentityWithoutARefreshTokenNeedsALogin() {
        var lifecycle = makeLifecycle(makeIdentity(.authorizationCode(seed: nil)))
        XCTAssertNil(lifecycle.startFetchIfDue(at: 0))
        XCTAssertEqual(lifecycle.failure(at: 0)?.status, 401)
        XCTAssertEqual(lifecycle.failure(at: 0)?.reason, .needsLogin)
        XCTAssertNil(lifecycle.nextFetchAt(after: 0))
    }

    func testInteractiveIdentityRefreshesWithItsSeed() throws {
        var lifecycle = makeLifecycle(makeIdentity(.authorizationCode(seed: Secret("seed"))))
        XCTAssertEqual(try lifecycle.startFetch(at: 0).bodyText, "grant_type=refresh_token&refresh_token=seed")
    }

    func testInteractiveIdentityNeedsALoginWhenItsRefreshTokenIsRejected() throws {
        var lifecycle = makeLifecycle(makeIdentity(.deviceCode(seed: Secret("seed"))))
        try lifecycle.fail(at: 0, with: invalidGrant)
        XCTAssertEqual(lifecycle.failure(at: 0)?.reason, .needsLogin)
        XCTAssertNil(lifecycle.startFetchIfDue(at: 100))
    }

    func testLoginResultIsAcceptedWithoutAFetchInFlight() {
        var lifecycle = makeLifecycle(makeIdentity(.authorizationCode(seed: nil)))
        lifecycle.fetchSucceeded(tokenResponse("at-login", expiresIn: 60, refreshToken: "rt-login"), at: 5)
        XCTAssertEqual(lifecycle.injected(at: 6), "at-login")
        XCTAssertEqual(lifecycle.token?.expiresAt, 65)
        XCTAssertEqual(lifecycle.startFetchIfDue(at: 55)?.purpose, .refresh)
    }

    func testEachNewTokenHasTheNextSerial() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("a", expiresIn: 20))
        try lifecycle.fetch(at: 10, answer: tokenResponse("b", expiresIn: 20))
        XCTAssertEqual(lifecycle.token?.serial, 2)
    }

    func testScopeIsTheGrantedOneOrTheRequestedOne() throws {
        var lifecycle = makeLifecycle(makeIdentity { $0.scope = "orders.read" })
        try lifecycle.fetch(at: 0, answer: tokenResponse("a", expiresIn: 20))
        XCTAssertEqual(lifecycle.token?.scope, "orders.read")
        var granted = tokenResponse("b", expiresIn: 20)
        granted.scope = "orders.read orders.write"
        try lifecycle.fetch(at: 10, answer: granted)
        XCTAssertEqual(lifecycle.token?.scope, "orders.read orders.write")
    }

    func testNextActionFetchesWhenDueThenIdlesWhileTheFetchIsInFlight() {
        var lifecycle = makeLifecycle()
        guard case .fetch(let request) = lifecycle.nextAction(at: 0) else { return XCTFail("no fetch at start") }
        XCTAssertEqual(request.purpose, .grant(.clientCredentials))
        guard case .idle = lifecycle.nextAction(at: 0) else { return XCTFail("a second fetch while one is in flight") }
    }

    func testNextActionSleepsUntilTheRefreshIsDue() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100))
        guard case .sleep(let until) = lifecycle.nextAction(at: 1) else { return XCTFail("no sleep") }
        XCTAssertEqual(until, lifecycle.token?.refreshAt)
        guard case .fetch = lifecycle.nextAction(at: until) else { return XCTFail("no fetch at the refresh time") }
    }

    func testNextActionIsIdleWhenOnlyALoginCanHelp() {
        var lifecycle = makeLifecycle(makeIdentity(.authorizationCode(seed: nil)))
        guard case .idle = lifecycle.nextAction(at: 0) else { return XCTFail("an interactive identity fetched on its own") }
    }
}
