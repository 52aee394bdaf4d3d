import OAuth2
import XCTest

/// The refresh margin and the backoff delays.
final class RefreshScheduleTests: XCTestCase {
    func testMarginIsTenPercentOfALongLifetime() {
        XCTAssertEqual(RefreshSchedule.margin(lifetime: 3600, skew: 10), 360)
    }

    func testMarginIsTheSkewWhenThatIsLarger() {
        XCTAssertEqual(RefreshSchedule.margin(lifetime: 60, skew: 10), 10)
        XCTAssertEqual(RefreshSchedule.margin(lifetime: 3600, skew: 600), 600)
    }

    func testMarginIsNeverMoreThanHalfTheLifetime() {
        XCTAssertEqual(RefreshSchedule.margin(lifetime: 20, skew: 10), 10)
        XCTAssertEqual(RefreshSchedule.margin(lifetime: 4, skew: 10), 2)
    }

    func testRefreshAtIsExpiryMinusMargin() {
        XCTAssertEqual(RefreshSchedule.refreshAt(issuedAt: 100, lifetime: 3600, skew: 10), 3340)
    }

    func testRefreshIsNeverSoonerThanOneSecondAfterTheRequest() {
        XCTAssertEqual(RefreshSchedule.refreshAt(issuedAt: 100, lifetime: 0.2, skew: 10), 101)
        XCTAssertEqual(RefreshSchedule.refreshAt(issuedAt: 100, lifetime: 1, skew: 10), 101)
        XCTAssertEqual(RefreshSchedule.refreshAt(issuedAt: 100, lifetime: 2, skew: 10), 101)
        XCTAssertEqual(RefreshSchedule.refreshAt(issuedAt: 100, lifetime: 4, skew: 10), 102)
    }

    func testBackoffDoublesFromOneSecondUpToSixty() {
        let policy = BackoffPolicy()
        XCTAssertEqual((1...8).map { policy.delay(afterFailures: $0, retryAfter: nil, random: 0) }, [1, 2, 4, 8, 16, 32, 60, 60])
        XCTAssertEqual(policy.delay(afterFailures: 10_000, retryAfter: nil, random: 0), 60)
    }

    func testJitterTakesAtMostHalfTheDelayOff() {
        let policy = BackoffPolicy()
        XCTAssertEqual(policy.delay(afterFailures: 4, retryAfter: nil, random: 0.5), 6)
        XCTAssertGreaterThan(policy.delay(afterFailures: 4, retryAfter: nil, random: 0.999_999), 4)
    }

    func testRetryAfterIsTheLeastDelay() {
        let policy = BackoffPolicy()
        XCTAssertEqual(policy.delay(afterFailures: 1, retryAfter: 30, random: 0), 30)
        XCTAssertEqual(policy.delay(afterFailures: 7, retryAfter: 5, random: 0), 60)
    }

    func testRetryAfterIsCapped() {
        XCTAssertEqual(BackoffPolicy().delay(afterFailures: 1, retryAfter: 86_400, random: 0), 300)
    }
}
