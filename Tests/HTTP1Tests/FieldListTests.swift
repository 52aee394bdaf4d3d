@testable import HTTP1
import XCTest

/// A head's fields live in storage the head owns, grown as fields arrive and reused (or freed,
/// past `keptFieldCapacity`) for the next message: every field must read back as sent.
final class FieldListTests: XCTestCase {
    private func request(fields count: Int, tag: String) -> String {
        "GET / HTTP/1.1\r\nHost: a\r\n" + (0..<count).map { "X-\(tag)-\($0): value \($0)\r\n" }.joined() + "\r\n"
    }

    private func fields(_ parser: HTTP1Parser) -> [String] {
        parser.head.fields.map { String(decoding: parser.head.name($0), as: UTF8.self) + "=" + String(decoding: parser.head.value($0), as: UTF8.self) }
    }

    func testFieldsReadBackAcrossGrowthAndAcrossMessagesOfOneParser() {
        let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: 64 * 1024, maxFieldCount: 500))
        let delegate = RecordingDelegate()
        parser.delegate = delegate
        // 15 fits the first storage, 16 fills it, 200 grows it past what a head keeps.
        for (count, tag) in [(15, "a"), (16, "b"), (200, "c"), (3, "d"), (100, "e"), (0, "f")] {
            parser.reset()
            XCTAssertEqual(feed(parser, request(fields: count, tag: tag)), .consumed)
            XCTAssertEqual(fields(parser), ["Host=a"] + (0..<count).map { "X-\(tag)-\($0)=value \($0)" }, "\(count) fields")
            XCTAssertEqual(parser.head.hostIndex, 0)
            XCTAssertEqual(parser.head.trailers.count, 0)
        }
    }

    func testTrailersAreKeptApartFromTheHeadsFields() {
        let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
        let delegate = RecordingDelegate()
        parser.delegate = delegate
        let text = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nT-One: 1\r\nT-Two: 2\r\n\r\n"
        XCTAssertEqual(feed(parser, text), .consumed)
        XCTAssertEqual(fields(parser), ["Host=a", "Transfer-Encoding=chunked"])
        XCTAssertEqual(parser.head.trailers.map { String(decoding: parser.head.name($0), as: UTF8.self) }, ["T-One", "T-Two"])
    }
}
