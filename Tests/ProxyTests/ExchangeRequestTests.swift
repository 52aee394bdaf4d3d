import HTTP1
@testable import Proxy
import XCTest

/// The request half of an exchange on its own: what its head says, the body kept for a replay,
/// and the body's deadline, with no `Exchange` and no socket.
final class ExchangeRequestTests: XCTestCase {
    func testTheHeadSaysHowTheBodyIsFramedAndWhetherTheClientWaitsForContinue() {
        let chunked = ExchangeRequest(parsedHead(head("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked", "Expect: 100-continue")))
        XCTAssertEqual(chunked.framing, .chunked)
        XCTAssertTrue(chunked.hasBody)
        XCTAssertTrue(chunked.expectsContinue)
        XCTAssertFalse(chunked.startsBodyClockWithHead, "the body's clock waits for its first byte")
        let empty = ExchangeRequest(parsedHead(head("POST / HTTP/1.1", "Host: a", "Content-Length: 0")))
        XCTAssertFalse(empty.hasBody)
        XCTAssertFalse(empty.expectsContinue)
        let large = ExchangeRequest(parsedHead(head("PUT / HTTP/1.1", "Host: a", "Content-Length: \(ExchangeRequest.maxReplayBodyBytes + 1)")))
        XCTAssertFalse(large.lengthFitsReplay)
    }

    func testABodyIsKeptForAReplayUpToTheLimitThenDropped() {
        var request = ExchangeRequest(parsedHead(head("POST / HTTP/1.1", "Host: a", "Transfer-Encoding: chunked")))
        request.keepsBodyForReplay(on: ExchangeDriver.plan(identity: "svc"))
        XCTAssertEqual(request.bodyReplay, .keeping(0))
        XCTAssertEqual(request.sentBody(ExchangeRequest.maxReplayBodyBytes), .keep)
        XCTAssertEqual(request.sentBody(1), .dropKept)
        XCTAssertEqual(request.sentBody(1), ExchangeRequest.BodyKeeping.none)
        request.upload = .complete
        XCTAssertFalse(request.isResendable)
    }

    func testARouteThatNeverReplaysKeepsNoBody() {
        var request = ExchangeRequest(parsedHead(head("POST / HTTP/1.1", "Host: a", "Content-Length: 3")))
        request.keepsBodyForReplay(on: ExchangeDriver.plan(identity: "svc", retryOnStatus: []))
        XCTAssertEqual(request.bodyReplay, .impossible)
    }

    func testTheBodysDeadlineMovesWithEachByteAndPausesWhileTheRelayStopsReading() {
        var request = ExchangeRequest(parsedHead(head("POST / HTTP/1.1", "Host: a", "Content-Length: 3000")))
        XCTAssertTrue(request.startBodyClock(now: 1_000))
        XCTAssertEqual(request.bodyBytesArrived(1_000, readsStopped: false, timeoutMilliseconds: 10_000, minBytesPerSecond: 100),
                       1_000 + 10_000 + 10_000)
        XCTAssertNil(request.bodyBytesArrived(1, readsStopped: true, timeoutMilliseconds: 10_000, minBytesPerSecond: 100))
        XCTAssertTrue(request.stopBodyClock())
        XCTAssertFalse(request.stopBodyClock(), "stopped once")
        request.upload = .complete
        XCTAssertFalse(request.startBodyClock(now: 2_000), "no deadline for a body that arrived")
    }
}
