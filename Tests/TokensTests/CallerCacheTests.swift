import OAuth2
@testable import Tokens
import XCTest

/// The per-caller cache (CallerCache.swift) as a pure state machine: single flight per caller, the
/// LRU bound that never drops an entry with waiters, reuse until the earlier expiry, remembered
/// refusals and an upstream's refusal of a caller's token.
final class CallerCacheTests: XCTestCase {
    /// Stands for a worker loop's wake-up.
    private final class Waiter {}

    private let first = Waiter(), second = Waiter()

    private func key(_ number: UInt8) -> CallerKey {
        CallerKey(digest: [UInt8](repeating: number, count: 32))!
    }

    private func issued(_ value: String, at issuedAt: Double = 0, reuseUntil: Double = 100) -> CallerCache<Waiter>.Outcome {
        .issued(value: value, issuedAt: issuedAt, expiresAt: reuseUntil + 10, reuseUntil: reuseUntil)
    }

    private func refusal(_ code: String) -> CallerRefusal {
        CallerRefusal(.oauth(OAuthError(code: OAuthErrorCode(code)), status: 400, retryAfter: nil), identity: "orders")
    }

    /// The cache after `key` got `token`.
    private func cache(capacity: Int = 10, holding keys: [CallerKey], reuseUntil: Double = 100) -> CallerCache<Waiter> {
        var cache = CallerCache<Waiter>(capacity: capacity)
        for (index, key) in keys.enumerated() {
            _ = cache.lookup(key, at: 0, waiter: first)
            _ = cache.publish(key, issued("token-\(index)", reuseUntil: reuseUntil))
        }
        return cache
    }

    private func assertWaits(_ lookup: CallerCache<Waiter>.Lookup, exchange: Bool, file: StaticString = #filePath, line: UInt = #line) {
        guard case .wait(let began) = lookup else { return XCTFail("expected a wait, got \(lookup)", file: file, line: line) }
        XCTAssertEqual(began, exchange, "whether this lookup began the exchange", file: file, line: line)
    }

    private func token(_ lookup: CallerCache<Waiter>.Lookup, file: StaticString = #filePath, line: UInt = #line) -> String? {
        guard case .hit(let token) = lookup else {
            XCTFail("expected a hit, got \(lookup)", file: file, line: line)
            return nil
        }
        return token.value
    }

    // MARK: Single flight

    func testTheFirstLookupOfACallerBeginsTheExchangeAndTheOthersJoinIt() {
        var cache = CallerCache<Waiter>(capacity: 10)
        assertWaits(cache.lookup(key(1), at: 0, waiter: first), exchange: true)
        assertWaits(cache.lookup(key(1), at: 0, waiter: second), exchange: false)
        assertWaits(cache.lookup(key(1), at: 0, waiter: first), exchange: false)
        XCTAssertEqual(cache.fetchingCount, 1)
        let woken = cache.publish(key(1), issued("t1"))
        XCTAssertEqual(woken.count, 2, "each waiting loop is woken once")
        XCTAssertTrue(woken.contains { $0 === first } && woken.contains { $0 === second })
        XCTAssertEqual(token(cache.lookup(key(1), at: 1, waiter: first)), "t1")
        XCTAssertEqual(cache.fetchingCount, 0)
        XCTAssertEqual(cache.counts, .init(hits: 1, misses: 1, waits: 2, evictions: 0))
    }

    func testAParkedRequestAskingAgainIsNotCountedTwice() {
        var cache = CallerCache<Waiter>(capacity: 10)
        assertWaits(cache.lookup(key(1), at: 0, waiter: first), exchange: true)
        assertWaits(cache.lookup(key(1), at: 0, waiter: first, counted: false), exchange: false)
        _ = cache.publish(key(1), issued("t1"))
        XCTAssertEqual(token(cache.lookup(key(1), at: 0, waiter: first, counted: false)), "t1")
        XCTAssertEqual(cache.counts, .init(hits: 0, misses: 1, waits: 0, evictions: 0))
        XCTAssertEqual(cache.refused(key(1), token: "t1", at: 1, minimumAge: 0), .dropped)
        assertWaits(cache.lookup(key(1), at: 1, waiter: first, counted: false), exchange: true)
        XCTAssertEqual(cache.counts.misses, 2, "a replay's exchange is a miss all the same")
    }

    func testEachCallerHasItsOwnExchange() {
        var cache = CallerCache<Waiter>(capacity: 10)
        assertWaits(cache.lookup(key(1), at: 0, waiter: first), exchange: true)
        assertWaits(cache.lookup(key(2), at: 0, waiter: first), exchange: true)
        XCTAssertEqual(cache.publish(key(2), issued("t2")).count, 1)
        assertWaits(cache.lookup(key(1), at: 0, waiter: second), exchange: false)
        XCTAssertEqual(token(cache.lookup(key(2), at: 0, waiter: second)), "t2")
    }

    func testAPublishWithNoExchangeInFlightChangesNothing() {
        var cache = self.cache(holding: [key(1)])
        XCTAssertTrue(cache.publish(key(1), issued("other")).isEmpty)
        XCTAssertTrue(cache.publish(key(9), issued("nobody")).isEmpty)
        XCTAssertEqual(token(cache.lookup(key(1), at: 0, waiter: first)), "token-0")
        XCTAssertEqual(cache.count, 1)
    }

    // MARK: The LRU bound

    func testTheLeastRecentlyUsedCallerMakesWayForANewOne() {
        var cache = self.cache(capacity: 3, holding: [key(1), key(2), key(3)])
        _ = cache.lookup(key(1), at: 0, waiter: first)  // 1 is now the most recent; 2 the least
        assertWaits(cache.lookup(key(4), at: 0, waiter: first), exchange: true)
        XCTAssertEqual(cache.keysByRecency, [key(1), key(3)])
        XCTAssertEqual(cache.fetchingKeys, [key(4)])
        XCTAssertEqual(cache.count, 3)
        XCTAssertEqual(cache.counts.evictions, 1)
        assertWaits(cache.lookup(key(2), at: 0, waiter: first), exchange: true)
        XCTAssertEqual(cache.keysByRecency, [key(1)], "3 was the least recently used")
        XCTAssertEqual(cache.fetchingKeys, [key(4), key(2)])
        _ = cache.publish(key(4), issued("t4"))
        XCTAssertEqual(cache.keysByRecency, [key(4), key(1)], "an exchange's end makes its entry the most recent")
    }

    func testEvictionNeverDropsAnEntryWithWaiters() {
        var cache = CallerCache<Waiter>(capacity: 2)
        assertWaits(cache.lookup(key(1), at: 0, waiter: first), exchange: true)  // the oldest, fetching
        _ = cache.lookup(key(2), at: 0, waiter: first)
        _ = cache.publish(key(2), issued("t2"))
        assertWaits(cache.lookup(key(3), at: 0, waiter: second), exchange: true)
        XCTAssertEqual(cache.fetchingKeys, [key(3), key(1)], "the issued entry went, not the fetching one")
        XCTAssertEqual(cache.keysByRecency, [])
        guard case .full = cache.lookup(key(4), at: 0, waiter: second) else { return XCTFail("expected no room") }
        XCTAssertEqual(cache.count, 2)
        XCTAssertEqual(cache.publish(key(1), issued("t1")).count, 1, "the waiter of the oldest entry is still woken")
        assertWaits(cache.lookup(key(4), at: 0, waiter: second), exchange: true)
        XCTAssertEqual(cache.fetchingKeys, [key(4), key(3)])
        XCTAssertEqual(cache.keysByRecency, [])
    }

    /// Making room never passes over the entries whose exchange is under way: with all but one of
    /// 5000 callers mid-exchange (the IdP stalls), each new caller costs one entry looked at, and
    /// one more when every entry is fetching costs none (`full` at once).
    func testMakingRoomLooksAtOneEntryHoweverManyAreFetching() {
        let capacity = 5000
        var cache = CallerCache<Waiter>(capacity: capacity)
        func numbered(_ number: Int) -> CallerKey {
            var digest = [UInt8](repeating: 0xee, count: 32)
            digest[0] = UInt8(number & 0xff)
            digest[1] = UInt8(number >> 8 & 0xff)
            digest[2] = UInt8(number >> 16 & 0xff)
            return CallerKey(digest: digest)!
        }
        for number in 0..<capacity { _ = cache.lookup(numbered(number), at: 0, waiter: first) }
        guard case .full = cache.lookup(numbered(capacity), at: 0, waiter: first) else { return XCTFail("expected no room") }
        XCTAssertEqual(cache.entriesLookedAtForRoom, 0, "full is answered without looking")
        // One exchange ends at a time (the newest first, so the fetching entries are the oldest);
        // a new caller takes its place.
        var newest = capacity - 1
        for round in 1...200 {
            _ = cache.publish(numbered(newest), issued("t"))
            newest = capacity + round
            assertWaits(cache.lookup(numbered(newest), at: 0, waiter: first), exchange: true)
            guard case .full = cache.lookup(numbered(newest + 100_000), at: 0, waiter: first) else { return XCTFail("expected no room") }
        }
        XCTAssertEqual(cache.counts.evictions, 200)
        XCTAssertLessThanOrEqual(cache.entriesLookedAtForRoom, 200)
        XCTAssertEqual(cache.count, capacity)
    }

    func testManyCallersStayWithinTheBound() {
        var cache = CallerCache<Waiter>(capacity: 100)
        for number in 0..<2000 {
            var digest = [UInt8](repeating: 0, count: 32)
            digest[0] = UInt8(number & 0xff)
            digest[1] = UInt8(number >> 8)
            let key = CallerKey(digest: digest)!
            _ = cache.lookup(key, at: 0, waiter: first)
            _ = cache.publish(key, issued("t\(number)"))
            XCTAssertLessThanOrEqual(cache.count, 100)
        }
        XCTAssertEqual(cache.counts.evictions, 1900)
        XCTAssertEqual(cache.keysByRecency.count, 100)
    }

    func testForgettingEveryCallerKeepsTheExchangesInFlight() {
        var cache = self.cache(holding: [key(1), key(2)])
        assertWaits(cache.lookup(key(3), at: 0, waiter: second), exchange: true)
        cache.removeAll()
        XCTAssertEqual(cache.keysByRecency, [])
        XCTAssertEqual(cache.fetchingKeys, [key(3)])
        XCTAssertEqual(cache.publish(key(3), issued("t3")).count, 1)
        assertWaits(cache.lookup(key(1), at: 0, waiter: first), exchange: true)
    }

    // MARK: Reuse, and refusals remembered

    func testATokenIsReusedUntilItsReuseTimeThenExchangedAgain() {
        var cache = self.cache(holding: [key(1)], reuseUntil: 100)
        XCTAssertEqual(token(cache.lookup(key(1), at: 99.9, waiter: first)), "token-0")
        assertWaits(cache.lookup(key(1), at: 100, waiter: first), exchange: true)
        assertWaits(cache.lookup(key(1), at: 100, waiter: second), exchange: false)
    }

    func testARefusalIsRememberedForItsCallerUntilItEnds() {
        var cache = CallerCache<Waiter>(capacity: 10)
        _ = cache.lookup(key(1), at: 0, waiter: first)
        XCTAssertEqual(cache.publish(key(1), .refused(refusal("invalid_grant"), until: 10)).count, 1)
        guard case .refused(let problem) = cache.lookup(key(1), at: 9, waiter: first) else { return XCTFail("expected the refusal") }
        XCTAssertEqual(problem.status, 401)
        XCTAssertEqual(problem.oauthError, "invalid_grant")
        assertWaits(cache.lookup(key(2), at: 9, waiter: first), exchange: true)
        assertWaits(cache.lookup(key(1), at: 10, waiter: first), exchange: true)
    }

    // MARK: An upstream refused a caller's token

    func testAnUpstreamRefusalDropsThatCallersTokenOnly() {
        var cache = self.cache(holding: [key(1), key(2)])
        XCTAssertEqual(cache.refused(key(1), token: "not-this-one", at: 1, minimumAge: 30), .superseded)
        XCTAssertEqual(cache.refused(key(1), token: "token-0", at: 1, minimumAge: 30), .dropped)
        XCTAssertEqual(cache.refused(key(1), token: "token-0", at: 1, minimumAge: 30), .superseded, "a burst of refusals drops it once")
        assertWaits(cache.lookup(key(1), at: 1, waiter: first), exchange: true)
        XCTAssertEqual(token(cache.lookup(key(2), at: 1, waiter: first)), "token-1")
    }

    func testTheExchangeAfterARefusalKnowsTheRefusedToken() {
        var cache = self.cache(holding: [key(1), key(2)])
        XCTAssertNil(cache.refusedToken(key(1)), "not in flight")
        XCTAssertEqual(cache.refused(key(1), token: "token-0", at: 1, minimumAge: 30), .dropped)
        assertWaits(cache.lookup(key(1), at: 1, waiter: first), exchange: true)
        XCTAssertEqual(cache.refusedToken(key(1)), "token-0")
        assertWaits(cache.lookup(key(1), at: 1, waiter: second), exchange: false)
        XCTAssertEqual(cache.refusedToken(key(1)), "token-0", "a waiter joining keeps it")
        _ = cache.publish(key(1), issued("again", at: 2))
        XCTAssertNil(cache.refusedToken(key(1)))
        _ = cache.lookup(key(2), at: 400, waiter: first)
        XCTAssertNil(cache.refusedToken(key(2)), "an exchange past reuse is not after a refusal")
    }

    func testATokenExchangedAfterARefusalIsKeptUntilItIsOldEnough() {
        var cache = self.cache(holding: [key(1)])
        XCTAssertEqual(cache.refused(key(1), token: "token-0", at: 1, minimumAge: 30), .dropped)
        _ = cache.lookup(key(1), at: 1, waiter: first)
        _ = cache.publish(key(1), issued("again", at: 2))
        XCTAssertEqual(cache.refused(key(1), token: "again", at: 10, minimumAge: 30), .kept)
        XCTAssertEqual(token(cache.lookup(key(1), at: 10, waiter: first)), "again")
        XCTAssertEqual(cache.refused(key(1), token: "again", at: 32, minimumAge: 30), .dropped)
        _ = cache.lookup(key(1), at: 32, waiter: first)
        _ = cache.publish(key(1), issued("third", at: 33))
        XCTAssertEqual(cache.refused(key(1), token: "third", at: 34, minimumAge: 0), .dropped)
    }

    // MARK: The key and the lifetime

    func testAKeyIsMadeOfA32ByteDigestOnlyAndNeverShowsIt() {
        XCTAssertNil(CallerKey(digest: [UInt8](repeating: 1, count: 31)))
        XCTAssertNil(CallerKey(digest: [UInt8](repeating: 1, count: 33)))
        var other = [UInt8](repeating: 1, count: 32)
        other[31] = 2
        XCTAssertNotEqual(key(1), CallerKey(digest: other))
        XCTAssertEqual("\(key(1))", "CallerKey(…)")
    }

    func testATokenLivesUntilTheEarlierOfItsExpiryAndTheCallerTokens() {
        // Issued at monotonic 1000 (wall clock 1_700_000_000) for 3600 s; the caller's token ends in 600 s.
        let cut = CallerExchanges.lifetime(issuedAt: 1000, expiresIn: 3600, callerExpiry: 1_700_000_600, unixTime: 1_700_000_000, skew: 10)
        XCTAssertEqual(cut.expiresAt, 1600)
        XCTAssertEqual(cut.reuseUntil, 1540, "reused until 10% of the 600 s before")
        let own = CallerExchanges.lifetime(issuedAt: 1000, expiresIn: 300, callerExpiry: 1_700_003_600, unixTime: 1_700_000_000, skew: 10)
        XCTAssertEqual(own.expiresAt, 1300)
        XCTAssertEqual(own.reuseUntil, 1270)
        let unknown = CallerExchanges.lifetime(issuedAt: 1000, expiresIn: 300, callerExpiry: nil, unixTime: 1_700_000_000, skew: 60)
        XCTAssertEqual(unknown.expiresAt, 1300)
        XCTAssertEqual(unknown.reuseUntil, 1240, "the identity's refreshSkewSeconds when it is the larger margin")
        let short = CallerExchanges.lifetime(issuedAt: 1000, expiresIn: 3600, callerExpiry: 1_700_000_000.5, unixTime: 1_700_000_000, skew: 10)
        XCTAssertEqual(short.expiresAt, 1000.5)
        XCTAssertEqual(short.reuseUntil, 1000.5, "never reused past the expiry, whatever the minimum interval")
    }
}
