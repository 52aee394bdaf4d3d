import Endpoints
import OAuth2
import SafeText
import XCTest

/// `storedEntryRead`: what a token store's entry, read under its lock once a fetch started,
/// leaves to do — the single flight between processes sharing a store.
final class TokenLifecycleStoreTests: XCTestCase {
    private func stored(_ value: String, issuedAt: Double, expiresAt: Double, refreshAt: Double? = nil) -> AccessToken {
        AccessToken(value: value, issuedAt: issuedAt, expiresAt: expiresAt, refreshAt: refreshAt ?? (expiresAt - (expiresAt - issuedAt) / 10))
    }

    func testAValidStoredTokenEndsTheFetchWithoutARequest() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.startFetch(at: 100)
        guard case .satisfied = lifecycle.storedEntryRead(stored("at-disk", issuedAt: 50, expiresAt: 3650), refreshToken: Secret("rt-disk"), at: 100)
        else { return XCTFail("a request was still made") }
        XCTAssertFalse(lifecycle.isFetching)
        XCTAssertEqual(lifecycle.injected(at: 101), "at-disk")
        XCTAssertEqual(lifecycle.heldRefreshToken, Secret("rt-disk"))
        // Refreshed on the stored token's own schedule.
        XCTAssertEqual(lifecycle.nextFetchAt(after: 101), 3290)
    }

    func testAnExpiredStoredTokenWithARefreshTokenCostsOneRefresh() throws {
        var lifecycle = makeLifecycle()
        XCTAssertEqual(try lifecycle.startFetch(at: 100).purpose, .grant(.clientCredentials))
        guard case .fetch(let request) = lifecycle.storedEntryRead(stored("old", issuedAt: 0, expiresAt: 60), refreshToken: Secret("rt-disk"), at: 100)
        else { return XCTFail("no request") }
        XCTAssertEqual(request.purpose, .refresh)
        XCTAssertEqual(lifecycle.decision(at: 100), .wait, "an expired token is never injected")
        XCTAssertTrue(String(decoding: request.body, as: UTF8.self).contains("refresh_token=rt-disk"))
    }

    /// Another process refreshed with a rotating IdP: its token is taken and no request is made;
    /// had it not been due yet the refresh token it wrote would still replace ours.
    func testATokenAnotherProcessRefreshedIsTakenWithItsRotatedRefreshToken() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100, refreshToken: "rt-1"))
        try lifecycle.startFetch(at: 90)
        guard case .satisfied = lifecycle.storedEntryRead(stored("at-2", issuedAt: 89, expiresAt: 189), refreshToken: Secret("rt-2"), at: 90)
        else { return XCTFail("refreshed again") }
        XCTAssertEqual(lifecycle.injected(at: 91), "at-2")
        XCTAssertEqual(lifecycle.heldRefreshToken, Secret("rt-2"))
        XCTAssertEqual(lifecycle.token?.serial, 2)
    }

    /// Another replica's login replaced the person without a refresh token: its entry has none,
    /// and the previous person's must not refresh the new person's token.
    func testANewerStoredTokenWithoutARefreshTokenDropsTheOneHeld() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-a", expiresIn: 100, refreshToken: "rt-a"))
        try lifecycle.startFetch(at: 90)
        guard case .satisfied = lifecycle.storedEntryRead(stored("at-b", issuedAt: 80, expiresAt: 1080), refreshToken: nil, at: 90)
        else { return XCTFail("refreshed again") }
        XCTAssertEqual(lifecycle.injected(at: 91), "at-b")
        XCTAssertNil(lifecycle.heldRefreshToken)
    }

    func testTheSameTokenStillDueIsRefreshedWithTheStoredRefreshToken() throws {
        var lifecycle = makeLifecycle(passwordIdentity())
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 100, refreshToken: "rt-1"))
        try lifecycle.startFetch(at: 90)
        guard case .fetch(let request) = lifecycle.storedEntryRead(stored("at-1", issuedAt: 0, expiresAt: 100), refreshToken: Secret("rt-1"), at: 90)
        else { return XCTFail("no request") }
        XCTAssertEqual(request.purpose, .refresh)
        XCTAssertEqual(lifecycle.token?.serial, 1, "the same token is not taken as a new one")
    }

    func testAnEmptyEntryLeavesTheFetchAsItWas() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.startFetch(at: 0)
        guard case .fetch(let request) = lifecycle.storedEntryRead(nil, refreshToken: nil, at: 0) else { return XCTFail("no request") }
        XCTAssertEqual(request.purpose, .grant(.clientCredentials))
        XCTAssertTrue(lifecycle.isFetching)
    }

    func testATokenAnUpstreamRefusedIsNotTakenBackFromTheStore() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        XCTAssertEqual(lifecycle.refused(token: "at-1", at: 10, minimumAge: 10), .dropped)
        try lifecycle.startFetch(at: 10)
        guard case .fetch = lifecycle.storedEntryRead(stored("at-1", issuedAt: 0, expiresAt: 3600), refreshToken: nil, at: 10)
        else { return XCTFail("the refused token came back") }
        XCTAssertNil(lifecycle.injected(at: 10))
    }

    func testAnOperatorsRefreshIsNotSatisfiedByTheStoredToken() throws {
        var lifecycle = makeLifecycle()
        try lifecycle.fetch(at: 0, answer: tokenResponse("at-1", expiresIn: 3600))
        lifecycle.refreshNow()
        try lifecycle.startFetch(at: 10)
        guard case .fetch = lifecycle.storedEntryRead(stored("at-0", issuedAt: 5, expiresAt: 3605), refreshToken: nil, at: 10)
        else { return XCTFail("the operator's refresh was dropped") }
    }

    func testNothingHappensWithoutAFetchInFlight() {
        var lifecycle = makeLifecycle()
        guard case .satisfied = lifecycle.storedEntryRead(stored("x", issuedAt: 0, expiresAt: 100), refreshToken: nil, at: 1)
        else { return XCTFail("a request without a fetch") }
        XCTAssertNil(lifecycle.token)
    }
}
