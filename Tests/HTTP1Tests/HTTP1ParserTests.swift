import SafeText
import XCTest
@testable import HTTP1

final class HTTP1ParserTests: XCTestCase {
    func testSimpleRequestHeadKeepsOrderCaseAndDuplicates() {
        let (d, result) = parseAtEveryBoundary("GET /a?b=1 HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nx-a: 2\r\nAccept:  text/html  \r\n\r\n")
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(d.heads, ["GET /a?b=1 HTTP/1.1|Host: x|X-A: 1|x-a: 2|Accept: text/html"])
        XCTAssertEqual(d.events, ["head", "end"])
    }

    func testContentLengthBodyIsDeliveredWhole() {
        let (d, result) = parseAtEveryBoundary("POST /u HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world")
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(String(decoding: d.body, as: UTF8.self), "hello world")
        XCTAssertEqual(d.events, ["head", "end"])
    }

    func testChunkedBodyWithTrailers() {
        let text = "POST /u HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Sum: abc\r\n\r\n"
        let (d, result) = parseAtEveryBoundary(text)
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(String(decoding: d.body, as: UTF8.self), "hello world")
        XCTAssertEqual(d.events, ["head", "chunk 5", "chunk end", "chunk 6", "chunk end", "chunk 0", "end|X-Sum: abc"])
    }

    func testPauseAfterMessageReportsBytesOfFirstRequestOnly() {
        let first = "GET /1 HTTP/1.1\r\nHost: x\r\n\r\n"
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        let d = RecordingDelegate()
        d.pauseAfterMessage = true
        parser.delegate = d
        XCTAssertEqual(feed(parser, first + "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n"), .paused(consumed: first.utf8.count))
        parser.resume()
        XCTAssertEqual(feed(parser, "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n"), .paused(consumed: first.utf8.count))
        XCTAssertEqual(d.heads.count, 2)
        XCTAssertTrue(d.heads[1].hasPrefix("GET /2 "))
    }

    func testUpgradeRequestReportsWhereTheOtherProtocolStarts() {
        let head = "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        let d = RecordingDelegate()
        parser.delegate = d
        XCTAssertEqual(feed(parser, head + "\u{1}\u{2}raw"), .upgraded(consumed: head.utf8.count))
        XCTAssertTrue(parser.head.isUpgrade)
    }

    func testWhiteSpaceAroundValuesIsNoPartOfThem() {
        // The head keeps its bytes as they came (white space counts against maxHeadBytes, see
        // HeadSectionTests); the values leave it out.
        let spaces = String(repeating: " ", count: 2000)
        let text = "GET / HTTP/1.1\r\nHost:\(spaces)x\r\nA:\(spaces)b\t\(spaces)\r\n\r\n"
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        let d = RecordingDelegate()
        parser.delegate = d
        XCTAssertEqual(feed(parser, text), .consumed)
        XCTAssertEqual(d.heads, ["GET / HTTP/1.1|Host: x|A: b"])
        XCTAssertEqual(parser.head.bytes.count, text.utf8.count)
    }

    func testHostIsRequiredForHTTP11() {
        let (_, result) = parseAtEveryBoundary("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n")
        guard case .failed(let error) = result else { return XCTFail("accepted \(result)") }
        XCTAssertEqual(error.kind, .badHost)
    }

    func testHTTP10WithoutHostIsAccepted() {
        let (_, result) = parseAtEveryBoundary("GET / HTTP/1.0\r\n\r\n")
        XCTAssertEqual(result, .consumed)
    }

    func testDuplicateHostIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .badHost)
    }

    func testContentLengthWithTransferEncodingIsRejected() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .malformed)
    }

    func testDuplicateDifferingContentLengthIsRejected() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", .malformed)
    }

    func testInvalidChunkSizeIsRejected() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", .malformed)
    }

    func testBareLFIsRejected() {
        assertRejected("GET / HTTP/1.1\nHost: a\n\n", .malformed)
        assertRejected("GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", .malformed)
    }

    func testBareCRIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: a\rX: y\r\n\r\n", .malformed)
    }

    func testNULInHeaderValueIsRejected() {
        let result = parseAtEveryBoundary("GET / HTTP/1.1\r\nHost: a\r\nX: a\u{0}b\r\n\r\n").1
        guard case .failed = result else { return XCTFail("accepted NUL") }
    }

    func testObsoleteLineFoldingIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n  folded\r\n\r\n", .malformed)
    }

    func testSpaceBeforeColonIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost : a\r\n\r\n", .malformed)
    }

    func testFieldWithAnEmptyNameIsRejected() {
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\n: value\r\n\r\n", .malformed)
        assertRejected("GET / HTTP/1.1\r\n: value\r\nHost: a\r\n\r\n", .malformed)
    }

    func testTrailerWithAnEmptyNameIsRejected() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n: v\r\n\r\n", .malformed)
    }

    func testResponseFieldWithAnEmptyNameIsRejected() {
        let (_, result) = parseAtEveryBoundary("HTTP/1.1 200 OK\r\n: v\r\nContent-Length: 0\r\n\r\n", kind: .response)
        guard case .failed(let error) = result else { return XCTFail("accepted \(result)") }
        XCTAssertEqual(error.kind, .malformed)
    }

    func testConnectionListingAFramingFieldIsRejected() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\nhello", .malformed)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nConnection: close, transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                       .malformed)
        assertRejected("GET / HTTP/1.1\r\nConnection: Host\r\nHost: a\r\n\r\n", .malformed)
        let (_, result) = parseAtEveryBoundary("HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 2\r\n\r\nok",
                                               kind: .response)
        guard case .failed = result else { return XCTFail("accepted \(result)") }
    }

    func testAFoldAfterAnEmptyValueIsRejected() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n 5\r\n\r\nhello", .malformed)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\tchunked\r\n\r\n0\r\n\r\n", .malformed)
        assertRejected("GET / HTTP/1.1\r\nHost: a\r\nX-A:\r\n folded\r\n\r\n", .malformed)
    }

    func testAnEmptyValueFollowedByAnotherFieldIsAccepted() {
        let (d, result) = parseAtEveryBoundary("GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\nX-B:  b\r\n\r\n")
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(d.heads, ["GET / HTTP/1.1|Host: a|X-Empty: |X-B: b"])
    }

    func testFramingFieldsInTrailersAreRejected() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nContent-Length: 5\r\n\r\n",
                       .malformed)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nTransfer-Encoding: chunked\r\n\r\n",
                       .malformed)
    }

    func testTransferEncodingThatDoesNotFrameARequestIsRejected() {
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", .malformed)
        assertRejected("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", .malformed)
        assertRejected("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .malformed)
    }

    func testChunkedTwiceIsRejected() {
        let (_, result) = parseAtEveryBoundary("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n")
        guard case .failed = result else { return XCTFail("accepted \(result)") }
    }

    func testResponseTransferCodingsOtherThanChunkedAreRejected() {
        for codings in ["chunked, gzip", "gzip", "chunked, chunked", ""] {
            let (_, result) = parseAtEveryBoundary("HTTP/1.1 200 OK\r\nTransfer-Encoding: \(codings)\r\n\r\n0\r\n\r\n", kind: .response)
            guard case .failed = result else { return XCTFail("accepted Transfer-Encoding: \(codings)") }
        }
        let (_, result) = parseAtEveryBoundary("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", kind: .response)
        guard case .failed = result else { return XCTFail("accepted chunked in HTTP/1.0") }
    }

    func testOnlyHTTP1IsSpoken() {
        let (_, result) = parseAtEveryBoundary("GET / HTTP/2.0\r\nHost: a\r\n\r\n")
        guard case .failed(let error) = result else { return XCTFail("accepted HTTP/2.0") }
        XCTAssertEqual(error.requestStatus, 505)
    }

    func testAStatusCodeMustHaveThreeDigits() {
        for status in ["20", "099"] {
            let (_, result) = parseAtEveryBoundary("HTTP/1.1 \(status) OK\r\nContent-Length: 0\r\n\r\n", kind: .response)
            guard case .failed = result else { return XCTFail("accepted status \(status)") }
        }
    }

    func testHeadOverByteLimitIs431() {
        let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: 100, maxFieldCount: 10))
        let result = feed(parser, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: \(String(repeating: "a", count: 200))\r\n\r\n")
        guard case .failed(let error) = result else { return XCTFail("accepted") }
        XCTAssertEqual(error.kind, .headTooLarge)
        XCTAssertEqual(error.requestStatus, 431)
    }

    func testTooManyFieldsIs431() {
        let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: 8192, maxFieldCount: 3))
        let result = feed(parser, "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n")
        guard case .failed(let error) = result else { return XCTFail("accepted") }
        XCTAssertEqual(error.kind, .tooManyHeaders)
        XCTAssertEqual(error.requestStatus, 431)
    }

    func testConnectionListedHeadersAreHopByHop() {
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        feed(parser, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close, X-Secret\r\nx-secret: 1\r\nX-Keep: 2\r\nTE: trailers\r\n\r\n")
        let hop = parser.head.fields.map { parser.head.isHopByHop($0) }
        XCTAssertEqual(hop, [false, true, true, false, true])
        XCTAssertFalse(parser.head.keepAlive)
        XCTAssertTrue(parser.head.connectionHas(Array("close".utf8)))
    }

    func testAConnectionFieldOfKeepAliveAloneNamesOnlyKeepAlive() {
        // Read in two loads rather than as a list: what it names is hop-by-hop anyway.
        let parser = HTTP1Parser(kind: .response, limits: defaultLimits)
        feed(parser, "HTTP/1.1 200 OK\r\nConnection: KEEP-Alive\r\nKeep-Alive: timeout=5\r\nConnection: keep-alivE, x-a\r\nX-A: 1\r\nX-B: 2\r\n\r\n")
        XCTAssertEqual(parser.head.fields.map { parser.head.isHopByHop($0) }, [true, true, true, true, false])
        for (value, isKeepAlive) in [("keep-alive", true), ("Keep-Alive", true), ("keep-alivf", false), ("keep_alive", false),
                                     ("keep-alive ", false), ("keep-aliv", false), ("kEEP-ALIVE", true)] {
            Array(value.utf8).withUnsafeBytes { XCTAssertEqual(HTTPHead.isKeepAlive($0), isKeepAlive, value) }
        }
    }

    func testAConnectionValueAsLongAsKeepAliveStillNamesItsField() {
        // Ten bytes, like `keep-alive`, whose two-load check must not skip it.
        for value in ["x-internal", "X-Internal", "keep-alivx"] {
            let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
            feed(parser, "GET / HTTP/1.1\r\nHost: a\r\nConnection: \(value)\r\n\(value): 1\r\nX-Kept: 2\r\n\r\n")
            XCTAssertEqual(parser.head.fields.map { parser.head.isHopByHop($0) }, [false, true, true, false], value)
        }
    }

    func testResponseFramingAndReason() {
        let (d, result) = parseAtEveryBoundary("HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nnop", kind: .response)
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(d.heads, ["HTTP/1.1 404 Not Found|Content-Length: 3"])
        XCTAssertEqual(String(decoding: d.body, as: UTF8.self), "nop")
    }

    func testResponseWithoutLengthEndsAtClose() {
        let parser = HTTP1Parser(kind: .response, limits: defaultLimits)
        let d = RecordingDelegate()
        parser.delegate = d
        XCTAssertEqual(feed(parser, "HTTP/1.1 200 OK\r\n\r\nstream"), .consumed)
        XCTAssertTrue(parser.messageNeedsEOF)
        XCTAssertNil(parser.finish())
        XCTAssertEqual(d.events, ["head", "end"])
        XCTAssertEqual(String(decoding: d.body, as: UTF8.self), "stream")
    }

    func testTruncatedResponseIsReportedAtClose() {
        let parser = HTTP1Parser(kind: .response, limits: defaultLimits)
        XCTAssertEqual(feed(parser, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), .consumed)
        XCTAssertEqual(parser.finish()?.kind, .truncated)
    }

    func testResponseToHeadHasNoBodyWhenDelegateSaysSo() {
        let parser = HTTP1Parser(kind: .response, limits: defaultLimits)
        let d = RecordingDelegate()
        d.noBody = true
        d.pauseAfterMessage = true
        parser.delegate = d
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
        XCTAssertEqual(feed(parser, head), .paused(consumed: head.utf8.count))
        XCTAssertEqual(d.events, ["head", "end"])
    }

    func testInterimContinueIsItsOwnMessage() {
        let (d, result) = parseAtEveryBoundary("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", kind: .response)
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(d.heads, ["HTTP/1.1 100 Continue", "HTTP/1.1 200 OK|Content-Length: 2"])
        XCTAssertEqual(d.events, ["head", "end", "head", "end"])
    }

    func testSwitchingProtocolsResponseIsAnUpgrade() {
        let parser = HTTP1Parser(kind: .response, limits: defaultLimits)
        let head = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
        XCTAssertEqual(feed(parser, head + "frames"), .upgraded(consumed: head.utf8.count))
    }

    func testResponseWithContentLengthAndChunkedIsRejected() {
        let parser = HTTP1Parser(kind: .response, limits: defaultLimits)
        let result = feed(parser, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        guard case .failed = result else { return XCTFail("accepted \(result)") }
    }

    func testTransferCodingOtherThanChunkedIsNotImplemented() {
        let (_, result) = parseAtEveryBoundary("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")
        guard case .failed(let error) = result else { return XCTFail("accepted \(result)") }
        XCTAssertEqual(error.kind, .unsupportedTransferCoding)
        XCTAssertEqual(error.requestStatus, 501)
    }

    func testChunkedInAnyCaseIsAccepted() {
        let (d, result) = parseAtEveryBoundary("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n")
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(d.body, [UInt8(ascii: "x")])
    }

    func testParserIsReusableAfterReset() {
        let parser = HTTP1Parser(kind: .response, limits: defaultLimits)
        _ = feed(parser, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        parser.reset()
        let d = RecordingDelegate()
        parser.delegate = d
        XCTAssertEqual(feed(parser, "HTTP/1.1 204 No Content\r\n\r\n"), .consumed)
        XCTAssertEqual(d.heads, ["HTTP/1.1 204 No Content"])
    }

    private func assertRejected(_ text: String, _ kind: HTTP1Error.Kind, file: StaticString = #filePath, line: UInt = #line) {
        let (_, result) = parseAtEveryBoundary(text, file: file, line: line)
        guard case .failed(let error) = result else { return XCTFail("accepted: \(result)", file: file, line: line) }
        XCTAssertEqual(error.kind, kind, "\(error.reason)", file: file, line: line)
        XCTAssertEqual(error.requestStatus, 400, file: file, line: line)
    }
}
