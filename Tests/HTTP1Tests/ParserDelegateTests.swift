import XCTest
@testable import HTTP1

/// The parser's delegate, held unowned and called without a retain (HTTP1ParserDelegate.swift):
/// what is set is what is called, and unsetting it takes effect at once.
final class ParserDelegateTests: XCTestCase {
    func testDelegateReadsBackAsSetAndUnset() {
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        XCTAssertNil(parser.delegate)
        let d = RecordingDelegate()
        parser.delegate = d
        XCTAssertTrue(parser.delegate === d)
        parser.delegate = nil
        XCTAssertNil(parser.delegate)
    }

    func testEachMessageReachesTheDelegateSetForIt() {
        // A workspace's parser is lent to one connection's delegate after another.
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        // Of two types: the type is kept beside the address, and must change with it.
        let first = RecordingDelegate(), second = LeavingDelegate()
        parser.delegate = first
        XCTAssertEqual(feed(parser, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"), .consumed)
        parser.reset()
        parser.delegate = second
        XCTAssertTrue(parser.delegate === second)
        XCTAssertEqual(feed(parser, "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n"), .consumed)
        XCTAssertEqual(first.heads, ["GET /1 HTTP/1.1|Host: x"])
        XCTAssertEqual(second.events, ["head"])
    }

    func testDelegateUnsetInItsOwnCallbackHearsNothingMore() {
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        let d = LeavingDelegate()
        parser.delegate = d
        XCTAssertEqual(feed(parser, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab"), .consumed)
        XCTAssertEqual(d.events, ["head"])
        XCTAssertNil(parser.delegate)
    }
}

/// Unsets itself as the parser's delegate when it hears of a head (it stays alive: the test holds it).
private final class LeavingDelegate: HTTP1ParserDelegate {
    var events: [String] = []
    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        events.append("head")
        parser.delegate = nil
        return .framed
    }
    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) { events.append("body") }
    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) { events.append("chunk") }
    func parserDidFinishChunk(_ parser: HTTP1Parser) { events.append("chunk end") }
    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        events.append("end")
        return false
    }
}
