import Crypto
import Endpoints
import EventLoop
import FileTestSupport
import Foundation
import Logging
import LoopTestSupport
import OAuth2
import SafeText
import Synchronization
import TokenStore
@testable import Tokens
import XCTest

/// The token loop's side of the store: times cross restarts as wall-clock time, entries follow
/// the identity's settings, and a busy lock is waited for without blocking the loop.
final class TokenPersistenceTests: XCTestCase {
    private var scratch: TemporaryDirectory!
    private var directory: String { scratch.path + "/store" }
    private var test: LeakCheckedLoop!
    private var loop: EventLoop { test.loop }

    override func setUpWithError() throws {
        scratch = try TemporaryDirectory()
        test = try LeakCheckedLoop()
    }

    override func tearDown() {
        test.closeAndCheckForLeaks()
        scratch.remove()
    }

    /// Another scope is another configuration's identity, which a reload gives another slot.
    private func identity(scope: String = "a") -> IdentityTokens {
        IdentityTokens(identity: Identity(name: "orders", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                          grant: .clientCredentials, clientAuth: .publicClient(id: "c"), scope: scope), slot: scope == "a" ? 0 : 1)
    }

    private let operations = OperationLog()

    private func persistence() throws -> TokenPersistence {
        let store = try TokenStore(path: directory, key: SymmetricKey([UInt8](repeating: 3, count: 32)))
        return TokenPersistence(store: store, loop: loop, logger: Logger(label: "test"), observer: operations)
    }

    func testEveryOperationIsToldToTheObserver() throws {
        let now = monotonicSeconds()
        let persistence = try persistence()
        _ = persistence.read(identity())
        persistence.write(HeldTokens(token: AccessToken(value: "at", issuedAt: now, expiresAt: now + 60, refreshAt: now + 50)), for: identity())
        _ = persistence.read(identity())
        _ = persistence.read(identity(scope: "b"))
        persistence.remove(identity(), lockTimeout: 1)
        XCTAssertEqual(operations.entries, ["orders read empty", "orders write ok", "orders read found", "orders read other_settings",
                                            "orders remove ok"])
    }

    func testATokenReadsBackWithTheSameTimesInTheLifecyclesClock() throws {
        let now = monotonicSeconds()
        let token = AccessToken(value: "at", issuedAt: now - 10, expiresAt: now + 90, refreshAt: now + 80, scope: "a")
        try persistence().write(HeldTokens(token: token, refreshToken: Secret("rt")), for: identity())
        let read = try persistence().read(identity())
        let stored = try XCTUnwrap(read.token)
        XCTAssertEqual(stored.value, "at")
        XCTAssertEqual(stored.expiresAt, token.expiresAt, accuracy: 0.01)
        XCTAssertEqual(stored.issuedAt, token.issuedAt, accuracy: 0.01)
        // The refresh time follows from issue time and lifetime, as for a fetched token.
        XCTAssertEqual(stored.refreshAt, RefreshSchedule.refreshAt(issuedAt: stored.issuedAt, lifetime: 100, skew: 10), accuracy: 0.001)
        XCTAssertEqual(read.refreshToken, Secret("rt"))
    }

    /// Tokens bound to a DPoP key this process generated are useless to any other: nothing is
    /// written, read or locked for them.
    func testAnIdentityWithAGeneratedDPoPKeyKeepsNothingInTheStore() throws {
        var settings = Identity(name: "orders", tokenUrl: HTTPURL(scheme: .http, host: "127.0.0.1", port: 9, path: "/token"),
                                grant: .clientCredentials, clientAuth: .publicClient(id: "c"))
        settings.dpop = .generatedKey(.es256)
        let tokens = IdentityTokens(identity: settings, slot: 5)
        let persistence = try persistence()
        let now = monotonicSeconds()
        persistence.write(HeldTokens(token: AccessToken(value: "at", type: "DPoP", issuedAt: now, expiresAt: now + 60, refreshAt: now + 50),
                                     refreshToken: Secret("rt")), for: tokens)
        XCTAssertNil(persistence.read(tokens).token)
        var locked = false
        persistence.withLock(tokens, until: now + 1, locked: { locked = true }, timedOut: {})
        XCTAssertTrue(locked, "at once, without a lock")
        XCTAssertFalse(persistence.holdsLock(tokens))
        XCTAssertEqual(operations.entries, [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory + "/identity-orders.token"))
    }

    func testAnEntryForOtherSettingsReadsAsNothing() throws {
        let now = monotonicSeconds()
        try persistence().write(HeldTokens(token: AccessToken(value: "at", issuedAt: now, expiresAt: now + 60, refreshAt: now + 50),
                                           refreshToken: Secret("rt")), for: identity(scope: "a"))
        let read = try persistence().read(identity(scope: "b"))
        XCTAssertNil(read.token)
        XCTAssertNil(read.refreshToken)
    }

    /// The lock held elsewhere: `locked` runs only after it is released, on the loop's timer,
    /// and a deadline passed gives `timedOut`.
    func testABusyLockIsPolledOnTheLoopUntilFree() throws {
        let persistence = try persistence()
        let other = try XCTUnwrap(try TokenStore(path: directory, key: SymmetricKey([UInt8](repeating: 3, count: 32))).tryLock(identity: "orders"))
        var events: [String] = []
        persistence.withLock(identity(), until: monotonicSeconds() + 30, locked: { events.append("locked") }, timedOut: { events.append("timed out") })
        XCTAssertEqual(events, [], "it must not block nor run while the lock is held")
        let release = LoopTimer(loop: loop) { other.release() }
        release.start(afterMilliseconds: 30)
        test.run(until: "the lock is taken or the wait timed out") { !events.isEmpty }
        XCTAssertEqual(events, ["locked"])
        persistence.unlock(identity())
        persistence.stop()
        release.close()
    }

    func testADeadlinePassedWhileLockedTimesOut() throws {
        let persistence = try persistence()
        let other = try XCTUnwrap(try TokenStore(path: directory, key: SymmetricKey([UInt8](repeating: 3, count: 32))).tryLock(identity: "orders"))
        var events: [String] = []
        persistence.withLock(identity(), until: monotonicSeconds() - 1, locked: { events.append("locked") }, timedOut: { events.append("timed out") })
        XCTAssertEqual(events, ["timed out"])
        withExtendedLifetime(other) {}
        persistence.stop()
    }
}

/// The store operations told to a `TokenObserver`, as "identity operation outcome".
private final class OperationLog: TokenObserver {
    private let lines = Mutex<[String]>([])

    var entries: [String] { lines.withLock { $0 } }

    func tokenStoreOperation(identity: String, operation: String, outcome: String) {
        lines.withLock { $0.append("\(identity) \(operation) \(outcome)") }
    }

    func tokenRequestEnded(identity: String, outcome: TokenRequestOutcome) {}
    func tokenExpiryChanged(identity: String, unixTime: Double?) {}
    func identityRemoved(_ name: String) {}
}
