import ByteBuffers
import HTTP1
import XCTest

/// The one head writer: every line the relay writes itself, in the one spelling it sends.
final class HeadWriterTests: XCTestCase {
    private func written(_ body: (inout ByteBuffer) -> Void) -> String {
        var out = ByteBuffer()
        body(&out)
        return String(decoding: out.readableBytes, as: UTF8.self)
    }

    func testARequestHead() {
        XCTAssertEqual(written {
            $0.appendRequestLine(method: "POST", target: "/token")
            $0.appendField("Host", "idp.test")
            $0.appendContentLength(42)
            $0.appendEndOfHead()
        }, "POST /token HTTP/1.1\r\nHost: idp.test\r\nContent-Length: 42\r\n\r\n")
    }

    func testAStatusLineTakesTheStandardReasonUnlessGivenOne() {
        XCTAssertEqual(written { $0.appendStatusLine(503) }, "HTTP/1.1 503 Service Unavailable\r\n")
        XCTAssertEqual(written { $0.appendStatusLine(200, reason: "Fine") }, "HTTP/1.1 200 Fine\r\n")
    }

    func testContentLengthIsCanonical() {
        XCTAssertEqual(written { $0.appendContentLength(0) }, "Content-Length: 0\r\n")
        XCTAssertEqual(written { $0.appendContentLength(UInt64.max) }, "Content-Length: 18446744073709551615\r\n")
    }

    func testViaNamesTheMessagesVersion() {
        let suffix = Array(" oauth-relay\r\n".utf8)
        XCTAssertEqual(written { $0.appendVia(versionMinor: 0, suffix: suffix) }, "Via: 1.0 oauth-relay\r\n")
        XCTAssertEqual(written { $0.appendVia(versionMinor: 1, suffix: suffix) }, "Via: 1.1 oauth-relay\r\n")
    }
}
