import Endpoints
import OAuth2
import XCTest

/// The per-identity summary for `/identities` and `/readyz`.
final class IdentityStatusTests: XCTestCase {
    func testNewIdentityIsPending() {
        let status = makeLifecycle().status(at: 0)
        XCTAssertEqual(status.state, .pending)
        XCTAssertFalse(status.hasValidToken)
        XCTAssertEqual(status.nextFetchAt, 0)
    }

    func testFetchInFlightIsRefreshing() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.startFetch(at: 0)
        XCTAssertEqual(lifecycle.status(at: 0).state, .refreshing)
        XCTAssertNil(lifecycle.status(at: 0).nextFetchAt)
    }

    func testValidTokenShowsItsTimesButNotItself() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-secret-value-1234", expiresIn: 100, refreshToken: "rt-secret-value-5678"))
        let status = lifecycle.status(at: 30)
        XCTAssertEqual(status.state, .valid)
        XCTAssertTrue(status.hasValidToken)
        XCTAssertEqual(status.expiresAt, 100)
        XCTAssertEqual(status.expiresInSeconds, 70)
        XCTAssertEqual(status.refreshAt, 90)
        XCTAssertEqual(status.tokenType, "Bearer")
        XCTAssertTrue(status.hasRefreshToken)
        for text in everyRendering(of: status) {
            XCTAssertFalse(text.contains("secret-value"), text)
        }
    }

    func testFailingShowsTheLastErrorCodeAndDescription() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fail(at: 0, with: refusedByIdP)
        let status = lifecycle.status(at: 0)
        XCTAssertEqual(status.state, .failing)
        XCTAssertEqual(status.consecutiveFailures, 1)
        XCTAssertEqual(status.lastErrorCode, "invalid_client")
        XCTAssertEqual(status.lastErrorDescription, "the token endpoint answered HTTP 401 with OAuth error invalid_client (unknown client)")
    }

    func testLastErrorIsKeptAfterRecovery() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fail(at: 0, with: idpDown)
        try lifecycle.fetch(at: 1, answer: tokenResponse("a", expiresIn: 60))
        XCTAssertEqual(lifecycle.status(at: 2).state, .valid)
        XCTAssertEqual(lifecycle.status(at: 2).lastErrorCode, "unreachable")
    }

    func testInteractiveIdentityWithoutTokenNeedsLogin() {
        XCTAssertEqual(makeLifecycle(makeIdentity(.authorizationCode(seed: nil))).status(at: 0).state, .needsLogin)
        XCTAssertEqual(IdentityStatus.State.needsLogin.rawValue, "needs-login")
    }
}
