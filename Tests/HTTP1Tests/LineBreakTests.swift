import XCTest
@testable import HTTP1

/// The empty line that ends a head or a chunked body must be CRLF: llhttp 8 takes a bare LF
/// there, everywhere else it refuses one. Each case is parsed whole and split at every byte, so
/// both the quick check (the head's last value in the same read) and the check at llhttp's
/// pause (a split head, an empty last value, no fields, a chunked body's end) run. llhttp 9
/// refuses these bare LFs itself, before the relay's checks, and gives its own reason.
final class LineBreakTests: XCTestCase {
    /// Why the bare LF is refused: the relay's `reason` where llhttp takes it, llhttp 9's own where it does not.
    private func bareLFRefusal(_ reason: String) -> String {
        llhttpVersion.major >= 9 ? "HPE_INVALID_HEADER_TOKEN: Invalid header field char" : reason
    }

    func testABareLFEndingTheHeadIsRefusedBeforeTheDelegateSeesTheHead() {
        for text in ["GET / HTTP/1.1\r\nHost: x\r\n\n",
                     "GET / HTTP/1.1\r\nHost: x\r\nX-Empty:\r\n\n",
                     "GET / HTTP/1.0\r\n\n",
                     "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\nok"] {
            let (d, result) = parseAtEveryBoundary(text)
            guard case .failed(let error) = result else { XCTFail("accepted \(text.debugDescription)"); continue }
            XCTAssertEqual(error.kind, .malformed)
            XCTAssertEqual(error.reason, bareLFRefusal("a bare LF ends the head"))
            XCTAssertEqual(d.events, [], text.debugDescription)
        }
    }

    func testHeadsEndingInCRLFPassWhateverTheirLastLine() {
        let cases = [("GET / HTTP/1.1\r\nHost: x\r\nX-Empty:\r\n\r\n", "GET / HTTP/1.1|Host: x|X-Empty: "),
                     ("GET / HTTP/1.0\r\n\r\n", "GET / HTTP/1.0"),
                     ("GET / HTTP/1.1\r\nHost: x  \r\n\r\n", "GET / HTTP/1.1|Host: x")]
        for (text, head) in cases {
            let (d, result) = parseAtEveryBoundary(text)
            XCTAssertEqual(result, .consumed, text.debugDescription)
            XCTAssertEqual(d.heads, [head])
            XCTAssertEqual(d.events, ["head", "end"])
        }
    }

    func testABareLFEndingAChunkedBodyIsRefusedBeforeItsEndIsReported() {
        for body in ["5\r\nhello\r\n0\r\n\n", "5\r\nhello\r\n0\r\nX-T: 1\r\n\n"] {
            let text = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body
            let (d, result) = parseAtEveryBoundary(text)
            guard case .failed(let error) = result else { XCTFail("accepted \(body.debugDescription)"); continue }
            XCTAssertEqual(error.reason, bareLFRefusal("a bare LF ends the chunked body"))
            XCTAssertFalse(d.events.contains { $0.hasPrefix("end") }, "\(d.events)")
            XCTAssertEqual(d.body, Array("hello".utf8))
        }
    }

    func testAChunkedRequestStillPausesAtItsEndWhenPipelined() {
        let first = "POST /1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"
        let second = "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n"
        for cut in 0..<first.utf8.count {
            let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
            let d = RecordingDelegate()
            d.pauseAfterMessage = true
            parser.delegate = d
            let result = feed(parser, first + second, cuts: cut == 0 ? [] : [cut])
            let consumed = cut == 0 ? first.utf8.count : first.utf8.count - cut
            XCTAssertEqual(result, .paused(consumed: consumed), "split at \(cut)")
            XCTAssertEqual(d.events.filter { !$0.hasPrefix("chunk") }, ["head", "end"], "split at \(cut)")
        }
    }

    func testAResponseToHeadHasNoBodyWhenItsHeadIsCheckedAtThePause() {
        // An empty last value sends the check to the pause: the delegate's "no body" must still
        // hold there.
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nX-Empty:\r\n\r\n"
        for cut in 0..<head.utf8.count {
            let parser = HTTP1Parser(kind: .response, limits: defaultLimits)
            let d = RecordingDelegate()
            d.noBody = true
            d.pauseAfterMessage = true
            parser.delegate = d
            let result = feed(parser, head + "HTTP/1.1 204 No Content\r\n\r\n", cuts: cut == 0 ? [] : [cut])
            XCTAssertEqual(result, .paused(consumed: head.utf8.count - cut), "split at \(cut)")
            XCTAssertEqual(d.events, ["head", "end"], "split at \(cut)")
        }
    }
}
