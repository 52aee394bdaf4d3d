import OAuth2
import XCTest

/// The logins in flight: single-use states bound to the browser that started them, expiring,
/// bounded in number.
final class PendingLoginsTests: XCTestCase {
    private var logins = PendingLogins()
    private var random = SeededRandom(seed: 42)

    private func start(_ identity: Identity = interactiveIdentity(), returnTo: String? = "/orders/42?x=1",
                       timeout: Double = 600, at now: Double = 1000) -> LoginStart {
        logins.start(identity: identity, redirectUri: callbackURI, returnTo: returnTo, timeoutSeconds: timeout, at: now, random: &random)
    }

    private func refusal(state: Secret, binding: Secret?, at now: Double = 1001) -> LoginRefusal? {
        do {
            let login = try logins.complete(state: state, browserBinding: binding, at: now)
            XCTFail("expected a refusal, got \(login)")
            return nil
        } catch {
            return error
        }
    }

    func testStartDrawsSeparateRandomValuesAndExpires() {
        let login = start()
        let values = [login.state.value, login.browserBinding.value, login.verifier.value, login.nonce?.value ?? ""]
        XCTAssertEqual(Set(values).count, 4)
        XCTAssertTrue(values.allSatisfy { $0.count == 43 }, "256-bit values, base64url")
        XCTAssertEqual(login.identity, "orders")
        XCTAssertEqual(login.redirectUri, callbackURI)
        XCTAssertEqual(login.returnTo, "/orders/42?x=1")
        XCTAssertEqual(login.startedAt, 1000)
        XCTAssertEqual(login.expiresAt, 1600)
        XCTAssertEqual(logins.count, 1)
        XCTAssertEqual(logins.nextExpiry, 1600)
    }

    func testNonceOnlyForOpenIDScope() {
        XCTAssertNotNil(start(interactiveIdentity(scope: "profile openid")).nonce)
        XCTAssertNil(start(interactiveIdentity(scope: "openidx profile")).nonce)
        XCTAssertNil(start(interactiveIdentity(scope: nil)).nonce)
    }

    func testTwoLoginsDifferInEveryValue() {
        let first = start()
        let second = start()
        XCTAssertNotEqual(first.state, second.state)
        XCTAssertNotEqual(first.browserBinding, second.browserBinding)
        XCTAssertNotEqual(first.verifier, second.verifier)
        XCTAssertNotEqual(first.nonce, second.nonce)
    }

    func testCompleteReturnsTheLoginOnce() throws {
        let login = start()
        let completed = try logins.complete(state: login.state, browserBinding: login.browserBinding, at: 1001)
        XCTAssertEqual(completed.verifier, login.verifier)
        XCTAssertEqual(completed.nonce, login.nonce)
        XCTAssertEqual(logins.count, 0)
        XCTAssertEqual(refusal(state: login.state, binding: login.browserBinding), .unknownState, "a replayed callback is refused")
    }

    func testWrongOrMissingBindingIsRefusedWithoutConsumingTheState() throws {
        let login = start()
        XCTAssertEqual(refusal(state: login.state, binding: nil), .wrongBrowser(identity: "orders"))
        XCTAssertEqual(refusal(state: login.state, binding: Secret("another-browser")), .wrongBrowser(identity: "orders"))
        XCTAssertEqual(refusal(state: login.state, binding: Secret(login.browserBinding.value + "x")), .wrongBrowser(identity: "orders"))
        XCTAssertEqual(logins.count, 1)
        XCTAssertNoThrow(try logins.complete(state: login.state, browserBinding: login.browserBinding, at: 1002),
                         "the real browser still completes its login")
    }

    func testForgedStateDisturbsNoLogin() throws {
        let login = start()
        XCTAssertEqual(refusal(state: Secret("forged"), binding: login.browserBinding), .unknownState)
        XCTAssertEqual(logins.count, 1)
        XCTAssertNoThrow(try logins.complete(state: login.state, browserBinding: login.browserBinding, at: 1002))
    }

    func testExpiredLoginIsRefusedAndRemovedAloneItsNeighbourStays() throws {
        let old = start(timeout: 60, at: 1000)
        let fresh = start(timeout: 600, at: 1030)
        XCTAssertEqual(refusal(state: old.state, binding: old.browserBinding, at: 1060), .expired(identity: "orders", timeoutSeconds: 60))
        XCTAssertEqual(refusal(state: old.state, binding: old.browserBinding, at: 1061), .unknownState)
        XCTAssertEqual(try logins.complete(state: fresh.state, browserBinding: fresh.browserBinding, at: 1061).state, fresh.state)
    }

    func testSeveralLoginsInFlightAcrossIdentities() throws {
        let orders = start(interactiveIdentity(name: "orders"))
        let billing = start(interactiveIdentity(name: "billing"))
        let secondTab = start(interactiveIdentity(name: "orders"))
        XCTAssertEqual(logins.count(for: "orders"), 2)
        XCTAssertEqual(try logins.complete(state: billing.state, browserBinding: billing.browserBinding, at: 1001).identity, "billing")
        XCTAssertEqual(try logins.complete(state: secondTab.state, browserBinding: secondTab.browserBinding, at: 1001).state,
                       secondTab.state)
        XCTAssertEqual(try logins.complete(state: orders.state, browserBinding: orders.browserBinding, at: 1001).state, orders.state)
    }

    func testCapacityDropsTheOldestLoginOfThatIdentityOnly() {
        logins = PendingLogins(capacityPerIdentity: 3)
        let other = start(interactiveIdentity(name: "billing"))
        let first = start()
        let rest = (0..<3).map { _ in start() }
        XCTAssertEqual(logins.count(for: "orders"), 3)
        XCTAssertEqual(logins.count(for: "billing"), 1)
        XCTAssertEqual(refusal(state: first.state, binding: first.browserBinding), .unknownState)
        XCTAssertNoThrow(try logins.complete(state: rest[0].state, browserBinding: rest[0].browserBinding, at: 1001))
        XCTAssertNoThrow(try logins.complete(state: other.state, browserBinding: other.browserBinding, at: 1001))
    }

    func testDefaultCapacityBoundsAScript() {
        for _ in 0..<200 { _ = start() }
        XCTAssertEqual(logins.count, PendingLogins.defaultCapacityPerIdentity)
    }

    func testSweepDropsExpiredLoginsAndNamesThem() {
        _ = start(interactiveIdentity(name: "a"), timeout: 10, at: 0)
        _ = start(interactiveIdentity(name: "b"), timeout: 20, at: 0)
        let kept = start(interactiveIdentity(name: "c"), timeout: 30, at: 0)
        XCTAssertEqual(logins.nextExpiry, 10)
        XCTAssertEqual(logins.sweep(at: 20), ["a", "b"])
        XCTAssertEqual(logins.count, 1)
        XCTAssertEqual(logins.nextExpiry, kept.expiresAt)
        XCTAssertEqual(logins.sweep(at: 29), [])
    }

    func testStartSweepsExpiredLogins() {
        _ = start(timeout: 10, at: 0)
        _ = start(interactiveIdentity(name: "billing"), at: 11)
        XCTAssertEqual(logins.count, 1)
    }

    func testCancelDropsOneIdentitysLogins() {
        _ = start()
        _ = start()
        let billing = start(interactiveIdentity(name: "billing"))
        XCTAssertEqual(logins.cancel(identity: "orders"), 2)
        XCTAssertEqual(logins.count, 1)
        XCTAssertNoThrow(try logins.complete(state: billing.state, browserBinding: billing.browserBinding, at: 1001))
    }

    func testReturnToMustBeAPathOnTheRelay() {
        XCTAssertEqual(start(returnTo: "/a/b?c=d").returnTo, "/a/b?c=d")
        for unsafe in ["https://evil.example/", "//evil.example/x", "/\\evil.example", "orders", "/a b", "/a\r\nSet-Cookie: x"] {
            XCTAssertNil(start(returnTo: unsafe).returnTo, unsafe)
        }
        XCTAssertNil(start(returnTo: nil).returnTo)
    }

    func testDescriptionsShowNoSecret() {
        let login = start()
        let secrets = [login.state.value, login.browserBinding.value, login.verifier.value, login.nonce?.value ?? ""]
        assertHidden(secrets, in: login)
        assertHidden(secrets, in: logins)
        XCTAssertEqual(logins.description, "PendingLogins(1 in flight: orders 1)")
        for refusal in [LoginRefusal.unknownState, .expired(identity: "orders", timeoutSeconds: 600), .wrongBrowser(identity: "orders")] {
            assertHidden(secrets, in: refusal)
        }
    }
}
