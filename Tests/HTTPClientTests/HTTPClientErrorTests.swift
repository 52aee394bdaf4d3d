import EventLoop
import HTTP1
@testable import HTTPClient
import XCTest

/// The token client's view of its connection's failure: the cases and texts it always had.
final class HTTPClientErrorTests: XCTestCase {
    func testAHandshakeOutlastingTheConnectDeadlineIsASlowConnect() {
        XCTAssertEqual(HTTPClientError(.handshakeTimeout), .connectTimeout)
        XCTAssertEqual(HTTPClientError(.connectTimeout).description, "connecting timed out")
    }

    func testAConnectionEndingMidResponseClosedEarlyWhateverEndedIt() {
        XCTAssertEqual(HTTPClientError(.closed(nil)), .closedEarly)
        XCTAssertEqual(HTTPClientError(.closed(.protocolError)), .closedEarly)
        XCTAssertEqual(HTTPClientError(.tlsAfterHandshake("bad record mac")), .closedEarly)
    }

    func testARefusedHandshakeIsATLSFailure() {
        XCTAssertEqual(HTTPClientError(.tls("unknown ca")).description, "TLS failed: unknown ca")
    }

    func testBothResponseTimeoutsAreNoCompleteResponseInTime() {
        XCTAssertEqual(HTTPClientError(.responseTimeout).description, "no complete response in time")
        XCTAssertEqual(HTTPClientError(.responseTotalTimeout), .responseTimeout)
    }

    func testAnInvalidResponseSaysWhy() {
        let error = HTTP1Error(.malformed, "bad status line")
        XCTAssertEqual(HTTPClientError(.badResponse(error)), .invalidResponse(error.reason))
        XCTAssertEqual(HTTPClientError(.resolve("EAI_NONAME")).description, "cannot resolve the host: EAI_NONAME")
    }
}
