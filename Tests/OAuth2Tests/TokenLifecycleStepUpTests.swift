import Endpoints
@testable import OAuth2
import SafeText
import XCTest

/// Step-up logins in the token lifecycle (TokenLifecycle+StepUp, StepUpMemory): an upstream's
/// challenge for more scope or a stronger login makes the identity's next login ask for it, and
/// until one does requests get the login problem; declined ones are not asked again.
final class TokenLifecycleStepUpTests: XCTestCase {
    private let authorize = HTTPURL(scheme: .https, host: "idp.example.com", path: "/authorize")
    private let device = HTTPURL(scheme: .https, host: "idp.example.com", path: "/device")
    private let writeScope = StepUp(scope: ["orders.write"])

    private func browserIdentity() -> Identity {
        makeIdentity(.authorizationCode(seed: nil), clientId: "cli-app", secret: nil) {
            $0.scope = "openid orders.read"
            $0.authorizationUrl = authorize
            $0.redirectUri = HTTPURL(scheme: .http, host: "127.0.0.1", port: 8180, path: "/.oauth-relay/callback")
            $0.loginTimeoutSeconds = 600
        }
    }

    /// A lifecycle whose login gave token `at-1` (scope as the IdP answered) at time 1.
    private func loggedIn(_ identity: Identity, scope: String? = nil) -> TokenLifecycle {
        var lifecycle = makeLifecycle(identity)
        var random = SeededRandom()
        _ = lifecycle.codeReceived(Secret("code-1"), login: freshLogin(identity, at: 0, random: &random))
        _ = lifecycle.nextAction(at: 0)
        lifecycle.fetchSucceeded(TokenResponse(accessToken: Secret("at-1"), expiresIn: 300, refreshToken: Secret("rt-1"), scope: scope), at: 1)
        return lifecycle
    }

    /// The authorization request of the lifecycle's next browser login at `now`.
    private func nextAuthorization(_ lifecycle: inout TokenLifecycle, at now: Double) -> (pairs: [(name: String, value: String)], login: LoginStart) {
        let asked = lifecycle.browserLoginStarts(at: now)
        var random = SeededRandom(seed: 7)
        var logins = PendingLogins()
        let login = try! logins.start(identity: asked.identity, redirectUri: callbackURI, returnTo: nil, stepUp: asked.stepUp,
                                      at: now, random: &random)
        return (queryPairs(AuthorizationRequest(endpoint: authorize, identity: asked.identity, login: login).url), login)
    }

    func testAPendingStepUpAnswersTheLoginProblemNamingTheScopeAndKeepsTheToken() throws {
        var lifecycle = loggedIn(browserIdentity())
        guard case .loginNeeded(let problem) = lifecycle.stepUp(writeScope, token: "at-1", at: 2) else { return XCTFail("a login is needed") }
        XCTAssertEqual(problem.reason, .needsLogin)
        XCTAssertEqual(problem.status, 401)
        XCTAssertTrue(problem.detail.contains("the upstream asked for scope orders.write: log in again to grant it"), problem.detail)
        XCTAssertEqual(lifecycle.decision(at: 3), .fail(problem))
        XCTAssertEqual(lifecycle.token?.value, "at-1", "the token held stays")
        let status = lifecycle.status(at: 3)
        XCTAssertEqual(status.pendingStepUp, writeScope)
        XCTAssertEqual(status.state, .needsLogin)
        XCTAssertTrue(status.hasValidToken)
    }

    func testTheNextLoginAsksForTheIdentitysScopeJoinedWithTheStepUps() {
        var lifecycle = loggedIn(browserIdentity())
        _ = lifecycle.stepUp(StepUp(scope: ["orders.read", "orders.write"]), at: 2)
        let pairs = nextAuthorization(&lifecycle, at: 3).pairs
        XCTAssertEqual(pairs.filter { $0.name == "scope" }.map(\.value), ["openid orders.read orders.write"])
        XCTAssertFalse(pairs.contains { $0.name == "acr_values" || $0.name == "max_age" })
    }

    func testAnAuthenticationStepUpPutsAcrValuesAndMaxAgeInTheAuthorizationRequestOverAuthorizationParams() {
        var identity = browserIdentity()
        identity.authorizationParams = ["acr_values": "urn:low", "max_age": "9999", "prompt": "consent"]
        var lifecycle = loggedIn(identity)
        let stronger = StepUp(acrValues: ["urn:mfa", "urn:hw"], maxAge: 60)
        guard case .loginNeeded = lifecycle.stepUp(stronger, at: 2) else { return XCTFail("a login is needed") }
        let pairs = nextAuthorization(&lifecycle, at: 3).pairs
        XCTAssertEqual(pairs.filter { $0.name == "acr_values" }.map(\.value), ["urn:mfa urn:hw"])
        XCTAssertEqual(pairs.filter { $0.name == "max_age" }.map(\.value), ["60"])
        XCTAssertEqual(pairs.filter { $0.name == "prompt" }.map(\.value), ["consent"], "the identity's other parameters stay")
        XCTAssertEqual(pairs.filter { $0.name == "scope" }.map(\.value), ["openid orders.read"])
    }

    func testTheDeviceAuthorizationOfAStepUpAsksForTheJoinedScopeAndTheAuthentication() throws {
        var lifecycle = makeLifecycle(makeIdentity(.deviceCode(seed: nil), clientId: "tv-app", secret: nil) {
            $0.scope = "orders.read"
            $0.deviceAuthorizationUrl = device
        })
        _ = lifecycle.requestDeviceLogin(at: 0)
        _ = lifecycle.nextAction(at: 0)
        lifecycle.deviceAuthorized(DeviceAuthorization(deviceCode: Secret("dc-1"), userCode: "ABCD", verificationUri: "https://idp/d",
                                                       expiresIn: 600, interval: 5), at: 0)
        _ = lifecycle.nextAction(at: 0)
        _ = lifecycle.nextAction(at: 5)
        lifecycle.fetchSucceeded(TokenResponse(accessToken: Secret("at-1"), expiresIn: 300, refreshToken: Secret("rt-1")), at: 6)
        guard case .loginNeeded = lifecycle.stepUp(StepUp(scope: ["orders.write"], maxAge: 30), at: 7) else { return XCTFail("login") }
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 7), "a step-up starts a device login although a token is held")
        guard case .authorizeDevice(let request) = lifecycle.nextAction(at: 7) else { return XCTFail("the device authorization") }
        XCTAssertTrue(request.bodyText.contains("scope=orders.read+orders.write"), request.bodyText)
        XCTAssertTrue(request.bodyText.contains("max_age=30"), request.bodyText)
        lifecycle.deviceAuthorized(DeviceAuthorization(deviceCode: Secret("dc-2"), userCode: "EFGH", verificationUri: "https://idp/d",
                                                       expiresIn: 600, interval: 5), at: 7)
        XCTAssertEqual(lifecycle.failure(at: 8)?.deviceLogin?.userCode, "EFGH", "requests get the code to enter")
        _ = lifecycle.nextAction(at: 7)
        guard case .fetch(let poll) = lifecycle.nextAction(at: 12) else { return XCTFail("the poll, not a refresh") }
        XCTAssertEqual(poll.purpose, .grant(.deviceCode))
        lifecycle.fetchSucceeded(TokenResponse(accessToken: Secret("at-2"), expiresIn: 300, refreshToken: Secret("rt-2")), at: 13)
        XCTAssertEqual(lifecycle.injected(at: 14), "at-2")
        XCTAssertEqual(lifecycle.identity.scope, "orders.read orders.write")
        XCTAssertNil(lifecycle.pendingStepUp(at: 14))
    }

    func testADeviceLoginAnswersTheStepUpItsAuthorizationAskedForNotOneAddedLater() {
        var lifecycle = makeLifecycle(makeIdentity(.deviceCode(seed: nil), clientId: "tv-app", secret: nil) {
            $0.scope = "orders.read"
            $0.deviceAuthorizationUrl = device
        })
        _ = lifecycle.requestDeviceLogin(at: 0)
        _ = lifecycle.nextAction(at: 0)
        lifecycle.deviceAuthorized(DeviceAuthorization(deviceCode: Secret("dc-1"), userCode: "ABCD", verificationUri: "https://idp/d",
                                                       expiresIn: 600, interval: 5), at: 0)
        _ = lifecycle.nextAction(at: 0)
        _ = lifecycle.nextAction(at: 5)
        lifecycle.fetchSucceeded(TokenResponse(accessToken: Secret("at-1"), expiresIn: 300, refreshToken: Secret("rt-1")), at: 6)
        guard case .loginNeeded = lifecycle.stepUp(StepUp(scope: ["orders.write"]), at: 7) else { return XCTFail("login") }
        XCTAssertTrue(lifecycle.requestDeviceLogin(at: 7))
        guard case .authorizeDevice(let request) = lifecycle.nextAction(at: 7) else { return XCTFail("the device authorization") }
        XCTAssertTrue(request.bodyText.contains("scope=orders.read+orders.write"), request.bodyText)
        lifecycle.deviceAuthorized(DeviceAuthorization(deviceCode: Secret("dc-2"), userCode: "EFGH", verificationUri: "https://idp/d",
                                                       expiresIn: 600, interval: 5), at: 7)
        guard case .loginNeeded = lifecycle.stepUp(StepUp(scope: ["orders.admin"]), at: 8) else { return XCTFail("widened") }
        _ = lifecycle.nextAction(at: 8)
        guard case .fetch = lifecycle.nextAction(at: 12) else { return XCTFail("the poll") }
        lifecycle.fetchSucceeded(TokenResponse(accessToken: Secret("at-2"), expiresIn: 300, refreshToken: Secret("rt-2")), at: 13)
        XCTAssertEqual(lifecycle.identity.scope, "orders.read orders.write", "orders.admin was not in the authorization")
        XCTAssertEqual(lifecycle.pendingStepUp(at: 14), StepUp(scope: ["orders.write", "orders.admin"]), "still asked for")
    }

    func testASuccessfulStepUpLoginEndsItAndItsScopeIsTheIdentitysFromThenOn() throws {
        var lifecycle = loggedIn(browserIdentity())
        _ = lifecycle.stepUp(writeScope, at: 2)
        let login = nextAuthorization(&lifecycle, at: 3).login
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-2"), login: login))
        XCTAssertEqual(lifecycle.decision(at: 4), .wait, "requests wait for the step-up login's token")
        _ = lifecycle.nextAction(at: 4)
        lifecycle.fetchSucceeded(TokenResponse(accessToken: Secret("at-2"), expiresIn: 300, refreshToken: Secret("rt-2"),
                                               scope: "openid orders.read orders.write"), at: 5)
        XCTAssertEqual(lifecycle.injected(at: 6), "at-2")
        XCTAssertNil(lifecycle.status(at: 6).pendingStepUp)
        XCTAssertEqual(lifecycle.identity.scope, "openid orders.read orders.write")
        XCTAssertEqual(nextAuthorization(&lifecycle, at: 7).pairs.filter { $0.name == "scope" }.map(\.value),
                       ["openid orders.read orders.write"], "a later login asks for the scope granted")
        XCTAssertEqual(lifecycle.stepUp(writeScope, token: "at-2", at: 8), .declined,
                       "the same challenge to the token the step-up brought goes to the client: no second login")
    }

    /// The step-up login for `stepUp` at time 3 whose ID token showed `authentication` (nil: no
    /// ID token checked) brings token `at-2` with `scope` at time 5.
    private func steppedUp(_ stepUp: StepUp, scope: String?, authentication: LoginAuthentication?) -> TokenLifecycle {
        var lifecycle = loggedIn(browserIdentity())
        guard case .loginNeeded = lifecycle.stepUp(stepUp, token: "at-1", at: 2) else { XCTFail("a login is needed"); return lifecycle }
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-2"), login: nextAuthorization(&lifecycle, at: 3).login))
        _ = lifecycle.nextAction(at: 4)
        if let authentication { lifecycle.loggedIn(as: LoginSubject(subject: "alice", authentication: authentication)) }
        lifecycle.fetchSucceeded(TokenResponse(accessToken: Secret("at-2"), expiresIn: 3000, refreshToken: Secret("rt-2"), scope: scope), at: 5)
        XCTAssertEqual(lifecycle.injected(at: 6), "at-2", "the token is taken whatever it was granted")
        XCTAssertNil(lifecycle.pendingStepUp(at: 6))
        return lifecycle
    }

    func testAStepUpLoginGrantedLessScopeIsDeclinedAndWidensTheScopeOnlyByWhatWasGranted() {
        let asked = StepUp(scope: ["orders.write", "orders.admin"])
        var lifecycle = steppedUp(asked, scope: "openid orders.read orders.write", authentication: nil)
        XCTAssertEqual(lifecycle.identity.scope, "openid orders.read orders.write", "orders.admin was not granted")
        XCTAssertEqual(lifecycle.stepUp(asked, token: "at-2", at: 7), .declined, "the same challenge goes to the client")
        XCTAssertEqual(lifecycle.decision(at: 7), .inject(lifecycle.token!))
    }

    func testAnAcrStepUpIsDeclinedUnlessTheIDTokenNamesAnAcrAskedFor() {
        let stronger = StepUp(acrValues: ["urn:mfa", "urn:hw"])
        for shown in [nil, LoginAuthentication(), LoginAuthentication(acr: "urn:pwd")] {
            var lifecycle = steppedUp(stronger, scope: nil, authentication: shown)
            XCTAssertEqual(lifecycle.stepUp(stronger, token: "at-2", at: 7), .declined, "\(String(describing: shown))")
            XCTAssertEqual(lifecycle.stepUp(stronger, token: "at-2", at: 9000), .declined, "remembered: \(String(describing: shown))")
        }
        var met = steppedUp(stronger, scope: nil, authentication: LoginAuthentication(acr: "urn:hw"))
        XCTAssertEqual(met.stepUp(stronger, token: "at-2", at: 7), .declined, "no second login for the token that met it")
        guard case .loginNeeded = met.stepUp(StepUp(acrValues: ["urn:hw"]), token: "at-2", at: 8) else {
            return XCTFail("another class is another step-up")
        }
    }

    func testAMaxAgeStepUpIsDeclinedWithoutAnAuthTimeAndAnsweredForMaxAgeWithOne() {
        let fresher = StepUp(maxAge: 60)
        var unshown = steppedUp(fresher, scope: nil, authentication: LoginAuthentication(acr: "urn:pwd"))
        XCTAssertEqual(unshown.stepUp(fresher, token: "at-2", at: 500), .declined, "no auth_time: remembered as declined")
        var shown = steppedUp(fresher, scope: nil, authentication: LoginAuthentication(authTime: 1_700_000_000))
        XCTAssertEqual(shown.stepUp(fresher, token: "at-2", at: 64), .declined, "the login is younger than max_age")
        guard case .loginNeeded = shown.stepUp(fresher, token: "at-2", at: 66) else {
            return XCTFail("older than max_age: a fresher login is needed again")
        }
    }

    func testOpenIDAndOfflineAccessAreNoUpstreamsToAsk() {
        var lifecycle = loggedIn(browserIdentity())
        XCTAssertEqual(lifecycle.stepUp(StepUp(scope: ["openid", "offline_access"]), at: 2), .declined, "nothing left to ask")
        _ = lifecycle.stepUp(StepUp(scope: ["openid", "offline_access", "orders.write"]), at: 2)
        XCTAssertEqual(lifecycle.pendingStepUp(at: 3), writeScope)
        XCTAssertEqual(StepUp(scope: ["openid"], maxAge: 5).admissible(within: nil), StepUp(maxAge: 5))
    }

    func testABoundedIdentityDeclinesAStepUpOutsideItsBound() {
        let bound: Set<String> = ["mcp", "mcp.write"]
        XCTAssertEqual(StepUp(scope: ["mcp.write"]).admissible(within: bound), StepUp(scope: ["mcp.write"]))
        XCTAssertNil(StepUp(scope: ["mcp.write", "other:admin"]).admissible(within: bound))
        XCTAssertEqual(StepUp(scope: ["openid", "mcp.write"]).admissible(within: bound), StepUp(scope: ["mcp.write"]))
        var lifecycle = loggedIn(browserIdentity())
        lifecycle.stepUpScopeBound = bound
        XCTAssertEqual(lifecycle.stepUp(StepUp(scope: ["other:admin"]), at: 2), .declined)
        XCTAssertNil(lifecycle.pendingStepUp(at: 2))
    }

    func testAnAutoIdentitysBoundIsItsAutoScopeElseTheMetadatasScopesSupported() {
        var facts = AutoFacts(resource: "https://api.example.com/", resourceMetadataURL: "https://api.example.com/.well-known/oauth-protected-resource",
                              resourceMetadataSource: .wellKnown, authorizationServer: "https://as.example.com",
                              authorizationServerSource: .resourceMetadata, clientId: "c", clientSource: .registration,
                              tokenEndpointAuthMethod: "none", scope: "mcp", scopeSource: .challenge, registeredAt: 1,
                              scopesSupported: ["mcp", "mcp.write"])
        XCTAssertEqual(StepUp.scopeBound(autoScope: "mcp", facts: facts), ["mcp"])
        XCTAssertEqual(StepUp.scopeBound(autoScope: nil, facts: facts), ["mcp", "mcp.write"], "whatever the scope's source")
        facts.scopeSource = .resourceMetadata
        XCTAssertEqual(StepUp.scopeBound(autoScope: nil, facts: facts), ["mcp", "mcp.write"])
        facts.scopesSupported = []
        XCTAssertNil(StepUp.scopeBound(autoScope: nil, facts: facts), "no scopes_supported: no bound")
    }

    func testAStepUpTheTokenWasGrantedAlreadyIsARefusalLikeAnyOther() {
        var lifecycle = loggedIn(browserIdentity(), scope: "openid orders.read orders.write")
        XCTAssertEqual(lifecycle.stepUp(writeScope, at: 2), .alreadyGranted)
        XCTAssertNil(lifecycle.pendingStepUp(at: 2))
        var unscoped = loggedIn(browserIdentity())
        XCTAssertEqual(unscoped.stepUp(StepUp(scope: ["orders.read"]), at: 2), .alreadyGranted,
                       "a token answer without scope was granted the identity's")
        guard case .loginNeeded = unscoped.stepUp(StepUp(scope: ["orders.read"], acrValues: ["urn:mfa"]), at: 2) else {
            return XCTFail("a stronger login is asked whatever the scope")
        }
    }

    func testAChallengeToATokenAlreadyReplacedIsNoStepUp() {
        var lifecycle = loggedIn(browserIdentity())
        XCTAssertEqual(lifecycle.stepUp(writeScope, token: "at-0", at: 2), .alreadyGranted)
        XCTAssertNil(lifecycle.pendingStepUp(at: 2))
    }

    func testADeclinedStepUpIsRememberedAndTheSameChallengeIsDeclinedWithoutALogin() {
        var lifecycle = loggedIn(browserIdentity())
        _ = lifecycle.stepUp(StepUp(scope: ["orders.write", "orders.admin"]), at: 2)
        let login = nextAuthorization(&lifecycle, at: 3).login
        lifecycle.loginFailed("the IdP ended the login: access_denied")
        XCTAssertTrue(lifecycle.stepUpDeclined(also: login.stepUp))
        XCTAssertEqual(lifecycle.injected(at: 4), "at-1", "the token held is used again")
        XCTAssertNil(lifecycle.status(at: 4).pendingStepUp)
        XCTAssertEqual(lifecycle.stepUp(StepUp(scope: ["orders.admin", "orders.write"]), at: 5), .declined, "the scope as a set")
        guard case .loginNeeded = lifecycle.stepUp(StepUp(scope: ["orders.admin", "orders.write"], maxAge: 5), at: 6) else {
            return XCTFail("another challenge is asked")
        }
    }

    func testAChallengeAskingForPartOfADeclinedScopeIsDeclinedToo() {
        var lifecycle = loggedIn(browserIdentity())
        _ = lifecycle.stepUp(StepUp(scope: ["orders.write", "orders.admin"]), at: 2)
        lifecycle.stepUpDeclined()
        XCTAssertEqual(lifecycle.stepUp(StepUp(scope: ["orders.admin"]), at: 3), .declined, "a subset of the declined scope")
        guard case .loginNeeded = lifecycle.stepUp(StepUp(scope: ["orders.admin"], acrValues: ["urn:mfa"]), at: 4) else {
            return XCTFail("another class is another step-up")
        }
        lifecycle.stepUpDeclined()
        guard case .loginNeeded = lifecycle.stepUp(StepUp(scope: ["orders.admin", "orders.audit"]), at: 5) else {
            return XCTFail("a scope beyond the declined one is asked")
        }
    }

    func testAChallengeOrAPendingUnionPastTheLimitsStartsNoLogin() {
        let many = (0..<33).map { "s\($0)" }
        XCTAssertNil(BearerChallenge(error: "insufficient_scope", scope: many).stepUp)
        XCTAssertNotNil(BearerChallenge(error: "insufficient_scope", scope: Array(many.prefix(32))).stepUp)
        XCTAssertNil(BearerChallenge(error: "insufficient_scope", scope: [String(repeating: "a", count: 1025)]).stepUp)
        XCTAssertNotNil(BearerChallenge(error: "insufficient_scope", scope: [String(repeating: "a", count: 1024)]).stepUp)
        XCTAssertNil(BearerChallenge(error: "insufficient_user_authentication", acrValues: many).stepUp)
        var lifecycle = loggedIn(browserIdentity())
        guard case .loginNeeded = lifecycle.stepUp(StepUp(scope: Array(many.prefix(20))), at: 2) else { return XCTFail("a login") }
        XCTAssertEqual(lifecycle.stepUp(StepUp(scope: Array(many.suffix(13))), at: 3), .declined, "33 scopes joined: past the limit")
        XCTAssertEqual(lifecycle.pendingStepUp(at: 3), StepUp(scope: Array(many.prefix(20))), "the pending one stays as it was")
    }

    func testAStepUpNotAnsweredWithinTheLoginTimeoutCountsAsDeclined() {
        var identity = browserIdentity()
        identity.loginTimeoutSeconds = 60
        var lifecycle = loggedIn(identity)
        _ = lifecycle.stepUp(writeScope, at: 2)
        XCTAssertNotNil(lifecycle.pendingStepUp(at: 61))
        XCTAssertEqual(lifecycle.injected(at: 62), "at-1", "past its timeout the step-up no longer holds requests")
        XCTAssertEqual(lifecycle.stepUp(writeScope, at: 63), .declined)
    }

    func testALoginStartedForTheStepUpGivesItTheLoginTimeoutFromThen() {
        var lifecycle = loggedIn(browserIdentity())
        _ = lifecycle.stepUp(writeScope, at: 2)
        _ = nextAuthorization(&lifecycle, at: 500)
        XCTAssertNotNil(lifecycle.pendingStepUp(at: 1000), "600 s from the login's start, not from the challenge")
    }

    func testTheDeclinedStepUpsAreBounded() {
        var lifecycle = loggedIn(browserIdentity())
        for index in 0...16 {
            _ = lifecycle.stepUp(StepUp(scope: ["s\(index)"]), at: 2)
            lifecycle.stepUpDeclined()
        }
        guard case .loginNeeded = lifecycle.stepUp(StepUp(scope: ["s0"]), at: 3) else { return XCTFail("the oldest is forgotten") }
        lifecycle.stepUpDeclined()
        XCTAssertEqual(lifecycle.stepUp(StepUp(scope: ["s16"]), at: 3), .declined)
    }

    func testALogoutForgetsThePendingAndTheDeclinedStepUps() {
        var lifecycle = loggedIn(browserIdentity())
        _ = lifecycle.stepUp(writeScope, at: 2)
        lifecycle.stepUpDeclined()
        _ = lifecycle.stepUp(StepUp(scope: ["orders.admin"]), at: 3)
        lifecycle.forget()
        XCTAssertNil(lifecycle.pendingStepUp(at: 4))
        XCTAssertEqual(lifecycle.failure(at: 4)?.detail.contains("asked for"), false, "a plain login is needed")
        lifecycle = loggedIn(browserIdentity())
        XCTAssertEqual(lifecycle.stepUp(writeScope, at: 5), lifecycle.stepUp(writeScope, at: 5))
        lifecycle.forget()
        guard case .loginNeeded = lifecycle.stepUp(writeScope, at: 6) else { return XCTFail("declined ones are forgotten") }
    }

    func testAStepUpLoginWhoseExchangeIsRefusedForGoodIsDeclinedAndItsMaxAgeIsWhatTheIDTokenMustMeet() {
        var lifecycle = loggedIn(browserIdentity())
        let fresher = StepUp(maxAge: 30)
        _ = lifecycle.stepUp(fresher, at: 2)
        XCTAssertTrue(lifecycle.codeReceived(Secret("code-2"), login: nextAuthorization(&lifecycle, at: 3).login))
        _ = lifecycle.nextAction(at: 3)
        XCTAssertEqual(lifecycle.expectedMaxAge, 30)
        lifecycle.fetchFailed(.idToken(reason: "the person authenticated 600 s before"), at: 4)
        XCTAssertEqual(lifecycle.stepUp(fresher, at: 5), .declined, "no second round of the same login")
        XCTAssertEqual(lifecycle.injected(at: 5), "at-1")
    }

    func testALoginFinishingMakesRequestsWaitInsteadOfLoggingInAgain() {
        var lifecycle = loggedIn(browserIdentity())
        _ = lifecycle.stepUp(writeScope, at: 2)
        var random = SeededRandom(seed: 3)
        _ = lifecycle.codeReceived(Secret("code-2"), login: freshLogin(browserIdentity(), at: 2, random: &random))
        XCTAssertEqual(lifecycle.decision(at: 3), .wait)
    }
}
