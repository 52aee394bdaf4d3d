import Endpoints
@testable import OAuth2
import SafeText
import XCTest

/// The lifecycle's sub-states and their transitions: what is under way at the IdP
/// (`TokenActivity`), what a fetch in flight carries (`FetchInFlight`), a device login
/// (`DeviceLogin`), an upstream's refusal (`RefusalMemory`), the tokens held
/// (`HeldCredentials`) and the failures in a row (`FetchFailures`).
final class TokenLifecycleStateTests: XCTestCase {
    private let tokenURL = HTTPURL(scheme: .https, host: "idp.example.com", path: "/token")
    private let deviceURL = HTTPURL(scheme: .https, host: "idp.example.com", path: "/device")

    private func deviceIdentity() -> Identity {
        makeIdentity(.deviceCode(seed: nil), clientId: "tv-app", secret: nil) { $0.deviceAuthorizationUrl = self.deviceURL }
    }

    private func browserIdentity(seed: String? = nil) -> Identity {
        makeIdentity(.authorizationCode(seed: seed.map(Secret.init)), clientId: "cli-app", secret: nil) {
            $0.authorizationUrl = HTTPURL(scheme: .https, host: "idp.example.com", path: "/authorize")
            $0.redirectUri = HTTPURL(scheme: .http, host: "127.0.0.1", port: 8180, path: "/.oauth-relay/callback")
            $0.scope = "openid"
        }
    }

    private func login(for identity: Identity) -> LoginStart {
        var random = SeededRandom()
        return freshLogin(identity, redirectUri: identity.redirectUri!.description, at: 0, random: &random)
    }

    private func authorization(expiresIn: Double = 600) -> DeviceAuthorization {
        DeviceAuthorization(deviceCode: Secret("dc-1"), userCode: "ABCD", verificationUri: "https://idp.example.com/device",
                            expiresIn: expiresIn)
    }

    private func fetch(_ kind: FetchInFlight.Kind) -> FetchInFlight {
        FetchInFlight(startedAt: 1, kind: kind)
    }

    private func name(_ activity: TokenActivity) -> String {
        switch activity {
        case .idle: "idle"
        case .discovering: "discovering"
        case .resolving: "resolving"
        case .fetching: "fetching"
        case .abandoned: "abandoned"
        }
    }

    private func name(_ login: DeviceLogin?) -> String {
        switch login {
        case nil: "none"
        case .requested?: "requested"
        case .authorizing?: "authorizing"
        case .polling?: "polling"
        }
    }

    // MARK: TokenActivity

    func testALogoutAbandonsOnlyAFetchAndLeavesDiscoveryAlone() {
        var activity = TokenActivity.fetching(fetch(.rebuildable(.refresh, requested: false)))
        activity.abandonFetch()
        XCTAssertEqual(name(activity), "abandoned")
        XCTAssertTrue(activity.isFetchAbandoned)
        XCTAssertFalse(activity.isFetchTaken)
        XCTAssertEqual(activity.fetch?.purpose, .refresh, "an abandoned fetch is still under way for the token thread")

        var discovering = TokenActivity.discovering
        discovering.abandonFetch()
        XCTAssertEqual(name(discovering), "discovering")
    }

    func testAFetchEndsIdleAndSaysWhetherItWasAbandoned() throws {
        var taken = TokenActivity.fetching(fetch(.rebuildable(.grant(.clientCredentials), requested: false)))
        XCTAssertEqual(try XCTUnwrap(taken.endFetch()).abandoned, false)
        XCTAssertEqual(name(taken), "idle")

        var abandoned = TokenActivity.abandoned(fetch(.rebuildable(.refresh, requested: false)))
        XCTAssertEqual(try XCTUnwrap(abandoned.endFetch()).abandoned, true)
        XCTAssertEqual(name(abandoned), "idle")
    }

    func testNoFetchEndsWhereNoneIsUnderWay() {
        var discovering = TokenActivity.discovering
        XCTAssertNil(discovering.endFetch(), "a token arriving during discovery ends no fetch")
        XCTAssertEqual(name(discovering), "discovering", "and discovery goes on")
        var idle = TokenActivity.idle
        XCTAssertNil(idle.endFetch())
        XCTAssertEqual(name(idle), "idle")
    }

    func testOnlyDiscoveryEndsWhenDiscoveryAnswers() {
        var fetching = TokenActivity.fetching(fetch(.rebuildable(.refresh, requested: false)))
        fetching.endDiscovery()
        XCTAssertEqual(name(fetching), "fetching")
        var discovering = TokenActivity.discovering
        discovering.endDiscovery()
        XCTAssertEqual(name(discovering), "idle")
    }

    func testDiscoveryIsTheOnlyActivityBeforeTheEndpointsAreKnown() throws {
        var lifecycle = makeLifecycle(makeIdentity { $0.tokenUrl = nil; $0.issuer = "https://idp.example.com" })
        guard case .discover = lifecycle.nextAction(at: 0) else { return XCTFail("discovery comes first") }
        XCTAssertEqual(name(lifecycle.activity), "discovering")
        XCTAssertNil(lifecycle.endpoints)
        XCTAssertNil(lifecycle.startFetchIfDue(at: 0), "no fetch without the endpoints")
        lifecycle.discovered(IdentityEndpoints(token: tokenURL))
        XCTAssertEqual(name(lifecycle.activity), "idle")
        try lifecycle.startFetch(at: 0)
        XCTAssertEqual(name(lifecycle.activity), "fetching")
    }

    // MARK: FetchInFlight

    func testAnOrdinaryFetchIsRebuildableAndKnowsWhetherAnOperatorAskedForIt() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 60))
        lifecycle.refreshNow()
        try lifecycle.startFetch(at: 1)
        guard case .rebuildable(.grant(.clientCredentials), requested: true)? = lifecycle.activity.fetch?.kind else {
            return XCTFail("the operator's fetch: \(String(describing: lifecycle.activity.fetch?.kind))")
        }
        XCTAssertNil(lifecycle.activity.fetch?.fixedRequest, "built again once a store entry is read")
        XCTAssertNil(lifecycle.expectedNonce, "only a code exchange has a nonce")
    }

    func testACodeExchangeTakesTheWaitingCodeAndItsNonce() throws {
        let identity = browserIdentity()
        let start = login(for: identity)
        var lifecycle = makeLifecycle(identity)
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-1"), login: start))
        XCTAssertNotNil(lifecycle.login.waitingCode)
        let request = try lifecycle.startFetch(at: 1)
        XCTAssertNil(lifecycle.login.waitingCode, "the code moved into the fetch")
        guard case .codeExchange(_, subject: nil)? = lifecycle.activity.fetch?.kind else { return XCTFail("a code exchange") }
        XCTAssertEqual(lifecycle.activity.fetch?.fixedRequest?.body, request.body, "the exchange keeps the request it was sent with")
        XCTAssertEqual(lifecycle.expectedNonce?.value, start.nonce?.value)
        lifecycle.loggedIn(as: "alice")
        XCTAssertEqual(lifecycle.activity.fetch?.subject, "alice")
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 60, refreshToken: "rt-1"), at: 1)
        XCTAssertEqual(lifecycle.loggedInAs, "alice")
        XCTAssertEqual(name(lifecycle.activity), "idle")
    }

    func testOnlyACodeExchangeRecordsWhoLoggedIn() {
        var refresh = fetch(.rebuildable(.refresh, requested: false))
        refresh.loggedIn(as: LoginSubject(subject: "mallory"))
        XCTAssertNil(refresh.subject)
        var poll = fetch(.devicePoll(TokenRequest.deviceCodePoll(for: deviceIdentity(), deviceCode: Secret("dc-1"), at: tokenURL)))
        poll.loggedIn(as: LoginSubject(subject: "mallory"))
        XCTAssertNil(poll.subject)
        XCTAssertTrue(poll.requested, "a person waits on a poll: a stored token does not cancel it")
    }

    func testACodeArrivingWhileARefreshAwaitsTheStoreBecomesThatFetch() throws {
        let identity = browserIdentity(seed: "rt-0")
        var lifecycle = makeLifecycle(identity)
        XCTAssertEqual(try lifecycle.startFetch(at: 0).purpose, .refresh)
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-1"), login: login(for: identity)))
        guard case .fetch(let request) = lifecycle.storedEntryRead(nil, refreshToken: nil, at: 0) else {
            return XCTFail("the fetch is still needed")
        }
        XCTAssertEqual(request.purpose, .grant(.authorizationCode), "the person's code goes first")
        guard case .codeExchange? = lifecycle.activity.fetch?.kind else { return XCTFail("the fetch is now the code exchange") }
        XCTAssertNil(lifecycle.login.waitingCode)
    }

    // MARK: DeviceLogin

    func testADeviceLoginIsRequestedThenAuthorizingThenPollingThenNone() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        XCTAssertEqual(name(lifecycle.login.device), "none")
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 0))
        XCTAssertEqual(name(lifecycle.login.device), "requested")
        guard case .authorizeDevice = lifecycle.nextAction(at: 0) else { return XCTFail("the device authorization") }
        XCTAssertEqual(name(lifecycle.login.device), "authorizing")
        XCTAssertEqual(name(lifecycle.activity), "idle", "the authorization is the device login's, not a fetch")
        lifecycle.deviceAuthorized(authorization(), at: 0)
        XCTAssertEqual(name(lifecycle.login.device), "polling")
        guard case .fetch = lifecycle.nextAction(at: 5) else { return XCTFail("the first poll") }
        guard case .devicePoll? = lifecycle.activity.fetch?.kind else { return XCTFail("the poll is a fetch") }
        lifecycle.fetchSucceeded(tokenResponse("at-1", expiresIn: 60), at: 5)
        XCTAssertEqual(name(lifecycle.login.device), "none", "approved: the login is over")
        XCTAssertNil(lifecycle.lastLoginFailure)
    }

    func testADeviceLoginsAuthorizationWaitsForTheFetchUnderWay() {
        var login = DeviceLogin.requested
        let endpoints = IdentityEndpoints(token: tokenURL, deviceAuthorization: deviceURL)
        XCTAssertNil(login.nextStep(identity: deviceIdentity(), endpoints: endpoints, fetchUnderWay: true, at: 0))
        XCTAssertEqual(name(login), "requested")
        guard case .authorize? = login.nextStep(identity: deviceIdentity(), endpoints: endpoints, fetchUnderWay: false, at: 0) else {
            return XCTFail("the authorization once no fetch is under way")
        }
        XCTAssertEqual(name(login), "authorizing")
        XCTAssertNil(login.nextStep(identity: deviceIdentity(), endpoints: endpoints, fetchUnderWay: false, at: 0),
                     "one authorization at a time")
    }

    func testADeviceLoginWithoutAnAuthorizationEndpointEnds() {
        var login = DeviceLogin.requested
        guard case .ended(let failure)? = login.nextStep(identity: deviceIdentity(), endpoints: IdentityEndpoints(token: tokenURL),
                                                         fetchUnderWay: false, at: 0) else { return XCTFail("it ends") }
        XCTAssertEqual(failure, "the IdP has no device authorization endpoint")
    }

    func testAnEndedDeviceFlowIsNeverHeld() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 0))
        _ = lifecycle.nextAction(at: 0)
        lifecycle.deviceAuthorized(authorization(expiresIn: 10), at: 0)
        _ = lifecycle.nextAction(at: 11)
        XCTAssertEqual(name(lifecycle.login.device), "none", "the code expired: the login is dropped, not kept over")
        XCTAssertNotNil(lifecycle.lastLoginFailure)
    }

    func testALogoutEndsTheDeviceLoginAndDropsTheWaitingCode() throws {
        var lifecycle = makeLifecycle(deviceIdentity())
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 0))
        _ = lifecycle.nextAction(at: 0)
        lifecycle.deviceAuthorized(authorization(), at: 0)
        lifecycle.forget()
        XCTAssertEqual(name(lifecycle.login.device), "none")
        XCTAssertNil(lifecycle.login.waitingCode)
    }

    // MARK: RefusalMemory

    func testARefusalIsRememberedUntilTheReplacementArrives() {
        var memory = RefusalMemory.none
        memory.tokenRefused("at-1")
        XCTAssertEqual(memory, .refused(token: "at-1", nextTokenFollows: true))
        XCTAssertEqual(memory.refusedToken, "at-1")
        memory.tokenFetched()
        XCTAssertEqual(memory, .replacementHeld)
        XCTAssertTrue(memory.holdsReplacement)
        XCTAssertNil(memory.refusedToken)
        memory.tokenFetched()
        XCTAssertEqual(memory, .none, "the replacement's successor follows no refusal")
    }

    func testALogoutKeepsTheRefusedTokenButNotTheReplacement() {
        var refused = RefusalMemory.refused(token: "at-1", nextTokenFollows: true)
        refused.forgotten()
        XCTAssertEqual(refused, .refused(token: "at-1", nextTokenFollows: false), "a store still holding it is not taken back")
        refused.tokenFetched()
        XCTAssertEqual(refused, .none, "the next token does not follow the refusal")

        var replacement = RefusalMemory.replacementHeld
        replacement.forgotten()
        XCTAssertEqual(replacement, .none)
    }

    // MARK: HeldCredentials and FetchFailures

    func testEveryTokenTakenGetsTheNextSerial() {
        var held = HeldCredentials()
        held.take(tokenResponse("at-1", expiresIn: 60, refreshToken: "rt-1"), issuedAt: 0, expiresAt: 60, identity: makeIdentity())
        held.adopt(AccessToken(value: "at-2", issuedAt: 1, expiresAt: 90, refreshAt: 80))
        XCTAssertEqual(held.token?.serial, 2)
        XCTAssertEqual(held.tokenCount, 2)
        XCTAssertFalse(held.takeNewer(AccessToken(value: "at-2", issuedAt: 1, expiresAt: 90, refreshAt: 80), refreshToken: nil, at: 2),
                       "the token held already")
        held.forget()
        XCTAssertNil(held.token)
        XCTAssertNil(held.refreshToken)
    }

    func testAStreakOfFailuresEndsButTheLastFailureStays() {
        var failures = FetchFailures(policy: BackoffPolicy(initialSeconds: 2, jitter: 0), random: FixedRandom(fraction: 0))
        failures.record(idpDown, at: 10)
        failures.record(idpDown, at: 12)
        XCTAssertEqual(failures.consecutive, 2)
        XCTAssertEqual(failures.retryAt, 16)
        XCTAssertEqual(failures.problem(identity: "orders", discoveryFailing: false, at: 12)?.retryAfterSeconds, 4)
        failures.streakEnded()
        XCTAssertEqual(failures.consecutive, 0)
        XCTAssertNil(failures.retryAt)
        XCTAssertNotNil(failures.last, "kept for the /identities view")
        XCTAssertNil(failures.problem(identity: "orders", discoveryFailing: false, at: 13))
    }
}
