import Synchronization
import Foundation
import TLS
import TokenStore
import XCTest

final class EntryLockTests: XCTestCase {
    var directory: TemporaryDirectory!
    var store: TokenStore!

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        store = try TokenStore(path: directory.path + "/store", key: SymmetricKey([UInt8](repeating: 7, count: 32)))
    }

    override func tearDown() {
        directory.remove()
    }

    func testASecondHolderIsRefusedUntilTheFirstReleases() throws {
        let first = try XCTUnwrap(try store.tryLock(identity: "orders"))
        XCTAssertNil(try store.tryLock(identity: "orders"))
        // Another identity's entry is not affected.
        XCTAssertNotNil(try store.tryLock(identity: "billing"))
        first.release()
        XCTAssertNotNil(try store.tryLock(identity: "orders"))
        XCTAssertEqual(try directory.mode(of: "store/identity-orders.lock"), 0o600)
    }

    func testALockGoesWithItsValue() throws {
        do {
            let held = try store.tryLock(identity: "orders")
            XCTAssertNotNil(held)
            XCTAssertNil(try store.tryLock(identity: "orders"))
        }
        XCTAssertNotNil(try store.tryLock(identity: "orders"))
    }

    func testWaitingForABusyLockTimesOut() throws {
        let held = try store.tryLock(identity: "orders")
        XCTAssertThrowsError(try store.lock(identity: "orders", timeout: 0.05)) {
            guard case .lockTimedOut = $0 as? StoreError else { return XCTFail("\($0)") }
        }
        withExtendedLifetime(held) {}
    }

    /// Two threads contend: the second waits while the first holds the lock, and gets it once
    /// the first releases. The order is forced with semaphores, not timing.
    func testTwoThreadsContendingTakeTurns() throws {
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        let store = self.store!
        let events = EventLog()
        Thread.detachNewThread {
            let lock = try! store.lock(identity: "orders", timeout: 5)
            events.append("first holds")
            held.signal()
            release.wait()
            events.append("first releases")
            lock.release()
            done.signal()
        }
        held.wait()
        XCTAssertNil(try store.tryLock(identity: "orders"))
        Thread.detachNewThread {
            let lock = try! store.lock(identity: "orders", timeout: 5)
            events.append("second holds")
            lock.release()
            done.signal()
        }
        release.signal()
        done.wait()
        done.wait()
        XCTAssertEqual(events.entries, ["first holds", "first releases", "second holds"])
    }

    /// Another process (util-linux `flock`) cannot take the lock while this one holds it, and
    /// can once it is released.
    func testAnotherProcessIsExcluded() throws {
        let path = directory.path + "/store/identity-orders.lock"
        let lock = try XCTUnwrap(try store.tryLock(identity: "orders"))
        XCTAssertEqual(try runFlock(path), 1)
        lock.release()
        XCTAssertEqual(try runFlock(path), 0)
    }

    private func runFlock(_ path: String) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        process.arguments = ["--nonblock", "--conflict-exit-code", "1", path, "true"]
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Lines appended from several threads.
private final class EventLog: Sendable {
    private let lines = Mutex<[String]>([])

    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var entries: [String] { lines.withLock { $0 } }
}
