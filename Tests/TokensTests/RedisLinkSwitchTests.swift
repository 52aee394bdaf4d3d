import RedisClient
import RedisProtocol
@testable import Tokens
import XCTest

/// RedisLink's and SentinelWatch's small decisions: which `+switch-master` moves the link, which
/// refusal names the password file, and where the next round of questions starts.
final class RedisLinkSwitchTests: XCTestCase {
    private let master = RedisEndpoint(host: "10.0.0.1", port: 6379)

    func testTheSameSwitchHeardAgainLeavesAReadyLinkAlone() {
        XCTAssertFalse(RedisLink.switchNeeded(to: RedisEndpoint(host: "10.0.0.1", port: 6379, database: 2), current: master, ready: true),
                       "the link is up on it already (the switch came through another sentinel first)")
        XCTAssertTrue(RedisLink.switchNeeded(to: RedisEndpoint(host: "10.0.0.2", port: 6379), current: master, ready: true))
        XCTAssertTrue(RedisLink.switchNeeded(to: RedisEndpoint(host: "10.0.0.1", port: 6380), current: master, ready: true))
        XCTAssertTrue(RedisLink.switchNeeded(to: master, current: master, ready: false), "not up: the switch opens it")
        XCTAssertTrue(RedisLink.switchNeeded(to: master, current: nil, ready: true))
    }

    func testOnlyARefusedAuthNamesThePasswordFile() {
        XCTAssertTrue(RedisLink.refusedAuth(.refused("AUTH: WRONGPASS invalid username-password pair or user is disabled.")))
        XCTAssertFalse(RedisLink.refusedAuth(.refused("the sentinels named a server whose ROLE is slave, not master")))
        XCTAssertFalse(RedisLink.refusedAuth(.refused("the master became a replica (EVALSHA answered READONLY); asking the sentinels for the new master")))
        XCTAssertFalse(RedisLink.refusedAuth(.refused("SELECT: ERR DB index is out of range")))
        XCTAssertFalse(RedisLink.refusedAuth(.unreachable("connection refused")))
    }

    func testARoundAfterAnUnusableMasterStartsAtTheNextSentinel() {
        XCTAssertEqual(SentinelWatch.firstAfterUnusable(0, count: 3), 1)
        XCTAssertEqual(SentinelWatch.firstAfterUnusable(2, count: 3), 0)
        XCTAssertEqual(SentinelWatch.firstAfterUnusable(0, count: 1), 0)
    }
}
