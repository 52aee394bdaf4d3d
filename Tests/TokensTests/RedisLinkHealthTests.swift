@testable import Tokens
import XCTest

/// When the shared store is usable, when to reconnect, and when to log: once per outage.
final class RedisLinkHealthTests: XCTestCase {
    func testOnlyTheFirstConnectionIsWaitedFor() {
        var health = RedisLinkHealth()
        XCTAssertEqual(health.link, .opening)
        _ = health.lost(random: 0, at: 0)
        XCTAssertEqual(health.link, .down)
        health.reconnecting()
        XCTAssertEqual(health.link, .down, "a reconnection is not waited for")
        XCTAssertTrue(health.connected(at: 1), "the outage the failed first attempt began ends")
        XCTAssertEqual(health.link, .ready)
    }

    func testAnOutageIsLoggedOnceAndItsEndOnce() {
        var health = RedisLinkHealth()
        XCTAssertFalse(health.connected(at: 0))
        XCTAssertEqual(health.link, .ready)
        XCTAssertFalse(health.lost(random: 0, at: 60).beginsOutage, "first a quiet reconnection")
        health.reconnecting()
        XCTAssertTrue(health.lost(random: 0, at: 60).beginsOutage)
        health.reconnecting()
        XCTAssertFalse(health.lost(random: 0, at: 61).beginsOutage)
        health.reconnecting()
        XCTAssertFalse(health.lost(random: 0, at: 62).beginsOutage)
        health.reconnecting()
        XCTAssertTrue(health.connected(at: 63))
        XCTAssertFalse(health.succeeded())
    }

    func testRefusedCommandsAreAnOutageUntilOneSucceeds() {
        var health = RedisLinkHealth()
        _ = health.connected(at: 0)
        XCTAssertTrue(health.refused())
        XCTAssertFalse(health.refused())
        XCTAssertEqual(health.link, .ready, "the link itself is up")
        XCTAssertTrue(health.succeeded())
        XCTAssertFalse(health.succeeded())
    }

    func testReconnectionsBackOffUpToTwoSeconds() {
        var health = RedisLinkHealth()
        let delays = (0..<7).map { _ in health.lost(random: 0, at: 0).retryAfter }
        XCTAssertEqual(delays, [0.1, 0.2, 0.4, 0.8, 1.6, 2, 2])
        XCTAssertEqual(health.lost(random: 0.999, at: 0).retryAfter, 1, accuracy: 0.01, "jitter takes up to half off")
        _ = health.connected(at: 10)
        XCTAssertEqual(health.lost(random: 0, at: 20).retryAfter, 0, "a link that was up is reconnected at once")
        health.reconnecting()
        XCTAssertEqual(health.lost(random: 0, at: 20).retryAfter, 0.1, "a working connection reset the backoff")
    }

    func testAServerClosingAnIdleConnectionIsNoOutage() {
        var health = RedisLinkHealth()
        _ = health.connected(at: 0)
        let lost = health.lost(random: 0, at: 300)
        XCTAssertFalse(lost.beginsOutage)
        XCTAssertEqual(lost.retryAfter, 0)
        XCTAssertEqual(health.link, .down, "fetches meanwhile go alone")
        health.reconnecting()
        XCTAssertFalse(health.connected(at: 300.01), "nothing to log")
        XCTAssertEqual(health.lost(random: 0, at: 600).retryAfter, 0, "the next idle close is as quiet")
    }

    /// The reconnection storm: a server (or a proxy in front of it) that accepts each connection
    /// and drops it as soon as it is ready must not be reconnected to in a loop as fast as the
    /// network goes; its attempts back off as for a server that refuses them.
    func testAServerDroppingEachConnectionAsSoonAsItIsReadyIsRetriedWithBackoff() {
        var health = RedisLinkHealth()
        var now = 0.0
        var delays: [Double] = []
        for _ in 0..<8 {
            _ = health.connected(at: now)
            now += 0.001
            let lost = health.lost(random: 0, at: now)
            delays.append(lost.retryAfter)
            health.reconnecting()
            now += lost.retryAfter
        }
        XCTAssertEqual(delays, [0.1, 0.2, 0.4, 0.8, 1.6, 2, 2, 2])
        XCTAssertGreaterThan(now, 9, "eight attempts take seconds, not microseconds")
    }

    func testALinkThatStaysUpAfterAStormIsTrustedAgain() {
        var health = RedisLinkHealth()
        for second in 0..<5 {
            _ = health.connected(at: Double(second))
            _ = health.lost(random: 0, at: Double(second) + 0.01)
            health.reconnecting()
        }
        _ = health.connected(at: 10)
        XCTAssertEqual(health.lost(random: 0, at: 20).retryAfter, 0, "up for ten seconds: an idle close, reconnected at once")
        health.reconnecting()
        XCTAssertEqual(health.lost(random: 0, at: 20).retryAfter, 0.1, "and the backoff starts over")
    }
}
