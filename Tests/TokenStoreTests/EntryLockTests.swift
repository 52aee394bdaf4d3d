import Crypto
import FileTestSupport
import Foundation
import Glibc
import Synchronization
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
    /// the first releases. The order is forced, not left to timing: the first releases only once
    /// the second was refused (inotify sees it open and close the lock file: a failed try), and
    /// every wait is bounded.
    func testTwoThreadsContendingTakeTurns() throws {
        let store = self.store!
        let events = EventLog()
        let first = try XCTUnwrap(try store.tryLock(identity: "orders"))
        events.append("first holds")
        let attempts = try FileCloseWatch(path: directory.path + "/store/identity-orders.lock")
        defer { attempts.close() }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            if let lock = try? store.lock(identity: "orders", timeout: 10) {
                events.append("second holds")
                lock.release()
            } else {
                events.append("second timed out")
            }
            done.signal()
        }
        XCTAssertTrue(attempts.waitForClose(milliseconds: 5000), "the second thread never tried the lock")
        events.append("first releases")
        first.release()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "the second thread did not finish")
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

/// inotify on one file: tells when a descriptor opened for writing on it is closed (another
/// thread's `open` and `close` of it, which a refused `EntryLock.tryAcquire` does).
private final class FileCloseWatch {
    private let descriptor: Int32

    init(path: String) throws {
        descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0, inotify_add_watch(descriptor, path, UInt32(IN_CLOSE_WRITE)) >= 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    /// Waits at most `milliseconds` for a close of the file; whether one came.
    func waitForClose(milliseconds: Int32) -> Bool {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, milliseconds) == 1 else { return false }
        var buffer = [UInt8](repeating: 0, count: 4096)
        return read(descriptor, &buffer, buffer.count) > 0
    }

    func close() {
        Glibc.close(descriptor)
    }
}
