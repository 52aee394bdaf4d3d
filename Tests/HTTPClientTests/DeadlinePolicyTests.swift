@testable import HTTPClient
import XCTest

/// The two ways an upstream connection's clocks run: the pool's (each step and each silence
/// timed, a total bound from the request sent) and the HTTP client's one exchange (two total
/// bounds). Times in milliseconds, no socket.
final class DeadlinePolicyTests: XCTestCase {
    private let pooled = UpstreamDeadlines.Policy.pooled(connect: 5000, response: 1000, idle: 60_000, queue: 500, responseTotal: nil)
    private let single = UpstreamDeadlines.Policy.singleExchange(connect: 5000, response: 30_000)

    func testThePoolsConnectTimeoutStartsWhenConnectingStarts() {
        var deadlines = UpstreamDeadlines(policy: pooled)
        XCTAssertNil(deadlines.startResolving(now: 0), "the pool resolves for many connections")
        XCTAssertEqual(deadlines.startConnecting(now: 700), 5700)
    }

    func testTheClientsConnectDeadlineCoversResolving() {
        var deadlines = UpstreamDeadlines(policy: single)
        XCTAssertEqual(deadlines.startResolving(now: 0), 5000)
        XCTAssertEqual(deadlines.startConnecting(now: 4000), 5000, "resolving took 4 s of the 5")
        XCTAssertEqual(deadlines.expiry(at: 5000), .connect)
    }

    func testTheClientsConnectDeadlineFiresWhileResolving() {
        var deadlines = UpstreamDeadlines(policy: single)
        _ = deadlines.startResolving(now: 0)
        XCTAssertEqual(deadlines.expiry(at: 4999), .none)
        XCTAssertEqual(deadlines.expiry(at: 5000), .connect)
    }

    func testReadsRestartThePoolsResponseTimeout() {
        var deadlines = UpstreamDeadlines(policy: pooled)
        _ = deadlines.startConnecting(now: 0)
        XCTAssertFalse(deadlines.restartsOnProgress, "connecting is not the response's silence")
        XCTAssertEqual(deadlines.startResponse(now: 100), 1100)
        XCTAssertTrue(deadlines.restartsOnProgress)
        XCTAssertEqual(deadlines.startResponse(now: 900), 1900)
        XCTAssertEqual(deadlines.expiry(at: 1100), .none)
    }

    func testReadsNeverPushBackTheClientsResponseDeadline() {
        var deadlines = UpstreamDeadlines(policy: single)
        _ = deadlines.startResolving(now: 0)
        _ = deadlines.startConnecting(now: 10)
        XCTAssertEqual(deadlines.startResponse(now: 200), 30_200)
        XCTAssertFalse(deadlines.restartsOnProgress)
        XCTAssertEqual(deadlines.expiry(at: 30_200), .response)
    }

    func testThePoolsTotalDeadlineStartsWhenTheRequestIsSent() {
        var policy = pooled
        policy.responseTotalMilliseconds = 3000
        var deadlines = UpstreamDeadlines(policy: policy)
        _ = deadlines.startResponse(now: 0)
        XCTAssertEqual(deadlines.startResponseTotal(now: 100), 1000)
        for now in stride(from: UInt64(900), through: 2700, by: 900) { _ = deadlines.startResponse(now: now) }
        XCTAssertEqual(deadlines.expiry(at: 3100), .responseTotal)
    }

    func testWithoutATotalBoundSendingTheRequestSetsNoTimer() {
        var deadlines = UpstreamDeadlines(policy: single)
        _ = deadlines.startResponse(now: 0)
        XCTAssertNil(deadlines.startResponseTotal(now: 10))
        XCTAssertNil(deadlines.responseDeadline)
    }

    func testQueueAndIdleTimeoutsComeFromThePolicy() {
        var deadlines = UpstreamDeadlines(policy: pooled)
        XCTAssertEqual(deadlines.startQueue(now: 0), 500)
        XCTAssertEqual(deadlines.expiry(at: 500), .queue)
        XCTAssertEqual(deadlines.startIdle(now: 1000), 61_000)
        XCTAssertEqual(deadlines.expiry(at: 61_000), .idle)
    }

    func testTheClientsLimitsMakeTheSingleExchangePolicy() {
        let limits = HTTPClientLimits(connectTimeoutMilliseconds: 5000, responseTimeoutMilliseconds: 30_000)
        XCTAssertEqual(limits.deadlinePolicy, single)
    }
}
