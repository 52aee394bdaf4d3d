@testable import Proxy
import XCTest

/// The read stops for the write backlogs, and what a client connection's timer stands for.
final class BackpressureTests: XCTestCase {
    func testTheClientIsNotReadWhileTheUpstreamsBacklogDrainsOrTooMuchIsPipelined() {
        var stops: Backpressure = []
        XCTAssertTrue(stops.readsClient(pipelinedBytes: Backpressure.maxBufferedPipelineBytes))
        XCTAssertFalse(stops.readsClient(pipelinedBytes: Backpressure.maxBufferedPipelineBytes + 1))
        stops.insert(.clientReads)
        XCTAssertFalse(stops.readsClient(pipelinedBytes: 0))
    }

    func testADrainedUpstreamResumesReadingUnlessPipelinedBytesWait() {
        var stops: Backpressure = [.clientReads]
        guard case .stayPaused(restartBodyClock: true) = stops.upstreamBacklogDrained(
            pipelinedBytes: Backpressure.maxBufferedPipelineBytes + 1, tunnelling: false, bodyClockRan: true) else { return XCTFail("paused") }
        guard case .none = stops.upstreamBacklogDrained(pipelinedBytes: 0, tunnelling: false, bodyClockRan: false) else {
            return XCTFail("drained once")
        }
        stops.insert(.clientReads)
        guard case .resumeReading(restartBodyClock: false) = stops.upstreamBacklogDrained(
            pipelinedBytes: Backpressure.maxBufferedPipelineBytes + 1, tunnelling: true, bodyClockRan: false) else {
            return XCTFail("a tunnel's bytes are no pipelined requests")
        }
    }

    func testADrainedClientResumesTheUpstreamOnce() {
        var stops: Backpressure = [.upstreamReads]
        XCTAssertTrue(stops.clientBacklogDrained())
        XCTAssertFalse(stops.clientBacklogDrained())
    }

    func testTheTimerStandsForTheDeadlineOfThePhase() {
        XCTAssertEqual(ClientDeadline(phase: .awaitingRequest, waitingForToken: false, bodyClockRuns: false), .idle)
        XCTAssertEqual(ClientDeadline(phase: .readingHead, waitingForToken: false, bodyClockRuns: false), .header)
        XCTAssertEqual(ClientDeadline(phase: .exchanging, waitingForToken: true, bodyClockRuns: true), .tokenWait)
        XCTAssertEqual(ClientDeadline(phase: .exchanging, waitingForToken: false, bodyClockRuns: true), .requestBody)
        XCTAssertEqual(ClientDeadline(phase: .exchanging, waitingForToken: false, bodyClockRuns: false), ClientDeadline.none)
        XCTAssertEqual(ClientDeadline(phase: .tunnelling, waitingForToken: false, bodyClockRuns: true), ClientDeadline.none)
    }
}
