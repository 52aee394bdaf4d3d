@testable import HTTPClient
import XCTest

/// One timer per upstream connection: its purpose's own timeout, or the whole response's
/// deadline (`upstreamResponseTotalSeconds`) when that comes first. Times in milliseconds.
final class UpstreamDeadlinesTests: XCTestCase {
    func testWithoutATotalDeadlineTheResponseTimeoutStartsAgainWithEveryByte() {
        var deadlines = UpstreamDeadlines()
        XCTAssertEqual(deadlines.start(.response, after: 1000, now: 0), 1000)
        for now in stride(from: UInt64(900), through: 60_000, by: 900) {
            XCTAssertEqual(deadlines.start(.response, after: 1000, now: now), now + 1000)
            XCTAssertEqual(deadlines.expiry(at: now), .none)
        }
    }

    func testAResponseDrippingInEndsAtTheTotalDeadline() {
        var deadlines = UpstreamDeadlines()
        _ = deadlines.start(.response, after: 1000, now: 0)
        XCTAssertEqual(deadlines.startResponseDeadline(after: 5000, now: 10), 1000)
        var due: UInt64 = 0
        for now in stride(from: UInt64(500), through: 4500, by: 500) {
            due = deadlines.start(.response, after: 1000, now: now)  // a byte arrived
        }
        XCTAssertEqual(due, 5010)
        XCTAssertEqual(deadlines.expiry(at: 5009), .none)
        XCTAssertEqual(deadlines.expiry(at: 5010), .responseTotal)
    }

    func testTheResponseTimeoutStillFiresFirstWhenItComesFirst() {
        var deadlines = UpstreamDeadlines()
        _ = deadlines.start(.response, after: 1000, now: 0)
        XCTAssertEqual(deadlines.startResponseDeadline(after: 5000, now: 0), 1000)
        XCTAssertEqual(deadlines.expiry(at: 1000), .response)
    }

    func testAQueuedExchangeTimesOutAsQueuedUnlessTheTotalDeadlineComesFirst() {
        var deadlines = UpstreamDeadlines()
        XCTAssertEqual(deadlines.start(.queue, after: 500, now: 0), 500)
        XCTAssertEqual(deadlines.expiry(at: 499), .none)
        XCTAssertEqual(deadlines.expiry(at: 500), .queue)
        XCTAssertEqual(deadlines.startResponseDeadline(after: 300, now: 0), 300)
        XCTAssertEqual(deadlines.expiry(at: 300), .responseTotal)
    }

    func testLeavingTheQueueStopsItsTimeoutAndKeepsTheTotalDeadline() {
        var deadlines = UpstreamDeadlines()
        _ = deadlines.start(.queue, after: 500, now: 0)
        _ = deadlines.startResponseDeadline(after: 2000, now: 0)
        deadlines.endPurpose()
        XCTAssertEqual(deadlines.expiry(at: 1000), .none, "no queue timeout once it has a slot")
        XCTAssertEqual(deadlines.start(.connect, after: 5000, now: 1000), 2000)
        XCTAssertEqual(deadlines.expiry(at: 2000), .responseTotal)
    }

    func testTheTotalDeadlineBoundsConnectingToo() {
        var deadlines = UpstreamDeadlines()
        _ = deadlines.start(.connect, after: 5000, now: 0)
        XCTAssertEqual(deadlines.startResponseDeadline(after: 2000, now: 0), 2000)
        XCTAssertEqual(deadlines.expiry(at: 2000), .responseTotal)
    }

    func testWhileResolvingNoTimerIsSetUntilConnectingStarts() {
        var deadlines = UpstreamDeadlines()
        XCTAssertNil(deadlines.startResponseDeadline(after: 2000, now: 0))
        XCTAssertEqual(deadlines.start(.connect, after: 5000, now: 100), 2000)
    }

    func testACompleteResponseEndsTheTotalDeadline() {
        var deadlines = UpstreamDeadlines()
        _ = deadlines.start(.response, after: 1000, now: 0)
        _ = deadlines.startResponseDeadline(after: 2000, now: 0)
        deadlines.stop()
        XCTAssertEqual(deadlines.start(.idle, after: 60_000, now: 500), 60_500)
        XCTAssertEqual(deadlines.expiry(at: 3000), .none)
        XCTAssertEqual(deadlines.expiry(at: 60_500), .idle)
    }

    func testTheNextExchangeOnTheConnectionStartsWithoutOne() {
        var deadlines = UpstreamDeadlines()
        _ = deadlines.start(.response, after: 1000, now: 0)
        _ = deadlines.startResponseDeadline(after: 2000, now: 0)
        deadlines.beginExchange()
        XCTAssertNil(deadlines.responseDeadline)
        XCTAssertEqual(deadlines.start(.response, after: 1000, now: 1500), 2500)
        XCTAssertEqual(deadlines.expiry(at: 2100), .none)
    }

    func testNothingIsDueBeforeItsTime() {
        var deadlines = UpstreamDeadlines()
        XCTAssertEqual(deadlines.expiry(at: 10), .none)
        _ = deadlines.start(.connect, after: 100, now: 0)
        XCTAssertEqual(deadlines.expiry(at: 99), .none)
        XCTAssertEqual(deadlines.expiry(at: 100), .connect)
    }
}
