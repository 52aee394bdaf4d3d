@testable import Tokens
import XCTest

/// When the shared store is usable, when to reconnect, and when to log: once per outage.
final class RedisLinkHealthTests: XCTestCase {
    func testOnlyTheFirstConnectionIsWaitedFor() {
        var health = RedisLinkHealth()
        XCTAssertEqual(health.link, .opening)
        _ = health.lost(random: 0)
        XCTAssertEqual(health.link, .down)
        health.reconnecting()
        XCTAssertEqual(health.link, .down, "a reconnection is not waited for")
        XCTAssertTrue(health.connected(), "the outage the failed first attempt began ends")
        XCTAssertEqual(health.link, .ready)
    }

    func testAnOutageIsLoggedOnceAndItsEndOnce() {
        var health = RedisLinkHealth()
        XCTAssertFalse(health.connected())
        XCTAssertEqual(health.link, .ready)
        XCTAssertFalse(health.lost(random: 0).beginsOutage, "first a quiet reconnection")
        health.reconnecting()
        XCTAssertTrue(health.lost(random: 0).beginsOutage)
        health.reconnecting()
        XCTAssertFalse(health.lost(random: 0).beginsOutage)
        health.reconnecting()
        XCTAssertFalse(health.lost(random: 0).beginsOutage)
        health.reconnecting()
        XCTAssertTrue(health.connected())
        XCTAssertFalse(health.succeeded())
    }

    func testRefusedCommandsAreAnOutageUntilOneSucceeds() {
        var health = RedisLinkHealth()
        _ = health.connected()
        XCTAssertTrue(health.refused())
        XCTAssertFalse(health.refused())
        XCTAssertEqual(health.link, .ready, "the link itself is up")
        XCTAssertTrue(health.succeeded())
        XCTAssertFalse(health.succeeded())
    }

    func testReconnectionsBackOffUpToTwoSeconds() {
        var health = RedisLinkHealth()
        let delays = (0..<7).map { _ in health.lost(random: 0).retryAfter }
        XCTAssertEqual(delays, [0.1, 0.2, 0.4, 0.8, 1.6, 2, 2])
        XCTAssertEqual(health.lost(random: 0.999).retryAfter, 1, accuracy: 0.01, "jitter takes up to half off")
        _ = health.connected()
        XCTAssertEqual(health.lost(random: 0).retryAfter, 0, "a link that was up is reconnected at once")
        health.reconnecting()
        XCTAssertEqual(health.lost(random: 0).retryAfter, 0.1, "a working connection reset the backoff")
    }

    func testAServerClosingAnIdleConnectionIsNoOutage() {
        var health = RedisLinkHealth()
        _ = health.connected()
        let lost = health.lost(random: 0)
        XCTAssertFalse(lost.beginsOutage)
        XCTAssertEqual(lost.retryAfter, 0)
        XCTAssertEqual(health.link, .down, "fetches meanwhile go alone")
        health.reconnecting()
        XCTAssertFalse(health.connected(), "nothing to log")
    }
}
