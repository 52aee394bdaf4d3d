import Endpoints
@testable import OAuth2
import SafeText
import XCTest

/// An `auto` identity's lifecycle: resolution before anything else, one at a time; requests
/// wait, get 503 on a temporary failure, 502 `needs-configuration` when only configuration can
/// help; a client the server no longer knows sends it back to the start.
final class TokenLifecycleAutoTests: XCTestCase {
    private let issuer = "https://as.example.com"

    private func learnt() -> AutoResolved {
        var identity = autoIdentity()
        identity.issuer = issuer
        identity.clientAuth = .publicClient(id: "pub-1")
        identity.scope = "mcp"
        identity.resource = ["https://api.example.com/mcp"]
        let key = RegistrationKey(identity: identity.name, issuer: issuer, redirectUri: identity.redirectUri?.description, clientAuth: .automatic)
        let facts = AutoFacts(resource: "https://api.example.com/mcp", resourceMetadataURL: "https://api.example.com/.well-known/oauth-protected-resource/mcp",
                              resourceMetadataSource: .wellKnown, authorizationServer: issuer, authorizationServerSource: .resourceMetadata,
                              clientId: "pub-1", clientSource: .registration, tokenEndpointAuthMethod: "none", scope: "mcp",
                              scopeSource: .resourceMetadata, registeredAt: 5)
        return AutoResolved(identity: identity,
                            endpoints: IdentityEndpoints(token: HTTPURL(scheme: .https, host: "as.example.com", path: "/token"),
                                                         authorization: HTTPURL(scheme: .https, host: "as.example.com", path: "/authorize")),
                            client: RegisteredClient(issuer: issuer, clientId: "pub-1", tokenEndpointAuthMethod: "none", registeredAt: 5),
                            key: key, newlyRegistered: true, facts: facts)
    }

    private func sleepUntil(_ action: TokenAction) -> Double? {
        if case .sleep(let due) = action { return due }
        return nil
    }

    private func isResolve(_ action: TokenAction) -> Bool {
        if case .resolve = action { return true }
        return false
    }

    func testResolutionComesFirstAndRunsOnceWhileRequestsWait() {
        var lifecycle = makeLifecycle(autoIdentity())
        XCTAssertTrue(lifecycle.needsResolution)
        XCTAssertNil(lifecycle.autoFacts)
        XCTAssertTrue(isResolve(lifecycle.nextAction(at: 0)), "resolution before discovery")
        guard case .idle = lifecycle.nextAction(at: 0) else { return XCTFail("a second resolution started") }
        guard case .wait = lifecycle.decision(at: 0) else { return XCTFail("requests wait for the first resolution") }
        XCTAssertEqual(lifecycle.status(at: 0).state, .resolving)
    }

    func testResolvedPutsTheLearntIdentityAndEndpointsInForce() {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        let resolved = learnt()
        lifecycle.resolved(resolved)
        XCTAssertFalse(lifecycle.needsResolution)
        XCTAssertEqual(lifecycle.identity, resolved.identity)
        XCTAssertEqual(lifecycle.endpoints, resolved.endpoints)
        XCTAssertEqual(lifecycle.autoFacts, resolved.facts)
        XCTAssertEqual(lifecycle.status(at: 0).auto, resolved.facts)
        XCTAssertEqual(lifecycle.status(at: 0).state, .needsLogin, "then it is a browser identity like any other")
        guard case .fail(let problem) = lifecycle.decision(at: 0) else { return XCTFail("no login problem") }
        XCTAssertEqual(problem.reason, .needsLogin)
        guard case .idle = lifecycle.nextAction(at: 0) else { return XCTFail("nothing to do before a login") }
    }

    func testAChallengeScopedIdentitysStepUpsAreBoundedByTheMetadatasScopesSupported() {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        var resolved = learnt()
        resolved.facts.scopeSource = .challenge
        resolved.facts.scopesSupported = ["mcp", "mcp.write"]
        lifecycle.resolved(resolved)
        XCTAssertEqual(lifecycle.stepUpScopeBound, ["mcp", "mcp.write"])
        XCTAssertEqual(lifecycle.stepUp(StepUp(scope: ["other:admin"]), at: 1), .declined, "outside scopes_supported")
        var configured = makeLifecycle(autoIdentity { $0.scope = "mcp" })
        _ = configured.nextAction(at: 0)
        configured.resolved(resolved)
        XCTAssertEqual(configured.stepUpScopeBound, ["mcp"], "auto.scope first")
        var unlisted = makeLifecycle(autoIdentity())
        _ = unlisted.nextAction(at: 0)
        resolved.facts.scopesSupported = []
        unlisted.resolved(resolved)
        XCTAssertNil(unlisted.stepUpScopeBound, "nothing known: no bound")
    }

    func testATemporaryFailureBacksOffWith503() {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        let error = AutoSetupError.unavailable(url: "https://api.example.com/.well-known/oauth-protected-resource/mcp",
                                               reason: "it answered HTTP 503", retryAfter: 30)
        lifecycle.resolutionFailed(error, at: 100)
        guard case .fail(let problem) = lifecycle.decision(at: 100) else { return XCTFail("requests do not fail fast") }
        XCTAssertEqual(problem.status, 503)
        XCTAssertEqual(problem.retryAfterSeconds, 30)
        XCTAssertTrue(problem.detail.contains(error.description), problem.detail)
        XCTAssertEqual(lifecycle.status(at: 100).state, .failing)
        XCTAssertEqual(lifecycle.status(at: 100).lastErrorCode, "unavailable")
        guard case .sleep(let until) = lifecycle.nextAction(at: 100) else { return XCTFail("no backoff") }
        XCTAssertEqual(until, 130)
        XCTAssertTrue(isResolve(lifecycle.nextAction(at: 130)), "tried again after the backoff")
        XCTAssertEqual(lifecycle.failure(at: 130)?.status, 503, "the streak lasts until a resolution succeeds: no request waits on it")
    }

    func testAServerSideFailureBacksOffWith502() {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        lifecycle.resolutionFailed(.resourceMismatch(url: "https://m", expected: "https://api.example.com/mcp", found: "https://x"), at: 0)
        guard case .fail(let problem) = lifecycle.decision(at: 0) else { return XCTFail("requests do not fail fast") }
        XCTAssertEqual(problem.reason, .refused)
        XCTAssertEqual(lifecycle.status(at: 0).lastErrorCode, "resource_mismatch")
        // The problem a script gets names the failure's code, not only its sentence.
        XCTAssertTrue(problem.detail.contains("resource_mismatch: "), problem.detail)
        guard case .sleep = lifecycle.nextAction(at: 0) else { return XCTFail("tried again later: the servers may be fixed") }
    }

    func testOnlyConfigurationCanHelpAnswers502NeedsConfigurationAndRetriesAfterTenMinutesDoublingToAnHour() {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        let error = AutoSetupError.noResourceMetadata(resource: "https://api.example.com/mcp", tried: ["404"])
        lifecycle.resolutionFailed(error, at: 0)
        let problem = TokenDecision.fail(TokenUnavailable(identity: "auto-api.example.com-mcp", reason: .needsConfiguration,
                                                          detail: error.description))
        XCTAssertEqual(lifecycle.decision(at: 0), problem)
        XCTAssertEqual(lifecycle.status(at: 0).state, .needsConfiguration)
        XCTAssertEqual(lifecycle.status(at: 0).lastErrorCode, "no_resource_metadata")
        var ended = 0.0
        for delay in [600.0, 1200, 2400, 3600, 3600] {
            XCTAssertEqual(sleepUntil(lifecycle.nextAction(at: ended)), ended + delay)
            XCTAssertEqual(sleepUntil(lifecycle.nextAction(at: ended + delay - 1)), ended + delay)
            XCTAssertTrue(isResolve(lifecycle.nextAction(at: ended + delay)), "tried again after \(delay) s")
            XCTAssertEqual(lifecycle.decision(at: ended + delay), problem, "the problem is served while it tries again")
            XCTAssertEqual(lifecycle.status(at: ended + delay).state, .needsConfiguration)
            ended += delay + 5
            lifecycle.resolutionFailed(error, at: ended)
        }
    }

    func testAReloadOrALogoutRetriesAtOnceAndASuccessEndsIt() {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        lifecycle.resolutionFailed(.registrationUnsupported(issuer: issuer), at: 0)
        XCTAssertEqual(sleepUntil(lifecycle.nextAction(at: 10)), 600)
        lifecycle.retryResolutionNow()
        XCTAssertTrue(isResolve(lifecycle.nextAction(at: 10)), "at once")
        lifecycle.retryResolutionNow()
        guard case .idle = lifecycle.nextAction(at: 10) else { return XCTFail("one resolution at a time") }
        lifecycle.resolutionFailed(.unavailable(url: "https://api.example.com/mcp", reason: "down", retryAfter: nil), at: 10)
        XCTAssertEqual(lifecycle.status(at: 10).state, .failing, "a temporary failure backs off as any other")
        XCTAssertTrue(isResolve(lifecycle.nextAction(at: 100)))
        lifecycle.resolved(learnt())
        lifecycle.retryResolutionNow()
        XCTAssertFalse(lifecycle.needsResolution, "nothing to retry once resolved")
    }

    func testAnUnknownClientIsDroppedAndTheChainRunsAgain() throws {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        lifecycle.resolved(learnt())
        lifecycle.fetchSucceeded(tokenResponse("t-1", expiresIn: 600, refreshToken: "r-1"), at: 0)
        XCTAssertEqual(lifecycle.injected(at: 1), "t-1")
        try lifecycle.fail(at: 600, with: refusedByIdP)
        XCTAssertEqual(lifecycle.clientUnknown(at: 600), learnt().key)
        XCTAssertTrue(lifecycle.needsResolution)
        XCTAssertEqual(lifecycle.identity, autoIdentity(), "back to the identity as configured")
        XCTAssertNil(lifecycle.endpoints)
        XCTAssertNil(lifecycle.token)
        XCTAssertNil(lifecycle.autoFacts)
        XCTAssertTrue(isResolve(lifecycle.nextAction(at: 600)), "at once, not after the refusal's backoff")
        XCTAssertNil(lifecycle.clientUnknown(at: 600), "no registration to drop any more")
    }

    func testAClientJustRegisteredAndRefusedBeforeAnyTokenNeedsConfigurationInsteadOfAnotherRegistration() {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        lifecycle.resolved(learnt())
        XCTAssertEqual(lifecycle.clientUnknown(at: 10, because: "invalid_client"), learnt().key, "dropped from the stores all the same")
        XCTAssertEqual(lifecycle.status(at: 10).state, .needsConfiguration)
        XCTAssertEqual(lifecycle.status(at: 10).lastErrorCode, "registered_client_refused")
        guard case .fail(let problem) = lifecycle.decision(at: 10) else { return XCTFail("requests do not fail fast") }
        XCTAssertEqual(problem.reason, .needsConfiguration)
        XCTAssertTrue(problem.detail.hasPrefix("the server refused the client it just registered: \"https://as.example.com\" answered "
                                               + "invalid_client"), problem.detail)
        // Not registered again at once (a loop): only after the long retry of what needs
        // configuration (10 minutes, doubling to an hour), or an operator's reload or logout.
        guard case .sleep(let until) = lifecycle.nextAction(at: 10) else { return XCTFail("registered again at once: a loop") }
        XCTAssertEqual(until, 610)
    }

    func testAClientKeptInTheStoreAndRefusedIsRegisteredAgain() {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        var kept = learnt()
        kept.newlyRegistered = false
        lifecycle.resolved(kept)
        XCTAssertEqual(lifecycle.clientUnknown(at: 10), kept.key)
        XCTAssertTrue(isResolve(lifecycle.nextAction(at: 10)))
    }

    func testForgettingAClientJustRegisteredResolvesAgain() {
        var lifecycle = makeLifecycle(autoIdentity())
        _ = lifecycle.nextAction(at: 0)
        lifecycle.resolved(learnt())
        XCTAssertEqual(lifecycle.clientForgotten(), learnt().key)
        XCTAssertTrue(isResolve(lifecycle.nextAction(at: 10)), "an operator's forget is no refusal")
    }

    func testAResolutionDroppedRunsAgain() {
        var lifecycle = makeLifecycle(autoIdentity())
        XCTAssertTrue(isResolve(lifecycle.nextAction(at: 0)))
        XCTAssertNil(lifecycle.clientForgotten(), "nothing resolved yet")
        lifecycle.resolutionDropped()
        XCTAssertTrue(lifecycle.needsResolution)
        XCTAssertTrue(isResolve(lifecycle.nextAction(at: 0)), "the chain runs again")
    }

    func testOtherIdentitiesAreNeverResolved() {
        var lifecycle = makeLifecycle()
        XCTAssertFalse(lifecycle.needsResolution)
        XCTAssertNil(lifecycle.autoFacts)
        XCTAssertNil(lifecycle.clientUnknown(at: 0))
        guard case .fetch = lifecycle.nextAction(at: 0) else { return XCTFail("a client-credentials identity fetches") }
    }
}
