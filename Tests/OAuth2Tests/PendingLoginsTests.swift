import OAuth2
import SafeText
import XCTest

/// The logins in flight: single-use states bound to the browser that started them, expiring,
/// bounded in number.
final class PendingLoginsTests: XCTestCase {
    private var logins = PendingLogins()
    private var random = SeededRandom(seed: 42)

    private func start(_ identity: Identity = interactiveIdentity(), returnTo: String? = "/orders/42?x=1", origin: String? = nil,
                       timeout: Double = 600, at now: Double = 1000) throws -> LoginStart {
        try logins.start(identity: identity, redirectUri: callbackURI, returnTo: returnTo, browserOrigin: origin,
                         timeoutSeconds: timeout, at: now, random: &random)
    }

    private func refusal(state: Secret, binding: Secret?, origin: String? = nil, at now: Double = 1001) -> LoginRefusal? {
        do {
            let login = try logins.complete(state: state, browserBinding: binding, origin: origin, at: now)
            XCTFail("expected a refusal, got \(login)")
            return nil
        } catch {
            return error
        }
    }

    func testStartDrawsSeparateRandomValuesAndExpires() throws {
        let login = try start()
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

    func testNonceOnlyForOpenIDScope() throws {
        XCTAssertNotNil(try start(interactiveIdentity(scope: "profile openid")).nonce)
        XCTAssertNil(try start(interactiveIdentity(scope: "openidx profile")).nonce)
        XCTAssertNil(try start(interactiveIdentity(scope: nil)).nonce)
    }

    func testTwoLoginsDifferInEveryValue() throws {
        let first = try start()
        let second = try start()
        XCTAssertNotEqual(first.state, second.state)
        XCTAssertNotEqual(first.browserBinding, second.browserBinding)
        XCTAssertNotEqual(first.verifier, second.verifier)
        XCTAssertNotEqual(first.nonce, second.nonce)
    }

    func testCompleteReturnsTheLoginOnce() throws {
        let login = try start()
        let completed = try logins.complete(state: login.state, browserBinding: login.browserBinding, at: 1001)
        XCTAssertEqual(completed.verifier, login.verifier)
        XCTAssertEqual(completed.nonce, login.nonce)
        XCTAssertEqual(logins.count, 0)
        XCTAssertEqual(refusal(state: login.state, binding: login.browserBinding), .unknownState, "a replayed callback is refused")
    }

    func testWrongOrMissingBindingIsRefusedWithoutConsumingTheState() throws {
        let login = try start()
        XCTAssertEqual(refusal(state: login.state, binding: nil), .wrongBrowser(identity: "orders"))
        XCTAssertEqual(refusal(state: login.state, binding: Secret("another-browser")), .wrongBrowser(identity: "orders"))
        XCTAssertEqual(refusal(state: login.state, binding: Secret(login.browserBinding.value + "x")), .wrongBrowser(identity: "orders"))
        XCTAssertEqual(logins.count, 1)
        XCTAssertNoThrow(try logins.complete(state: login.state, browserBinding: login.browserBinding, at: 1002),
                         "the real browser still completes its login")
    }

    func testForgedStateDisturbsNoLogin() throws {
        let login = try start()
        XCTAssertEqual(refusal(state: Secret("forged"), binding: login.browserBinding), .unknownState)
        XCTAssertEqual(logins.count, 1)
        XCTAssertNoThrow(try logins.complete(state: login.state, browserBinding: login.browserBinding, at: 1002))
    }

    func testExpiredLoginIsRefusedAndRemovedAloneItsNeighbourStays() throws {
        let old = try start(timeout: 60, at: 1000)
        let fresh = try start(timeout: 600, at: 1030)
        XCTAssertEqual(refusal(state: old.state, binding: old.browserBinding, at: 1060), .expired(identity: "orders", timeoutSeconds: 60))
        XCTAssertEqual(refusal(state: old.state, binding: old.browserBinding, at: 1061), .unknownState)
        XCTAssertEqual(try logins.complete(state: fresh.state, browserBinding: fresh.browserBinding, at: 1061).state, fresh.state)
    }

    func testSeveralLoginsInFlightAcrossIdentities() throws {
        let orders = try start(interactiveIdentity(name: "orders"))
        let billing = try start(interactiveIdentity(name: "billing"))
        let secondTab = try start(interactiveIdentity(name: "orders"))
        XCTAssertEqual(logins.count(for: "orders"), 2)
        XCTAssertEqual(try logins.complete(state: billing.state, browserBinding: billing.browserBinding, at: 1001).identity, "billing")
        XCTAssertEqual(try logins.complete(state: secondTab.state, browserBinding: secondTab.browserBinding, at: 1001).state,
                       secondTab.state)
        XCTAssertEqual(try logins.complete(state: orders.state, browserBinding: orders.browserBinding, at: 1001).state, orders.state)
    }

    func testAFullIdentityRefusesNewStartsAndKeepsEveryLoginInFlight() throws {
        logins = PendingLogins(capacityPerIdentity: 3)
        let other = try start(interactiveIdentity(name: "billing"))
        let inFlight = try (0..<3).map { i in try start(timeout: 600, at: 1000 + Double(i)) }
        XCTAssertThrowsError(try start(at: 1100)) { error in
            let full = error as? PendingLogins.Full
            XCTAssertEqual(full?.identity, "orders")
            XCTAssertEqual(full?.inFlight, 3)
            XCTAssertEqual(full?.retryAfterSeconds, 500, "the oldest expires at 1600")
        }
        XCTAssertEqual(logins.count(for: "orders"), 3)
        for login in inFlight {
            XCTAssertNoThrow(try logins.complete(state: login.state, browserBinding: login.browserBinding, at: 1101),
                             "a start beyond the bound must not end a login in flight")
        }
        XCTAssertNoThrow(try start(at: 1102), "room again once logins end")
        XCTAssertNoThrow(try logins.complete(state: other.state, browserBinding: other.browserBinding, at: 1103))
    }

    func testAFullIdentityHasRoomAgainWhenItsLoginsExpire() throws {
        logins = PendingLogins(capacityPerIdentity: 2)
        _ = try start(timeout: 10, at: 0)
        _ = try start(timeout: 10, at: 1)
        XCTAssertThrowsError(try start(at: 5))
        XCTAssertNoThrow(try start(at: 10), "the start sweeps the expired one")
    }

    func testDefaultCapacityBoundsAScript() throws {
        var refused = 0
        for _ in 0..<200 {
            do { _ = try start() } catch is PendingLogins.Full { refused += 1 }
        }
        XCTAssertEqual(logins.count, PendingLogins.defaultCapacityPerIdentity)
        XCTAssertEqual(refused, 200 - PendingLogins.defaultCapacityPerIdentity)
    }

    func testACallbackWithoutTheCookieAtAnotherOriginGoesOnToTheLoginsOrigin() throws {
        let login = try start(origin: "http://localhost:8180")
        XCTAssertEqual(refusal(state: login.state, binding: nil, origin: "http://127.0.0.1:8180"),
                       .startedElsewhere(identity: "orders", origin: "http://localhost:8180"))
        XCTAssertEqual(logins.count, 1, "the state is not consumed")
        XCTAssertEqual(refusal(state: login.state, binding: nil, origin: "http://localhost:8180"), .wrongBrowser(identity: "orders"),
                       "at the login's own origin a missing cookie is another browser")
        XCTAssertEqual(refusal(state: login.state, binding: Secret("another"), origin: "http://127.0.0.1:8180"),
                       .wrongBrowser(identity: "orders"), "a wrong cookie is refused wherever it comes")
        XCTAssertEqual(try logins.complete(state: login.state, browserBinding: login.browserBinding, origin: "http://localhost:8180",
                                           at: 1002).state, login.state)
    }

    func testALoginWithoutAKnownOriginIsNeverSentElsewhere() throws {
        let login = try start(origin: nil)
        XCTAssertEqual(refusal(state: login.state, binding: nil, origin: "http://127.0.0.1:8180"), .wrongBrowser(identity: "orders"))
    }

    func testSweepDropsExpiredLoginsAndNamesThem() throws {
        _ = try start(interactiveIdentity(name: "a"), timeout: 10, at: 0)
        _ = try start(interactiveIdentity(name: "b"), timeout: 20, at: 0)
        let kept = try start(interactiveIdentity(name: "c"), timeout: 30, at: 0)
        XCTAssertEqual(logins.nextExpiry, 10)
        XCTAssertEqual(logins.sweep(at: 20), ["a", "b"])
        XCTAssertEqual(logins.count, 1)
        XCTAssertEqual(logins.nextExpiry, kept.expiresAt)
        XCTAssertEqual(logins.sweep(at: 29), [])
    }

    func testStartSweepsExpiredLogins() throws {
        _ = try start(timeout: 10, at: 0)
        _ = try start(interactiveIdentity(name: "billing"), at: 11)
        XCTAssertEqual(logins.count, 1)
    }

    func testCancelDropsOneIdentitysLogins() throws {
        _ = try start()
        _ = try start()
        let billing = try start(interactiveIdentity(name: "billing"))
        XCTAssertEqual(logins.cancel(identity: "orders"), 2)
        XCTAssertEqual(logins.count, 1)
        XCTAssertNoThrow(try logins.complete(state: billing.state, browserBinding: billing.browserBinding, at: 1001))
    }

    func testReturnToMustBeAPathOnTheRelay() throws {
        XCTAssertEqual(try start(returnTo: "/a/b?c=d").returnTo, "/a/b?c=d")
        for unsafe in ["https://evil.example/", "//evil.example/x", "/\\evil.example", "orders", "/a b", "/a\r\nSet-Cookie: x",
                       "/.oauth-relay/login/orders", "/x/../.oauth-relay/status/orders"] {
            XCTAssertNil(try start(returnTo: unsafe).returnTo, unsafe)
        }
        XCTAssertNil(try start(returnTo: nil).returnTo)
    }

    func testDescriptionsShowNoSecret() throws {
        let login = try start()
        let secrets = [login.state.value, login.browserBinding.value, login.verifier.value, login.nonce?.value ?? ""]
        assertHidden(secrets, in: login)
        assertHidden(secrets, in: logins)
        XCTAssertEqual(logins.description, "PendingLogins(1 in flight: orders 1)")
        for refusal in [LoginRefusal.unknownState, .expired(identity: "orders", timeoutSeconds: 600), .wrongBrowser(identity: "orders")] {
            assertHidden(secrets, in: refusal)
        }
    }
}
