import Endpoints
import OAuth2
import SafeText
import XCTest

/// Discovery, a browser login's code exchange and a device login, as the token lifecycle
/// drives them (TokenLifecycle+Discovery, +Login, +Device).
final class TokenLifecycleLoginTests: XCTestCase {
    private let authorize = HTTPURL(scheme: .https, host: "idp.example.com", path: "/authorize")
    private let device = HTTPURL(scheme: .https, host: "idp.example.com", path: "/device")

    private func browserIdentity() -> Identity {
        makeIdentity(.authorizationCode(seed: nil), clientId: "cli-app", secret: nil) {
            $0.authorizationUrl = authorize
            $0.redirectUri = HTTPURL(scheme: .http, host: "127.0.0.1", port: 8180, path: "/.oauth-relay/callback")
        }
    }

    private func deviceIdentity() -> Identity {
        makeIdentity(.deviceCode(seed: nil), clientId: "tv-app", secret: nil) { $0.deviceAuthorizationUrl = device }
    }

    private func pendingError(_ code: OAuthErrorCode) -> TokenEndpointError {
        .oauth(OAuthError(code: code, errorDescription: nil), status: 400, retryAfter: nil)
    }

    // MARK: Discovery

    func testAnIdentityWithoutItsTokenURLDiscoversItFirstAndOnce() throws {
        var lifecycle = makeLifecycle(makeIdentity { $0.tokenUrl = nil; $0.issuer = "https://idp.example.com" })
        guard case .discover = lifecycle.nextAction(at: 0) else { return XCTFail("discovery comes first") }
        guard case .idle = lifecycle.nextAction(at: 0) else { return XCTFail("one discovery at a time") }
        XCTAssertEqual(lifecycle.decision(at: 0), .wait, "requests wait for discovery and the fetch after it")
        let discovered = HTTPURL(scheme: .https, host: "idp.example.com", path: "/discovered/token")
        lifecycle.discovered(IdentityEndpoints(token: discovered))
        guard case .fetch(let request) = lifecycle.nextAction(at: 0) else { return XCTFail("the fetch follows discovery") }
        XCTAssertEqual(request.url, discovered)
    }

    func testAPersonsIdentityIsPendingUntilDiscoveryAnswers() {
        var lifecycle = makeLifecycle(makeIdentity(.authorizationCode(seed: nil), clientId: "cli", secret: nil) {
            $0.tokenUrl = nil
            $0.issuer = "https://idp.example.com"
        })
        XCTAssertEqual(lifecycle.status(at: 0).state, .pending, "no login can start before the endpoints are known")
        _ = lifecycle.nextAction(at: 0)
        lifecycle.discovered(IdentityEndpoints(token: HTTPURL(scheme: .https, host: "idp.example.com", path: "/token"),
                                               authorization: authorize))
        XCTAssertEqual(lifecycle.status(at: 0).state, .needsLogin)
    }

    func testAFailedDiscoveryBacksOffAndRequestsGet503() throws {
        var lifecycle = makeLifecycle(makeIdentity { $0.tokenUrl = nil; $0.issuer = "https://idp.example.com" })
        _ = lifecycle.nextAction(at: 0)
        lifecycle.discoveryFailed(.discovery(.unavailable(url: "https://idp.example.com/.well-known/openid-configuration",
                                                          reason: "unreachable", retryAfter: nil)), at: 0)
        XCTAssertEqual(lifecycle.failure(at: 0)?.status, 503)
        XCTAssertEqual(lifecycle.status(at: 0).state, .failing)
        guard case .sleep(let until) = lifecycle.nextAction(at: 0) else { return XCTFail("backoff before the next discovery") }
        XCTAssertGreaterThan(until, 0)
        guard case .discover = lifecycle.nextAction(at: until) else { return XCTFail("discovery again after the backoff") }
    }

    func testAPersonsIdentityWhoseDiscoveryFailsIsFailingWith503NotNeedsLogin() throws {
        var identity = browserIdentity()
        identity.tokenUrl = nil
        identity.issuer = "https://idp.example.com"
        var lifecycle = makeLifecycle(identity)
        _ = lifecycle.nextAction(at: 0)
        let wrongIssuer = DiscoveryError.issuerMismatch(url: "https://idp.example.com/.well-known/openid-configuration",
                                                        expected: "https://idp.example.com", found: "https://evil.example")
        lifecycle.discoveryFailed(.discovery(wrongIssuer), at: 0)
        XCTAssertEqual(lifecycle.status(at: 0).state, .failing)
        let failure = try XCTUnwrap(lifecycle.failure(at: 0))
        XCTAssertEqual(failure.status, 503, "discovery is tried again: a request may be retried later")
        XCTAssertGreaterThanOrEqual(failure.retryAfterSeconds ?? 0, 1)
        lifecycle.discovered(IdentityEndpoints(token: HTTPURL(scheme: .https, host: "idp.example.com", path: "/token"),
                                               authorization: authorize))
        XCTAssertEqual(lifecycle.failure(at: 1)?.reason, .needsLogin, "with its endpoints, the identity waits for a person")
    }

    // MARK: A browser login

    private func login(for identity: Identity, nonce: Bool = false) -> LoginStart {
        var random = SeededRandom()
        var identity = identity
        if nonce { identity.scope = "openid" }
        return freshLogin(identity, redirectUri: identity.redirectUri!.description, at: 0, random: &random)
    }

    func testWithoutALoginRequestsGet401AndNothingIsFetched() {
        var lifecycle = makeLifecycle(browserIdentity())
        XCTAssertEqual(lifecycle.failure(at: 0)?.reason, .needsLogin)
        guard case .idle = lifecycle.nextAction(at: 0) else { return XCTFail("nothing to fetch before a login") }
    }

    func testACallbacksCodeIsExchangedAtOnceWhileRequestsWait() throws {
        let identity = browserIdentity()
        var lifecycle = makeLifecycle(identity)
        let start = login(for: identity)
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-1"), login: start))
        XCTAssertEqual(lifecycle.decision(at: 1), .wait)
        XCTAssertEqual(lifecycle.status(at: 1).state, .loginPending, "the exchange is due: the login is finishing")
        guard case .fetch(let request) = lifecycle.nextAction(at: 1) else { return XCTFail("the exchange is due at once") }
        XCTAssertEqual(request.purpose, .grant(.authorizationCode))
        XCTAssertTrue(request.bodyText.contains("code=code-1"))
        XCTAssertTrue(request.bodyText.contains("code_verifier=\(start.verifier.value)"))
        XCTAssertEqual(lifecycle.status(at: 1).state, .loginPending)
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 300, refreshToken: "rt-1"), at: 2)
        XCTAssertEqual(lifecycle.injected(at: 2), "at-1")
        XCTAssertNil(lifecycle.status(at: 2).lastLoginFailure)
        guard case .sleep = lifecycle.nextAction(at: 2) else { return XCTFail("the refresh is scheduled") }
    }

    /// A lifecycle whose first login gave token `at-1` at time 1.
    private func loggedIn(_ identity: Identity) -> TokenLifecycle {
        var lifecycle = makeLifecycle(identity)
        _ = lifecycle.codeReceived(Secret("code-1"), login: login(for: identity))
        _ = lifecycle.nextAction(at: 0)
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 300, refreshToken: "rt-1"), at: 1)
        return lifecycle
    }

    func testASecondLoginsRequestsWaitForItsTokenNotTheFirstLogins() throws {
        let identity = browserIdentity()
        var lifecycle = loggedIn(identity)
        XCTAssertEqual(lifecycle.injected(at: 2), "at-1")
        // Another tab's login comes back: the valid token of the first is no longer handed out.
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-2"), login: login(for: identity)))
        XCTAssertEqual(lifecycle.decision(at: 2), .wait)
        XCTAssertEqual(lifecycle.status(at: 2).state, .loginPending)
        guard case .fetch(let request) = lifecycle.nextAction(at: 2) else { return XCTFail("the exchange is due at once") }
        XCTAssertTrue(request.bodyText.contains("code=code-2"))
        XCTAssertEqual(lifecycle.decision(at: 2), .wait)
        lifecycle.fetchSucceeded(tokenResponse("at-2", expiresIn: 300, refreshToken: "rt-2"), at: 3)
        XCTAssertEqual(lifecycle.injected(at: 3), "at-2")
    }

    func testAFailedSecondLoginLeavesTheFirstLoginsTokenInUse() throws {
        let identity = browserIdentity()
        var lifecycle = loggedIn(identity)
        _ = lifecycle.codeReceived(Secret("code-2"), login: login(for: identity))
        _ = lifecycle.nextAction(at: 2)
        lifecycle.fetchFailed(invalidGrant, at: 2)
        XCTAssertEqual(lifecycle.injected(at: 3), "at-1")
        XCTAssertNotNil(lifecycle.status(at: 3).lastLoginFailure)
    }

    /// A browser login by `who` whose response brings `refreshToken` (an IdP sends none to a
    /// person consenting again).
    private func logIn(_ lifecycle: inout TokenLifecycle, as who: String, token: String, refreshToken: String?, at now: Double) {
        _ = lifecycle.codeReceived(Secret("code-\(token)"), login: login(for: lifecycle.identity))
        _ = lifecycle.nextAction(at: now)
        lifecycle.loggedIn(as: who)
        lifecycle.fetchSucceeded(tokenResponse(token, expiresIn: 300, refreshToken: refreshToken), at: now)
    }

    func testTheSamePersonLoggingInAgainKeepsTheRefreshTokenSomeoneElseDropsIt() throws {
        var lifecycle = makeLifecycle(browserIdentity())
        logIn(&lifecycle, as: "alice", token: "at-1", refreshToken: "rt-1", at: 0)
        logIn(&lifecycle, as: "alice", token: "at-2", refreshToken: nil, at: 10)
        XCTAssertEqual(lifecycle.injected(at: 11), "at-2")
        XCTAssertEqual(lifecycle.heldRefreshToken, Secret("rt-1"), "the same person's login keeps the refresh token that works")
        logIn(&lifecycle, as: "bob", token: "at-3", refreshToken: nil, at: 20)
        XCTAssertEqual(lifecycle.loggedInAs, "bob")
        XCTAssertNil(lifecycle.heldRefreshToken, "alice's refresh token would refresh bob's login as alice")
    }

    func testARefusedCodeEndsTheLoginWithoutBackoff() throws {
        let identity = browserIdentity()
        var lifecycle = makeLifecycle(identity)
        _ = lifecycle.codeReceived(Secret("code-1"), login: login(for: identity))
        _ = lifecycle.nextAction(at: 0)
        lifecycle.fetchFailed(invalidGrant, at: 0)
        XCTAssertEqual(lifecycle.failure(at: 0)?.reason, .needsLogin, "a person must log in again")
        XCTAssertEqual(lifecycle.consecutiveFailures, 0)
        XCTAssertNotNil(lifecycle.status(at: 0).lastLoginFailure)
        guard case .idle = lifecycle.nextAction(at: 0) else { return XCTFail("a used code is never sent again") }
    }

    func testARefusedRefreshTokenSendsThePersonBackToTheLogin() throws {
        let identity = browserIdentity()
        var lifecycle = makeLifecycle(identity)
        _ = lifecycle.codeReceived(Secret("code-1"), login: login(for: identity))
        _ = lifecycle.nextAction(at: 0)
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 60, refreshToken: "rt-1"), at: 0)
        guard case .sleep(let refreshAt) = lifecycle.nextAction(at: 0) else { return XCTFail("a refresh is scheduled") }
        guard case .fetch(let refresh) = lifecycle.nextAction(at: refreshAt) else { return XCTFail("the refresh is due") }
        XCTAssertEqual(refresh.purpose, .refresh)
        lifecycle.fetchFailed(invalidGrant, at: refreshAt)
        _ = lifecycle.refused(token: "at-1", at: refreshAt, minimumAge: 0)
        XCTAssertEqual(lifecycle.failure(at: refreshAt)?.reason, .needsLogin)
        XCTAssertEqual(lifecycle.status(at: refreshAt).state, .needsLogin)
        XCTAssertNotNil(lifecycle.status(at: refreshAt).lastLoginFailure)
    }

    func testALoginKeptInTheStoreIsTakenAtStart() {
        var lifecycle = makeLifecycle(browserIdentity())
        let stored = AccessToken(value: "at-stored", type: "Bearer", issuedAt: 0, expiresAt: 600, refreshAt: 500, scope: nil, serial: 0)
        XCTAssertTrue(lifecycle.storedLoginRead(stored, refreshToken: Secret("rt-stored"), subject: "alice", at: 10))
        XCTAssertEqual(lifecycle.injected(at: 10), "at-stored")
        XCTAssertEqual(lifecycle.status(at: 10).loggedInAs, "alice")
        XCTAssertTrue(lifecycle.status(at: 10).hasRefreshToken)
    }

    // MARK: A device login

    func testTheFirstRequestStartsOneDeviceLoginAndLaterOnesGetItsCode() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 0))
        XCTAssertFalse(lifecycle.requestDeviceLogin(at: 0), "one device login at a time")
        XCTAssertEqual(lifecycle.decision(at: 0), .wait, "the first requests wait for the code")
        guard case .authorizeDevice(let request) = lifecycle.nextAction(at: 0) else { return XCTFail("the device authorization first") }
        XCTAssertEqual(request.url, device)
        guard case .idle = lifecycle.nextAction(at: 0) else { return XCTFail("one device authorization") }
        lifecycle.deviceAuthorized(DeviceAuthorization(deviceCode: Secret("dc-1"), userCode: "WDJB-MJHT",
                                                       verificationUri: "https://idp.example.com/device", expiresIn: 600), at: 0)
        let problem = try XCTUnwrap(lifecycle.failure(at: 1))
        XCTAssertEqual(problem.reason, .needsLogin)
        XCTAssertEqual(problem.deviceLogin?.userCode, "WDJB-MJHT")
        XCTAssertEqual(problem.deviceLogin?.expiresIn, 599)
        XCTAssertEqual(lifecycle.status(at: 1).state, .loginPending)
        XCTAssertFalse(problem.detail.contains("dc-1"), "the device code is the relay's secret")
    }

    func testPollsFollowTheIntervalAndSlowDownAndThePersonsApprovalGivesTheToken() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        _ = lifecycle.requestDeviceLogin(at: 0)
        _ = lifecycle.nextAction(at: 0)
        lifecycle.deviceAuthorized(DeviceAuthorization(deviceCode: Secret("dc-1"), userCode: "ABCD", verificationUri: "https://idp/d",
                                                       expiresIn: 600, interval: 5), at: 0)
        guard case .sleep(let first) = lifecycle.nextAction(at: 0) else { return XCTFail("the first poll waits an interval") }
        XCTAssertEqual(first, 5)
        guard case .fetch(let poll) = lifecycle.nextAction(at: 5) else { return XCTFail("poll at the interval") }
        XCTAssertEqual(poll.purpose, .grant(.deviceCode))
        XCTAssertTrue(poll.bodyText.contains("device_code=dc-1"))
        lifecycle.fetchFailed(pendingError(.authorizationPending), at: 5)
        XCTAssertEqual(lifecycle.consecutiveFailures, 0, "authorization_pending is no failure")
        guard case .sleep(let second) = lifecycle.nextAction(at: 5) else { return XCTFail("poll again") }
        XCTAssertEqual(second, 10)
        _ = lifecycle.nextAction(at: 10)
        lifecycle.fetchFailed(pendingError(.slowDown), at: 10)
        guard case .sleep(let third) = lifecycle.nextAction(at: 10) else { return XCTFail("poll again") }
        XCTAssertEqual(third, 20, "slow_down adds 5 s")
        _ = lifecycle.nextAction(at: 20)
        lifecycle.fetchSucceeded(tokenResponse("at-dev", expiresIn: 300, refreshToken: "rt-dev"), at: 21)
        XCTAssertEqual(lifecycle.injected(at: 21), "at-dev")
        XCTAssertEqual(lifecycle.status(at: 21).state, .valid)
        XCTAssertNil(lifecycle.status(at: 21).deviceLogin)
    }

    /// Starts a device login at `start` and lets its first poll (5 s later) fail with `error`.
    private func deviceLogin(_ lifecycle: inout TokenLifecycle, at start: Double, endingWith error: OAuthErrorCode) {
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: start), "a login starts at \(start)")
        _ = lifecycle.nextAction(at: start)
        lifecycle.deviceAuthorized(DeviceAuthorization(deviceCode: Secret("dc-1"), userCode: "ABCD", verificationUri: "https://idp/d",
                                                       expiresIn: 600, interval: 5), at: start)
        _ = lifecycle.nextAction(at: start + 5)
        lifecycle.fetchFailed(pendingError(error), at: start + 5)
    }

    func testADeniedDeviceLoginEndsAndRequestsWaitBeforeStartingAnother() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        deviceLogin(&lifecycle, at: 0, endingWith: .accessDenied)
        let status = lifecycle.status(at: 5)
        XCTAssertEqual(status.state, .needsLogin)
        XCTAssertNotNil(status.lastLoginFailure)
        XCTAssertFalse(lifecycle.requestDeviceLogin(at: 6), "not at once: nobody entered the last code")
        let problem = try XCTUnwrap(lifecycle.failure(at: 6))
        XCTAssertEqual(problem.reason, .needsLogin)
        XCTAssertEqual(problem.retryAfterSeconds, 29)
        XCTAssertTrue(problem.detail.contains("starts the next one in 29 s"), problem.detail)
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 35), "after 30 s")
    }

    func testTheWaitDoublesForLoginsEndedInARowUpToTenMinutes() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        var start = 0.0
        for expected in [30.0, 60, 120, 240, 480, 600, 600] {
            deviceLogin(&lifecycle, at: start, endingWith: .expiredToken)
            let ended = start + 5
            XCTAssertFalse(lifecycle.requestDeviceLogin(at: ended + expected - 1), "still waiting \(expected) s after the end")
            start = ended + expected
        }
        XCTAssertEqual(lifecycle.failure(at: start - 1)?.retryAfterSeconds, 1)
    }

    func testAnOperatorNeedNotWait() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        deviceLogin(&lifecycle, at: 0, endingWith: .expiredToken)
        XCTAssertFalse(lifecycle.requestDeviceLogin(at: 6))
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 6, byOperator: true), "oauth-relay login does not wait")
    }

    func testALoginThatBringsATokenStartsTheCountAgain() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        deviceLogin(&lifecycle, at: 0, endingWith: .expiredToken)
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 35))
        _ = lifecycle.nextAction(at: 35)
        lifecycle.deviceAuthorized(DeviceAuthorization(deviceCode: Secret("dc-2"), userCode: "EFGH", verificationUri: "https://idp/d",
                                                       expiresIn: 600, interval: 5), at: 35)
        _ = lifecycle.nextAction(at: 40)
        lifecycle.fetchSucceeded(tokenResponse("at-dev", expiresIn: 10), at: 40)
        XCTAssertEqual(lifecycle.injected(at: 40), "at-dev")
        // The token expired (no refresh token); the next login ends unused: the first of a new
        // row, so 30 s, not 60.
        deviceLogin(&lifecycle, at: 51, endingWith: .expiredToken)
        XCTAssertEqual(lifecycle.failure(at: 56)?.retryAfterSeconds, 30)
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 86))
    }

    func testTheBackoffDelays() {
        XCTAssertEqual((0...8).map(DeviceLoginBackoff.delay(afterEndedLogins:)), [0, 30, 60, 120, 240, 480, 600, 600, 600])
        XCTAssertEqual(DeviceLoginBackoff.delay(afterEndedLogins: 10_000), 600)
        var backoff = DeviceLoginBackoff()
        XCTAssertTrue(backoff.allowsStart(at: 0))
        XCTAssertNil(backoff.retryAfterSeconds(at: 0))
        backoff.loginEndedWithoutToken(at: 100)
        XCTAssertFalse(backoff.allowsStart(at: 129.5))
        XCTAssertEqual(backoff.retryAfterSeconds(at: 129.5), 1)
        XCTAssertTrue(backoff.allowsStart(at: 130))
        backoff.reset()
        XCTAssertEqual(backoff, DeviceLoginBackoff())
    }

    func testAFailedDeviceAuthorizationBacksOffBeforeTheNextLogin() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        _ = lifecycle.requestDeviceLogin(at: 0)
        _ = lifecycle.nextAction(at: 0)
        lifecycle.deviceAuthorizationFailed(refusedByIdP, at: 0)
        XCTAssertFalse(lifecycle.requestDeviceLogin(at: 0), "not at once: the IdP just refused")
        XCTAssertNotNil(lifecycle.status(at: 0).lastLoginFailure)
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 3600))
    }

    func testAStartedDeviceLoginClearsTheLastFailure() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        _ = lifecycle.requestDeviceLogin(at: 0)
        _ = lifecycle.nextAction(at: 0)
        lifecycle.deviceAuthorizationFailed(refusedByIdP, at: 0)
        XCTAssertNotNil(lifecycle.lastLoginFailure)
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 3600))
        XCTAssertNil(lifecycle.lastLoginFailure, "a failure from now on is this login's, even with the same text")
    }

    // MARK: Switching the person (`oauth-relay login --force`)

    /// Starts a device login at `start` (the person has the code at once) and sends its first poll,
    /// 5 s later; returns whether it started.
    private func startPolling(_ lifecycle: inout TokenLifecycle, at start: Double, replacingLogin: Bool = false) -> Bool {
        guard lifecycle.requestDeviceLogin(at: start, byOperator: replacingLogin, replacingLogin: replacingLogin) else { return false }
        guard case .authorizeDevice = lifecycle.nextAction(at: start) else { XCTFail("the device authorization first"); return false }
        lifecycle.deviceAuthorized(DeviceAuthorization(deviceCode: Secret("dc-\(start)"), userCode: "ABCD", verificationUri: "https://idp/d",
                                                       expiresIn: 600, interval: 5), at: start)
        guard case .fetch(let poll) = lifecycle.nextAction(at: start + 5) else { XCTFail("the poll, not a refresh"); return false }
        XCTAssertEqual(poll.purpose, .grant(.deviceCode))
        return true
    }

    func testAnOperatorSwitchingThePersonStartsALoginWhileTheHeldTokenStaysInUse() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        XCTAssertTrue(startPolling(&lifecycle, at: 0))
        lifecycle.fetchSucceeded(tokenResponse("at-a", expiresIn: 3600, refreshToken: "rt-a"), at: 5)
        XCTAssertFalse(lifecycle.requestDeviceLogin(at: 100), "a request: the person is logged in")
        XCTAssertFalse(lifecycle.requestDeviceLogin(at: 100, byOperator: true), "oauth-relay login without --force")

        // A forced login the person refuses: the previous person's tokens stay, and are used throughout.
        XCTAssertTrue(startPolling(&lifecycle, at: 100, replacingLogin: true))
        XCTAssertEqual(lifecycle.injected(at: 105), "at-a")
        lifecycle.fetchFailed(pendingError(.accessDenied), at: 105)
        XCTAssertEqual(lifecycle.injected(at: 106), "at-a")
        XCTAssertEqual(lifecycle.status(at: 106).state, .valid)
        XCTAssertTrue(lifecycle.status(at: 106).hasRefreshToken)
        XCTAssertNotNil(lifecycle.lastLoginFailure)

        // Another forced login, approved by someone else: their token replaces it, and the previous
        // person's refresh token goes too, although the response brings none.
        XCTAssertTrue(startPolling(&lifecycle, at: 200, replacingLogin: true), "an operator does not wait for the backoff")
        XCTAssertEqual(lifecycle.injected(at: 205), "at-a")
        lifecycle.fetchSucceeded(tokenResponse("at-b", expiresIn: 3600), at: 205)
        XCTAssertEqual(lifecycle.injected(at: 206), "at-b")
        XCTAssertFalse(lifecycle.status(at: 206).hasRefreshToken, "the previous person's refresh token would refresh as them")
    }

    func testARefreshWithoutARefreshTokenKeepsTheOneHeld() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        XCTAssertTrue(startPolling(&lifecycle, at: 0))
        lifecycle.fetchSucceeded(tokenResponse("at-a", expiresIn: 100, refreshToken: "rt-a"), at: 5)
        let refresh = try lifecycle.startFetch(at: 200)
        XCTAssertEqual(refresh.purpose, .refresh)
        lifecycle.fetchSucceeded(tokenResponse("at-a2", expiresIn: 100), at: 200)
        XCTAssertTrue(lifecycle.status(at: 201).hasRefreshToken, "only a login's response replaces the person's refresh token")
    }

    func testTheHeldTokensAreRefreshedWhileALoginReplacingThePersonGoesOn() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        XCTAssertTrue(startPolling(&lifecycle, at: 0))
        lifecycle.fetchSucceeded(tokenResponse("at-a", expiresIn: 100, refreshToken: "rt-a"), at: 5)
        let refreshAt = try XCTUnwrap(lifecycle.token?.refreshAt)
        XCTAssertTrue(startPolling(&lifecycle, at: 10, replacingLogin: true))
        lifecycle.fetchFailed(pendingError(.authorizationPending), at: 15)
        // The poll due at the same time goes first, then the refresh: one fetch at a time.
        guard case .fetch(let poll) = lifecycle.nextAction(at: refreshAt) else { return XCTFail("the poll is due") }
        XCTAssertEqual(poll.purpose, .grant(.deviceCode))
        lifecycle.fetchFailed(pendingError(.authorizationPending), at: refreshAt)
        guard case .fetch(let refresh) = lifecycle.nextAction(at: refreshAt) else { return XCTFail("the refresh is due, not a sleep") }
        XCTAssertEqual(refresh.purpose, .refresh)
        lifecycle.fetchSucceeded(tokenResponse("at-a2", expiresIn: 100, refreshToken: "rt-a2"), at: refreshAt)
        XCTAssertEqual(lifecycle.injected(at: refreshAt + 1), "at-a2")
        XCTAssertNotNil(lifecycle.status(at: refreshAt + 1).deviceLogin, "the refresh does not end the login under way")
        guard case .fetch(let next) = lifecycle.nextAction(at: refreshAt + 5) else { return XCTFail("the polls go on") }
        XCTAssertEqual(next.purpose, .grant(.deviceCode))
        lifecycle.fetchSucceeded(tokenResponse("at-b", expiresIn: 100), at: refreshAt + 5)
        XCTAssertEqual(lifecycle.injected(at: refreshAt + 6), "at-b")
        XCTAssertNil(lifecycle.heldRefreshToken)
    }

    func testAnOperatorReplacingThePersonNeedNotWaitForTheFetchBackoffButForALoginUnderWay() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        XCTAssertTrue(startPolling(&lifecycle, at: 0))
        lifecycle.fetchSucceeded(tokenResponse("at-a", expiresIn: 100, refreshToken: "rt-a"), at: 5)
        let refreshAt = try XCTUnwrap(lifecycle.token?.refreshAt)
        guard case .fetch = lifecycle.nextAction(at: refreshAt) else { return XCTFail("the refresh is due") }
        lifecycle.fetchFailed(.unreachable(reason: "connection refused"), at: refreshAt)
        XCTAssertEqual(lifecycle.consecutiveFailures, 1, "the fetches back off")
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: refreshAt, byOperator: true, replacingLogin: true))
        XCTAssertFalse(lifecycle.requestDeviceLogin(at: refreshAt, byOperator: true, replacingLogin: true), "one is under way")
    }
}
