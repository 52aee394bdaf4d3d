@testable import Tokens
import XCTest

/// How long a caller's exchanged token stays in Redis and is reused from it (Unix seconds).
final class CallerEntryLifeTests: XCTestCase {
    func testTheTTLIsTheTokensRemainingLife() {
        XCTAssertEqual(CallerEntryLife.ttlMilliseconds(tokenExpiresAt: 4_600, callerExpiresAt: nil, now: 1_000), 3_600_000)
        XCTAssertEqual(CallerEntryLife.ttlMilliseconds(tokenExpiresAt: 1_000.25, callerExpiresAt: nil, now: 1_000), 250)
    }

    func testTheTTLIsCutAtTheCallersExpiry() {
        XCTAssertEqual(CallerEntryLife.ttlMilliseconds(tokenExpiresAt: 4_600, callerExpiresAt: 1_300, now: 1_000), 300_000)
        // A caller living longer than the exchanged token changes nothing.
        XCTAssertEqual(CallerEntryLife.ttlMilliseconds(tokenExpiresAt: 4_600, callerExpiresAt: 9_000, now: 1_000), 3_600_000)
    }

    func testNothingIsWrittenOnceEitherHasExpired() {
        XCTAssertNil(CallerEntryLife.ttlMilliseconds(tokenExpiresAt: 1_000, callerExpiresAt: nil, now: 1_000))
        XCTAssertNil(CallerEntryLife.ttlMilliseconds(tokenExpiresAt: 4_600, callerExpiresAt: 999, now: 1_000))
        XCTAssertEqual(CallerEntryLife.ttlMilliseconds(tokenExpiresAt: 1_000.0004, callerExpiresAt: nil, now: 1_000), 1, "never 0: no TTL at all")
    }

    /// Reused until the refresh time of the shorter life (RefreshSchedule: the larger of the skew
    /// and 10 % of the life, at most half of it), and never past either expiry.
    func testReuseEndsShortlyBeforeTheEarlierExpiry() {
        // A 1 h token, no caller expiry: 6 min early.
        XCTAssertEqual(CallerEntryLife.reusableUntil(issuedAt: 1_000, tokenExpiresAt: 4_600, callerExpiresAt: nil, skew: 10), 4_240)
        // The caller's token expires after 10 min: reused until 1 min before that.
        XCTAssertEqual(CallerEntryLife.reusableUntil(issuedAt: 1_000, tokenExpiresAt: 4_600, callerExpiresAt: 1_600, skew: 10), 1_540)
        // A 1 s life: RefreshSchedule would wait its minimum interval (1 s); the expiry comes first.
        XCTAssertEqual(CallerEntryLife.reusableUntil(issuedAt: 1_000, tokenExpiresAt: 1_000.5, callerExpiresAt: nil, skew: 10), 1_000.5)
        XCTAssertTrue(CallerEntryLife.isReusable(issuedAt: 1_000, tokenExpiresAt: 4_600, callerExpiresAt: 1_600, skew: 10, now: 1_539))
        XCTAssertFalse(CallerEntryLife.isReusable(issuedAt: 1_000, tokenExpiresAt: 4_600, callerExpiresAt: 1_600, skew: 10, now: 1_540))
        XCTAssertFalse(CallerEntryLife.isReusable(issuedAt: 1_000, tokenExpiresAt: 4_600, callerExpiresAt: 900, skew: 10, now: 950),
                       "a caller already expired")
    }
}
