import CLLHTTP
import XCTest
@testable import HTTP1

/// The start line, as strictly as RFC 9112 §3 writes it: single spaces, CRLF at its end (llhttp 8
/// takes extra spaces and a bare LF there), and an unknown but well-formed method is a 501.
/// Which methods are known is llhttp's table: llhttp 9.2 added QUERY.
final class StartLineTests: XCTestCase {
    func testMoreThanOneSpaceInTheRequestLineIsRefused() {
        for text in ["GET  /a HTTP/1.1\r\nHost: a\r\n\r\n", "GET /a  HTTP/1.1\r\nHost: a\r\n\r\n",
                     "POST /d  HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"] {
            let (d, result) = parseAtEveryBoundary(text)
            guard case .failed(let error) = result else { XCTFail("accepted \(text.debugDescription)"); continue }
            XCTAssertEqual(error.reason, "more than one space in the request line")
            XCTAssertEqual(d.events, [])
        }
    }

    func testABareLFEndingTheStartLineIsRefused() {
        for (text, kind) in [("GET /a HTTP/1.1\nHost: a\r\n\r\n", HTTP1Parser.Kind.request),
                             ("GET /a HTTP/1.0\n\r\n", .request),
                             ("HTTP/1.1 204 No Content\nX: y\r\n\r\n", .response)] {
            let (d, result) = parseAtEveryBoundary(text, kind: kind)
            guard case .failed(let error) = result else { XCTFail("accepted \(text.debugDescription)"); continue }
            XCTAssertEqual(error.kind, .malformed, text.debugDescription)
            XCTAssertEqual(d.events, [])
        }
    }

    func testTheStrictFormPassesAtEverySplit() {
        let (d, result) = parseAtEveryBoundary("GET /c HTTP/1.1\r\nHost: a\r\n\r\nGET /a?b HTTP/1.0\r\n\r\n")
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(d.heads, ["GET /c HTTP/1.1|Host: a", "GET /a?b HTTP/1.0"])
    }

    func testAWellFormedMethodTheParserDoesNotKnowIs501() {
        for method in ["BREW", "get", "FOO"] + (llhttpKnowsQUERY ? [] : ["QUERY"]) {
            let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
            guard case .failed(let error) = feed(parser, "\(method) /a HTTP/1.1\r\nHost: a\r\n\r\n") else {
                XCTFail("\(method) accepted"); continue
            }
            XCTAssertEqual(error.kind, .unsupportedMethod, method)
            XCTAssertEqual(error.requestStatus, 501)
            XCTAssertEqual(error.reason, "the method \(method) is not implemented")
        }
    }

    /// QUERY (the safe method with a body the IETF is writing down) is parsed where llhttp knows
    /// it, 9.2 and later (Debian 13), and is a 501 like any unknown method before (Debian 12).
    func testQUERYIsParsedWhereLLHTTPKnowsIt() {
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        let d = RecordingDelegate()
        parser.delegate = d
        let result = feed(parser, "QUERY /a HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nq=")
        if llhttpKnowsQUERY {
            XCTAssertEqual(result, .consumed)
            XCTAssertEqual(d.heads, ["QUERY /a HTTP/1.1|Host: a|Content-Length: 2"])
            XCTAssertEqual(d.body, Array("q=".utf8))
        } else {
            guard case .failed(let error) = result else { return XCTFail("QUERY accepted by llhttp \(llhttpVersion)") }
            XCTAssertEqual(error.requestStatus, 501)
        }
    }

    private var llhttpKnowsQUERY: Bool { llhttpVersion >= (9, 2) }

    func testGarbageInPlaceOfAMethodIs400() {
        for text in ["hello\r\n\r\n", "GE\u{1}T /a HTTP/1.1\r\n\r\n", "(GET) /a HTTP/1.1\r\n\r\n", "NOT A REQUEST\r\n\r\n"] {
            let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
            guard case .failed(let error) = feed(parser, text) else { XCTFail("accepted \(text.debugDescription)"); continue }
            XCTAssertEqual(error.requestStatus, 400, text.debugDescription)
        }
    }

    func testChunkExtensionsAreBoundedPerMessage() {
        let head = "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
        let long = String(repeating: "x", count: HTTP1Parser.maxChunkExtensionBytes + 1)
        for cuts in [[], [head.utf8.count + 100], [head.utf8.count + 9000]] {
            let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
            guard case .failed(let error) = feed(parser, head + "1;\(long)\r\nz\r\n0\r\n\r\n", cuts: cuts) else {
                XCTFail("accepted with cuts \(cuts)"); continue
            }
            XCTAssertEqual(error.reason, "chunk extensions exceed 16 KiB")
        }
        let fine = String(repeating: "x", count: 1000)
        XCTAssertEqual(feed(HTTP1Parser(kind: .request, limits: defaultLimits), head + "1;a=\(fine)\r\nz\r\n0\r\n\r\n"), .consumed)
    }

    /// The usual methods' names come from literals, the rest from llhttp: each is spelled as
    /// llhttp spells it (which aborts on a number it does not know: only llhttp's own are tried).
    func testMethodsAreNamedAsLlhttpNamesThem() {
        let head = HTTPHead()
        for method in [HTTP_DELETE, HTTP_GET, HTTP_HEAD, HTTP_POST, HTTP_PUT, HTTP_CONNECT, HTTP_OPTIONS, HTTP_TRACE, HTTP_PATCH,
                       HTTP_PROPFIND, HTTP_MKCALENDAR].map({ UInt8($0.rawValue) }) {
            head.method = method
            let llhttpName = String(cString: llhttp_method_name(llhttp_method_t(UInt32(method))))
            XCTAssertEqual(String(decoding: head.methodName, as: UTF8.self), llhttpName, "method \(method)")
        }
    }
}
