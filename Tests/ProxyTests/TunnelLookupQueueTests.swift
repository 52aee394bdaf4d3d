@testable import Proxy
import XCTest

/// The decisions behind the tunnels' name lookups, without sockets: how many run at once, who
/// waits and in which order, who is refused, what a cancelled lookup frees, and the cache.
final class TunnelLookupQueueTests: XCTestCase {
    func testTwoRunTheNextWaitInOrderAndBeyondTheLineTheyAreRefused() {
        var queue = TunnelLookupQueue<Int>(maxRunning: 2, maxWaiting: 3)
        XCTAssertEqual((0..<7).map { queue.admit($0) }, [.start, .start, .wait, .wait, .wait, .refuse, .refuse])
        XCTAssertEqual(queue.running, 2)
        XCTAssertEqual(queue.waiting, [2, 3, 4])
        // Each finished lookup hands its place to the first in line; the running count holds.
        XCTAssertEqual(queue.finish(), 2)
        XCTAssertEqual(queue.finish(), 3)
        XCTAssertEqual(queue.running, 2)
        XCTAssertEqual(queue.admit(7), .wait)
        XCTAssertEqual(queue.finish(), 4)
        XCTAssertEqual(queue.finish(), 7)
        XCTAssertNil(queue.finish())
        XCTAssertEqual(queue.running, 1)
        XCTAssertNil(queue.finish())
        XCTAssertEqual(queue.running, 0)
        XCTAssertEqual(queue.admit(8), .start)
    }

    /// A tunnel that gave up leaves the line; a running lookup cannot be taken back: its place
    /// is freed only when it returns.
    func testACancelledLookupLeavesTheLineButARunningOneKeepsItsPlaceUntilItReturns() {
        var queue = TunnelLookupQueue<Int>(maxRunning: 1, maxWaiting: 2)
        XCTAssertEqual(queue.admit(0), .start)
        XCTAssertEqual(queue.admit(1), .wait)
        XCTAssertEqual(queue.admit(2), .wait)
        XCTAssertEqual(queue.admit(3), .refuse)
        XCTAssertTrue(queue.cancelWaiting(1))
        XCTAssertFalse(queue.cancelWaiting(1))
        XCTAssertFalse(queue.cancelWaiting(0), "a running lookup is not in the line")
        XCTAssertEqual(queue.admit(3), .wait)
        XCTAssertEqual(queue.running, 1)
        XCTAssertEqual(queue.finish(), 2)
        XCTAssertEqual(queue.finish(), 3)
        XCTAssertNil(queue.finish())
        XCTAssertEqual(queue.running, 0)
    }

    func testTheCacheAnswersUntilTheEntryExpires() {
        var cache = TunnelResolutionCache<String>(capacity: 2)
        cache.store(["192.0.2.1"], of: "a.test", at: 1000, forMilliseconds: 500)
        XCTAssertEqual(cache.addresses(of: "a.test", at: 1499), ["192.0.2.1"])
        XCTAssertNil(cache.addresses(of: "a.test", at: 1500))
        XCTAssertNil(cache.addresses(of: "b.test", at: 1000))
        // `dnsCacheSeconds` 0 keeps nothing, and an empty answer is never kept.
        cache.store(["192.0.2.2"], of: "b.test", at: 1000, forMilliseconds: 0)
        cache.store([], of: "c.test", at: 1000, forMilliseconds: 500)
        XCTAssertNil(cache.addresses(of: "b.test", at: 1000))
        XCTAssertNil(cache.addresses(of: "c.test", at: 1000))
    }

    func testAFullCacheDropsExpiredEntriesThenEverything() {
        var cache = TunnelResolutionCache<String>(capacity: 2)
        cache.store(["1"], of: "a.test", at: 0, forMilliseconds: 100)
        cache.store(["2"], of: "b.test", at: 50, forMilliseconds: 100)
        cache.store(["3"], of: "c.test", at: 120, forMilliseconds: 100)
        XCTAssertEqual(cache.count, 2)
        XCTAssertNil(cache.addresses(of: "a.test", at: 120))
        XCTAssertEqual(cache.addresses(of: "b.test", at: 120), ["2"])
        XCTAssertEqual(cache.addresses(of: "c.test", at: 120), ["3"])
        cache.store(["4"], of: "d.test", at: 130, forMilliseconds: 100)
        XCTAssertEqual(cache.count, 1)
        XCTAssertEqual(cache.addresses(of: "d.test", at: 130), ["4"])
        // Storing a name already there replaces it without evicting.
        cache.store(["5"], of: "d.test", at: 140, forMilliseconds: 100)
        XCTAssertEqual(cache.addresses(of: "d.test", at: 140), ["5"])
    }
}
