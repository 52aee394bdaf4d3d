import Endpoints
import OAuth2
import XCTest

/// Failed token requests: backoff, Retry-After, 502 vs 503, and upstream invalidation.
final class TokenLifecycleFailureTests: XCTestCase {
    func testFailuresBackOffExponentiallyUpToTheCap() throws {
        var lifecycle = makeLifecycle()
        var now = 0.0
        var delays: [Double] = []
        for _ in 0..<9 {
            try lifecycle.fail(at: now, with: idpDown)
            let next = try XCTUnwrap(lifecycle.nextFetchAt(after: now))
            delays.append(next - now)
            now = next
        }
        XCTAssertEqual(delays, [1, 2, 4, 8, 16, 32, 60, 60, 60])
    }

    func testNoFetchStartsDuringBackoff() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fail(at: 0, with: idpDown)
        try lifecycle.fail(at: 1, with: idpDown)
        XCTAssertNil(lifecycle.startFetchIfDue(at: 2.9))
        XCTAssertNotNil(lifecycle.startFetchIfDue(at: 3))
    }

    func testJitterShortensTheDelay() throws {
        var lifecycle = makeLifecycle(jitter: 0.999)
        for now in [0.0, 1, 2, 3] {
            lifecycle.fetchFailed(idpDown, at: now)
        }
        let delay = try XCTUnwrap(lifecycle.nextFetchAt(after: 3)) - 3
        XCTAssertLessThan(delay, 5)  // 8 s with up to half taken off
        XCTAssertGreaterThanOrEqual(delay, 4)
    }

    func testRetryAfterIsHonoured() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fail(at: 0, with: .unexpectedStatus(status: 429, contentType: nil, excerpt: nil, retryAfter: 30))
        XCTAssertEqual(lifecycle.nextFetchAt(after: 0), 30)
        XCTAssertNil(lifecycle.startFetchIfDue(at: 29))
        XCTAssertEqual(lifecycle.failure(at: 0)?.retryAfterSeconds, 30)
    }

    func testSuccessResetsTheBackoff() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fail(at: 0, with: idpDown)
        try lifecycle.fail(at: 1, with: idpDown)
        try lifecycle.fetch(at: 3, answer: tokenResponse("at-1", expiresIn: 20))
        XCTAssertEqual(lifecycle.consecutiveFailures, 0)
        try lifecycle.fail(at: 13, with: idpDown)
        XCTAssertEqual(lifecycle.nextFetchAt(after: 13), 14)
    }

    func testValidTokenKeepsBeingUsedWhileRefreshesFail() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100))
        try lifecycle.fail(at: 90, with: idpDown)
        try lifecycle.fail(at: 91, with: refusedByIdP)
        XCTAssertEqual(lifecycle.injected(at: 99), "at-1")
        XCTAssertEqual(lifecycle.status(at: 99).state, .failing)
        XCTAssertNotNil(lifecycle.failure(at: 100))
    }

    func testRefusalWithoutATokenIs502WithTheOAuthError() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fail(at: 0, with: refusedByIdP)
        let problem = try XCTUnwrap(lifecycle.failure(at: 0))
        XCTAssertEqual(problem.status, 502)
        XCTAssertEqual(problem.reason, .refused)
        XCTAssertEqual(problem.identity, "orders")
        XCTAssertEqual(problem.oauthError, "invalid_client")
        XCTAssertEqual(problem.oauthErrorDescription, "unknown client")
        XCTAssertNil(problem.retryAfterSeconds)
        XCTAssertEqual(problem.detail, "no valid token for identity orders: the token endpoint answered HTTP 401 with OAuth error "
                       + "invalid_client (unknown client)")
    }

    func testNonsenseAnswerWithoutATokenIs502() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fail(at: 0, with: .redirect(status: 302, location: "https://login/"))
        XCTAssertEqual(lifecycle.failure(at: 0)?.status, 502)
        XCTAssertNil(lifecycle.failure(at: 0)?.oauthError)
    }

    func testUnreachableEndpointWithoutATokenIs503WithRetryAfter() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fail(at: 0, with: idpDown)
        try lifecycle.fail(at: 1, with: .timedOut(seconds: 5))
        let problem = try XCTUnwrap(lifecycle.failure(at: 1.5))
        XCTAssertEqual(problem.status, 503)
        XCTAssertEqual(problem.retryAfterSeconds, 2)  // next attempt at 3
    }

    func testServerErrorAndTooManyRequestsAre503() throws {
        for status in [500, 503, 429] {
            var lifecycle = makeLifecycle()
            try lifecycle.fail(at: 0, with: .unexpectedStatus(status: status, contentType: nil, excerpt: nil, retryAfter: nil))
            XCTAssertEqual(lifecycle.failure(at: 0)?.status, 503, "\(status)")
        }
    }

    func testRequestsFailFastWhileARetryIsInFlight() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fail(at: 0, with: idpDown)
        try lifecycle.startFetch(at: 1)
        XCTAssertEqual(lifecycle.failure(at: 1.2)?.retryAfterSeconds, 1)
    }

    func testInvalidateDropsTheCurrentTokenAndAFetchIsDue() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        XCTAssertEqual(lifecycle.refused(token: "at-1", at: 5, minimumAge: 10), .dropped)
        XCTAssertEqual(lifecycle.decision(at: 5), .wait)
        XCTAssertTrue(lifecycle.shouldStartFetch(at: 5))
    }

    func testInvalidateIgnoresATokenThatIsNoLongerCurrent() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 20))
        try lifecycle.fetch(at: 10, answer: tokenResponse("at-2", expiresIn: 20))
        XCTAssertEqual(lifecycle.refused(token: "at-1", at: 11, minimumAge: 10), .superseded)
        XCTAssertEqual(lifecycle.injected(at: 11), "at-2")
    }

    func testBurstOfRejectionsOfOneTokenCausesOneFetch() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        var fetches = 0
        for _ in 0..<100 {
            _ = lifecycle.refused(token: "at-1", at: 5, minimumAge: 10)
            if lifecycle.startFetchIfDue(at: 5) != nil { fetches += 1 }
        }
        XCTAssertEqual(fetches, 1)
    }

    func testInvalidateKeepsTheRefreshToken() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600, refreshToken: "rt-1"))
        _ = lifecycle.refused(token: "at-1", at: 1, minimumAge: 10)
        XCTAssertEqual(try lifecycle.startFetch(at: 1).purpose, .refresh)
    }

    func testATokenFetchedAfterARefusalIsKeptUntilItIsOldEnough() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        XCTAssertEqual(lifecycle.refused(token: "at-1", at: 100, minimumAge: 10), .dropped)
        try lifecycle.fetch(at: 101, answer: tokenResponse("at-2", expiresIn: 3600))
        XCTAssertEqual(lifecycle.refused(token: "at-2", at: 105, minimumAge: 10), .kept)
        XCTAssertEqual(lifecycle.injected(at: 105), "at-2", "a kept token is still injected")
        XCTAssertFalse(lifecycle.shouldStartFetch(at: 105))
        XCTAssertEqual(lifecycle.refused(token: "at-2", at: 111, minimumAge: 10), .dropped)
    }

    func testAnUpstreamRefusingEveryFewSecondsCostsOneFetchPerMinimumAge() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-0", expiresIn: 3600))
        var fetches = 0
        // A refusal every 0.5 s for 60 s, whatever the token: at most one fetch per 10 s.
        for step in 1...120 {
            let now = Double(step) / 2
            _ = lifecycle.refused(token: lifecycle.injected(at: now) ?? "", at: now, minimumAge: 10)
            if lifecycle.startFetchIfDue(at: now) != nil {
                fetches += 1
                lifecycle.fetchSucceeded(tokenResponse("at-\(fetches)", expiresIn: 3600), at: now)
            }
        }
        XCTAssertEqual(fetches, 6)
    }

    func testAFirstRefusalOfAnOrdinaryTokenDropsItWhateverItsAge() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        XCTAssertEqual(lifecycle.refused(token: "at-1", at: 0.5, minimumAge: 10), .dropped)
    }

    func testForgettingClearsTheRefusalHistory() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        _ = lifecycle.refused(token: "at-1", at: 1, minimumAge: 10)
        lifecycle.forget()
        try lifecycle.fetch(at: 2, answer: tokenResponse("at-2", expiresIn: 3600))
        XCTAssertEqual(lifecycle.refused(token: "at-2", at: 3, minimumAge: 10), .dropped)
    }
}
