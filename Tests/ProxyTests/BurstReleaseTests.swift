@testable import Proxy
import XCTest

/// When a worker gives a burst's memory back: frees in, the timer's step out, no clock but the
/// one passed in.
final class BurstReleaseTests: XCTestCase {
    private let settle = BurstRelease.settleMilliseconds
    private let interval = BurstRelease.minimumIntervalMilliseconds

    /// `count` frees at `now`; whether the first of them armed the timer.
    private func free(_ release: inout BurstRelease, _ count: Int, at now: UInt64) -> Bool {
        var armed = false
        for _ in 0..<count where release.freed(now: now) { armed = true }
        return armed
    }

    func testTheFirstFreeArmsTheTimerAndLaterOnesDoNot() {
        var release = BurstRelease()
        XCTAssertTrue(release.freed(now: 100))
        XCTAssertFalse(release.freed(now: 150))
        XCTAssertTrue(release.timerArmed)
        XCTAssertEqual(release.freedSinceTrim, 2)
    }

    func testABurstIsTrimmedOnceTheFreesStoppedForTheSettlingTime() {
        var release = BurstRelease()
        XCTAssertTrue(free(&release, 500, at: 1_000))
        XCTAssertEqual(release.timerFired(now: 1_000 + settle), .trim)
        XCTAssertEqual(release.freedSinceTrim, 0)
        XCTAssertFalse(release.timerArmed)
    }

    func testFreesThatGoOnPutTheTrimOffUntilTheyStop() {
        var release = BurstRelease()
        _ = free(&release, 300, at: 1_000)
        // Still freeing 800 ms later: the burst is ending, not over.
        _ = free(&release, 300, at: 1_800)
        XCTAssertEqual(release.timerFired(now: 2_000), .wait(until: 1_800 + settle))
        XCTAssertTrue(release.timerArmed, "waiting is a timer armed")
        XCTAssertFalse(release.freed(now: 2_100), "a free while it waits arms nothing more")
        XCTAssertEqual(release.timerFired(now: 1_800 + settle), .wait(until: 2_100 + settle))
        XCTAssertEqual(release.timerFired(now: 2_100 + settle), .trim)
    }

    func testAFewFreesAreNotWorthATrim() {
        var release = BurstRelease()
        _ = free(&release, BurstRelease.minimumFreed - 1, at: 1_000)
        XCTAssertEqual(release.timerFired(now: 1_000 + settle), .none)
        XCTAssertEqual(release.freedSinceTrim, 0, "they do not add up to a later burst's")
        XCTAssertTrue(release.freed(now: 5_000), "the next free arms the timer again")
    }

    func testTrimsAreAtLeastTheMinimumIntervalApart() {
        var release = BurstRelease()
        _ = free(&release, 200, at: 1_000)
        XCTAssertEqual(release.timerFired(now: 1_000 + settle), .trim)
        let trimmedAt = 1_000 + settle
        XCTAssertTrue(free(&release, 200, at: trimmedAt + 100))
        XCTAssertEqual(release.timerFired(now: trimmedAt + 100 + settle), .wait(until: trimmedAt + interval))
        XCTAssertEqual(release.timerFired(now: trimmedAt + interval), .trim)
    }
}
