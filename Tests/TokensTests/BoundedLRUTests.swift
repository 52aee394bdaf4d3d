import Tokens
import XCTest

/// The bound on what the relay keeps per caller: at most `capacity` entries, the least recently
/// used forgotten first, slots reused.
final class BoundedLRUTests: XCTestCase {
    func testTheLeastRecentlyUsedEntryIsForgottenFirst() {
        var lru = BoundedLRU<String, Int>(capacity: 3)
        XCTAssertNil(lru.set(1, for: "a"))
        XCTAssertNil(lru.set(2, for: "b"))
        XCTAssertNil(lru.set(3, for: "c"))
        XCTAssertEqual(lru.keysByRecency, ["c", "b", "a"])
        XCTAssertEqual(lru.value(for: "a"), 1, "a becomes the most recent")
        XCTAssertEqual(lru.keysByRecency, ["a", "c", "b"])
        let evicted = lru.set(4, for: "d")
        XCTAssertEqual(evicted?.key, "b")
        XCTAssertEqual(evicted?.value, 2)
        XCTAssertEqual(lru.keysByRecency, ["d", "a", "c"])
        XCTAssertNil(lru.peek("b"))
        XCTAssertEqual(lru.count, 3)
    }

    func testSettingAKnownKeyReplacesItsValueAndMakesItRecent() {
        var lru = BoundedLRU<String, Int>(capacity: 2)
        lru.set(1, for: "a")
        lru.set(2, for: "b")
        XCTAssertNil(lru.set(10, for: "a"), "no eviction for a key already held")
        XCTAssertEqual(lru.keysByRecency, ["a", "b"])
        XCTAssertEqual(lru.peek("a"), 10)
        XCTAssertEqual(lru.keysByRecency, ["a", "b"], "peek changes no order")
    }

    func testRemoveOldestForgetsTheLeastRecentlyUsedEntry() {
        var lru = BoundedLRU<String, Int>(capacity: 3)
        XCTAssertNil(lru.removeOldest(), "nothing held")
        for (value, key) in [(1, "a"), (2, "b"), (3, "c")] { lru.set(value, for: key) }
        _ = lru.value(for: "a")
        let removed = lru.removeOldest()
        XCTAssertEqual(removed?.key, "b")
        XCTAssertEqual(removed?.value, 2)
        XCTAssertEqual(lru.keysByRecency, ["a", "c"])
        XCTAssertNil(lru.set(4, for: "d"), "room without eviction")
        XCTAssertEqual(lru.keysByRecency, ["d", "a", "c"])
    }

    func testRemovalFreesASlotForTheNextEntry() {
        var lru = BoundedLRU<Int, Int>(capacity: 3)
        for key in 0..<3 { lru.set(key, for: key) }
        XCTAssertEqual(lru.remove(1), 1)
        XCTAssertNil(lru.remove(1))
        XCTAssertEqual(lru.keysByRecency, [2, 0])
        XCTAssertNil(lru.set(7, for: 7), "room without eviction")
        XCTAssertEqual(lru.keysByRecency, [7, 2, 0])
        XCTAssertEqual(lru.remove(0), 0, "the oldest")
        XCTAssertEqual(lru.remove(7), 7, "the newest")
        XCTAssertEqual(lru.keysByRecency, [2])
        XCTAssertEqual(lru.remove(2), 2)
        XCTAssertEqual(lru.keysByRecency, [])
        lru.set(1, for: 1)
        XCTAssertEqual(lru.keysByRecency, [1])
    }

    func testTheCountStaysAtTheBoundHoweverManyKeysPass() {
        var lru = BoundedLRU<Int, [UInt8]>(capacity: 100)
        for key in 0..<10_000 { lru.set([UInt8](repeating: 1, count: 8), for: key) }
        XCTAssertEqual(lru.count, 100)
        XCTAssertEqual(lru.keysByRecency, Array((9_900..<10_000).reversed()))
    }
}
