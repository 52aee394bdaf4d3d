@testable import Proxy
import XCTest

/// When the rest of a body moves between the sockets by splice, from the exchange's facts alone.
final class BodySpliceTests: XCTestCase {
    private let large: UInt64 = 64 << 20

    func testAPlainLengthFramedBodyRelayedAsItIsIsSpliced() {
        XCTAssertEqual(BodySplice(.init(remaining: large)), .splice)
        XCTAssertEqual(BodySplice(.init(remaining: BodySplice.minimumRemaining)), .splice, "the threshold itself")
    }

    func testEachFactThatNeedsTheBytesInUserSpaceRefusesIt() {
        let table: [(String, BodySplice.Facts, BodySplice.Refusal)] = [
            ("TLS to the client", .init(clientTLS: true, remaining: large), .clientTLS),
            ("TLS to the upstream", .init(upstreamTLS: true, remaining: large), .upstreamTLS),
            ("chunked, close-delimited or no body", .init(remaining: 0), .notLengthFramed),
            ("re-chunked, dropped or answered locally", .init(remaining: large, relayedAsIs: false), .notRelayedAsIs),
            ("the head held with its read's bytes", .init(remaining: large, headHeld: true), .headHeld),
            ("a copy kept for a replay", .init(remaining: large, keptForReplay: true), .keptForReplay),
            ("the forward proxy", .init(remaining: large, forwardProxy: true), .forwardProxy),
            ("small", .init(remaining: BodySplice.minimumRemaining - 1), .small),
        ]
        for (name, facts, refusal) in table {
            XCTAssertEqual(BodySplice(facts), .refused(refusal), name)
        }
    }

    func testOnlyAStreamingContentLengthResponseIsRelayedAsItIs() {
        var response = ExchangeResponse()
        XCTAssertFalse(response.relaysBodyAsIs, "awaited")
        let body = ExchangeResponse.Body(framing: .contentLength, upstreamChunked: false)
        response.progress = .held(body)
        XCTAssertFalse(response.relaysBodyAsIs, "held")
        response.progress = .streaming(body)
        XCTAssertTrue(response.relaysBodyAsIs)
        response.progress = .streaming(.init(framing: .chunked, upstreamChunked: false))
        XCTAssertFalse(response.relaysBodyAsIs, "in the relay's chunks")
        response.progress = .streaming(.init(framing: .close, upstreamChunked: false))
        XCTAssertFalse(response.relaysBodyAsIs, "delimited by the close")
        response.progress = .refused
        XCTAssertFalse(response.relaysBodyAsIs, "a refused answer, dropped")
    }
}
