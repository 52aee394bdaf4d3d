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

    func testEveryRelayedStatusLineIsTheStatusAndReasonAsReceived() {
        // Written in two stores for three digits, piece by piece otherwise: the same text, at
        // any fill of the buffer (250 and 255 bytes in: the line makes it grow).
        for prefix in [0, 3, 250, 255] {
            for status in [0, 1, 42, 99, 1000, 12_345] + Array(100...999) {
                for reason in ["", "OK", "Not Found", "A reason well past sixteen bytes long"] {
                    var out = ByteBuffer()
                    out.append([UInt8](repeating: 0x2E, count: prefix))
                    Array(reason.utf8).withUnsafeBytes { out.appendStatusLine(status, reason: $0) }
                    let expected = String(repeating: ".", count: prefix) + "HTTP/1.1 \(status) \(reason)\r\n"
                    XCTAssertEqual(String(decoding: out.readableBytes, as: UTF8.self), expected)
                }
            }
        }
    }

    func testRequestLinesAndFieldsAtAnyFillOfTheBuffer() {
        for prefix in [0, 3, 240, 250, 255] {
            for (method, target) in [("GET", "/"), ("OPTIONS", "*"), ("M-SEARCH", "/a/much/longer/target?with=a&query=string")] {
                var out = ByteBuffer()
                out.append([UInt8](repeating: 0x2E, count: prefix))
                Array(method.utf8).withUnsafeBytes { m in Array(target.utf8).withUnsafeBytes { out.appendRequestLine(method: m, target: $0) } }
                Array(method.utf8).withUnsafeBytes { n in Array(target.utf8).withUnsafeBytes { out.appendField(n, $0) } }
                out.appendVia(versionMinor: 1, suffix: Array(" relay\r\n".utf8))
                let expected = String(repeating: ".", count: prefix) + "\(method) \(target) HTTP/1.1\r\n\(method): \(target)\r\nVia: 1.1 relay\r\n"
                XCTAssertEqual(String(decoding: out.readableBytes, as: UTF8.self), expected)
            }
        }
    }

    func testContentLengthIsCanonical() {
        XCTAssertEqual(written { $0.appendContentLength(0) }, "Content-Length: 0\r\n")
        XCTAssertEqual(written { $0.appendContentLength(UInt64.max) }, "Content-Length: 18446744073709551615\r\n")
    }

    func testAParsedFieldIsWrittenInTheOneSpellingHoweverItArrived() {
        // Lines that arrived as `name: value` CRLF are copied whole; any other spelling is
        // written from the name and value. Whole and split at every byte: the same lines.
        let text = "GET / HTTP/1.1\r\nHost: x\r\nA:b\r\nB:  c\r\nC: d \t\r\nD: e\r\nE:\r\nF: \r\nG:\t\tg\r\nH: h\r\n\r\n"
        let expected = "GET / HTTP/1.1\r\nHost: x\r\nA: b\r\nB: c\r\nC: d\r\nD: e\r\nE: \r\nF: \r\nG: g\r\nH: h\r\n\r\n"
        for cut in 0..<text.utf8.count {
            let parser = HTTP1Parser(kind: .request, limits: defaultLimits)
            let heads = RecordingDelegate()
            parser.delegate = heads
            XCTAssertEqual(feed(parser, text, cuts: cut == 0 ? [] : [cut]), .consumed, "split at \(cut)")
            XCTAssertEqual(heads.writtenHeads.map { String(decoding: $0, as: UTF8.self) }, [expected], "split at \(cut)")
        }
    }

    func testViaNamesTheMessagesVersion() {
        let suffix = Array(" oauth-relay\r\n".utf8)
        XCTAssertEqual(written { $0.appendVia(versionMinor: 0, suffix: suffix) }, "Via: 1.0 oauth-relay\r\n")
        XCTAssertEqual(written { $0.appendVia(versionMinor: 1, suffix: suffix) }, "Via: 1.1 oauth-relay\r\n")
    }
}
