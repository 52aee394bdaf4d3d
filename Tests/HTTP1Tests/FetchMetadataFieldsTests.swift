import HTTP1
import XCTest

/// The parser notes where `Origin` and `Sec-Fetch-*` are as each field completes, so that the
/// browser policy reads them without searching the head, and a new message starts with none.
final class FetchMetadataFieldsTests: XCTestCase {
    private func parsed(_ text: String) -> HTTP1Parser {
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        feed(parser, text, cuts: [7, 40])
        return parser
    }

    private func value(_ parser: HTTP1Parser, _ index: Int32) -> String? {
        index < 0 ? nil : String(decoding: parser.head.value(parser.head.fields[Int(index)]), as: UTF8.self)
    }

    func testEachFieldIsFoundWhereverItStandsInAnyCase() {
        let parser = parsed("POST /x HTTP/1.1\r\nHost: a\r\nSEC-FETCH-DEST: empty\r\nX-A: 1\r\norigin: http://localhost:3000\r\n"
                            + "Sec-Fetch-Mode: cors\r\nsec-fetch-site: same-site\r\nSec-Fetch-User: ?1\r\nContent-Length: 0\r\n\r\n")
        let fields = parser.head.fetchMetadata
        XCTAssertFalse(fields.isEmpty)
        XCTAssertFalse(fields.repeated)
        XCTAssertEqual(value(parser, fields.origin), "http://localhost:3000")
        XCTAssertEqual(value(parser, fields.site), "same-site")
        XCTAssertEqual(value(parser, fields.mode), "cors")
        XCTAssertEqual(value(parser, fields.dest), "empty")
    }

    func testAHeadWithoutThemIsEmptyAndASecondMessageStartsAfresh() {
        let parser = parsed("GET /a HTTP/1.1\r\nHost: a\r\nOrigin: null\r\n\r\n")
        XCTAssertFalse(parser.head.fetchMetadata.isEmpty)
        parser.resume()
        feed(parser, "GET /b HTTP/1.1\r\nHost: a\r\nSec-Fetch-Usr: x\r\n\r\n")
        XCTAssertTrue(parser.head.fetchMetadata.isEmpty)
        XCTAssertEqual(parser.head.fetchMetadata.origin, -1)
    }

    func testAFieldSentTwiceIsNoted() {
        for repeated in ["Origin: a\r\nOrigin: b", "Sec-Fetch-Site: none\r\nsec-fetch-site: none", "Sec-Fetch-Dest: a\r\nSec-Fetch-Dest: a"] {
            XCTAssertTrue(parsed("GET / HTTP/1.1\r\nHost: a\r\n\(repeated)\r\n\r\n").head.fetchMetadata.repeated, repeated)
        }
    }

    func testTrailersAreNotRead() {
        let parser = parsed("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nOrigin: http://evil.example\r\n\r\n")
        XCTAssertTrue(parser.head.fetchMetadata.isEmpty)
    }
}
