import XCTest
@testable import HTTP1

/// Body bytes that bypass the parser (spliced between sockets): what it says is left of a body
/// framed by Content-Length, and that skipped bytes count, so that the message still ends at its
/// last byte with its callbacks and what follows stays unread.
final class BodySkipTests: XCTestCase {
    /// The parser's delegate is unowned: the test keeps it.
    private var delegates: [RecordingDelegate] = []

    private func parser(_ kind: HTTP1Parser.Kind = .request) -> (HTTP1Parser, RecordingDelegate) {
        let parser = HTTP1Parser(kind: kind, limits: defaultLimits)
        let delegate = RecordingDelegate()
        parser.delegate = delegate
        delegates.append(delegate)
        return (parser, delegate)
    }

    func testWhatIsLeftOfALengthFramedBodyFollowsTheBytesParsed() {
        let (parser, _) = parser()
        XCTAssertEqual(parser.lengthFramedBodyRemaining, 0, "nothing parsed")
        XCTAssertEqual(feed(parser, "POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"), .consumed)
        XCTAssertEqual(parser.lengthFramedBodyRemaining, 100_000)
        XCTAssertEqual(feed(parser, String(repeating: "a", count: 1000)), .consumed)
        XCTAssertEqual(parser.lengthFramedBodyRemaining, 99_000)
    }

    func testSkippedBytesCountAndTheMessageEndsAtItsLastByteWithWhatFollowsUnread() {
        let (parser, delegate) = parser()
        delegate.pauseAfterMessage = true
        XCTAssertEqual(feed(parser, "POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nab"), .consumed)
        XCTAssertEqual(parser.skippableBodyBytes, 99_997, "all but the last byte")
        parser.skipBody(99_995)
        XCTAssertEqual(parser.lengthFramedBodyRemaining, 3)
        let next = "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
        XCTAssertEqual(feed(parser, "xyz" + next), .paused(consumed: 3))
        XCTAssertEqual(String(decoding: delegate.body, as: UTF8.self), "abxyz", "only the bytes fed reach the delegate")
        XCTAssertEqual(delegate.events, ["head", "end"])
        XCTAssertEqual(parser.lengthFramedBodyRemaining, 0, "between messages")
        XCTAssertEqual(parser.skippableBodyBytes, 0)
    }

    func testAChunkedBodyIsNotLengthFramed() {
        let (parser, _) = parser()
        XCTAssertEqual(feed(parser, "POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10000\r\nab"), .consumed)
        XCTAssertEqual(parser.lengthFramedBodyRemaining, 0)
    }

    func testAResponseWithoutLengthIsNotLengthFramed() {
        let (parser, _) = parser(.response)
        XCTAssertEqual(feed(parser, "HTTP/1.1 200 OK\r\n\r\nabc"), .consumed)
        XCTAssertEqual(parser.lengthFramedBodyRemaining, 0, "delimited by the close")
    }

    func testAResponseWhoseBodyIsSkippedHasNoneLeft() {
        let (parser, delegate) = parser(.response)
        delegate.noBody = true
        XCTAssertEqual(feed(parser, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"), .consumed)
        XCTAssertEqual(parser.lengthFramedBodyRemaining, 0, "the answer to a HEAD")
    }

    func testALengthFramedResponseBody() {
        let (parser, _) = parser(.response)
        XCTAssertEqual(feed(parser, "HTTP/1.1 200 OK\r\nContent-Length: 70000\r\n\r\n"), .consumed)
        XCTAssertEqual(parser.lengthFramedBodyRemaining, 70_000)
    }
}
