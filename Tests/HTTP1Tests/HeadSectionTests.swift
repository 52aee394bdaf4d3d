import XCTest
@testable import HTTP1

/// A head, and a trailer section, read in one pass once llhttp has accepted all of it
/// (`HTTPHead.read`): wherever reads cut it, however many messages one read holds, and with its
/// size counted as it came, start line and white space included.
final class HeadSectionTests: XCTestCase {
    // MARK: Generated heads

    /// A small deterministic generator (xorshift), so a failure names a reproducible seed.
    private struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return Int(state % UInt64(bound))
        }
        mutating func pick<T>(_ choices: [T]) -> T { choices[next(choices.count)] }
    }

    /// A well-formed request or response head with fields spelled in the ways the wire allows
    /// (any case, white space around values, empty values), and what RecordingDelegate should
    /// record of it and write out again.
    private func generatedHead(_ g: inout Generator, request: Bool) -> (text: String, recorded: String, written: String) {
        var text: String, recorded: String, written: String
        if request {
            let (method, target) = g.pick([("GET", "/"), ("GET", "/a/b?c=d&e"), ("HEAD", "/x"), ("DELETE", "/%20"), ("OPTIONS", "*")])
            text = "\(method) \(target) HTTP/1.1\r\n"
            recorded = "\(method) \(target) HTTP/1.1"
            written = text
        } else {
            let (status, reason) = g.pick([("200", " OK"), ("404", " Not  Found"), ("204", ""), ("302", " "), ("500", "  Spaced")])
            text = "HTTP/1.1 \(status)\(reason)\r\n"
            let spelled = reason.isEmpty ? "" : String(reason.dropFirst())
            recorded = "HTTP/1.1 \(status) \(spelled)"
            written = "HTTP/1.1 \(status) \(spelled)\r\n"
        }
        var fields: [(String, String)] = request ? [("Host", "a.example")] : []
        for _ in 0..<g.next(9) {
            fields.append(g.pick([("User-Agent", "curl/8.5.0"), ("accept", "*/*"), ("X-Empty", ""), ("x-forwarded-for", "1.2.3.4"),
                                  ("Cookie", "a=b; c=d"), ("X-Inner", "a \t b"), ("Server", "nginx"), ("Via", "1.1 x"),
                                  ("Origin", "https://a.example"), ("SEC-FETCH-MODE", "cors"), ("X_Under", "u"), ("Max-Forwards", "2"),
                                  ("Content-Type", "text/plain; charset=utf-8"), ("Date", "Sat, 28 Nov 2026 00:00:00 GMT")]))
        }
        for (name, value) in fields {
            let before = g.pick(["", " ", " ", "\t", "  \t"]), after = g.pick(["", "", " ", "\t ", "   "])
            text += "\(name):\(before)\(value)\(after)\r\n"
            recorded += "|\(name): \(value)"
            written += "\(name): \(value)\r\n"
        }
        return (text + "\r\n", recorded, written + "\r\n")
    }

    func testGeneratedHeadsReadTheSameWhereverReadsCutThem() {
        var g = Generator(state: 0x5EED_1234_ABCD_0001)
        for round in 0..<300 {
            let request = round % 2 == 0
            var messages: [(text: String, recorded: String, written: String)] = []
            for _ in 0...g.next(3) { messages.append(generatedHead(&g, request: request)) }
            // Bodiless messages pipelined in one input: each head begins where the one before ended.
            let text = messages.map(\.text).joined()
            let bytes = Array(text.utf8)
            let kind: HTTP1Parser.Kind = request ? .request : .response
            var cuts: [[Int]] = (1..<bytes.count).map { [$0] }
            for _ in 0..<40 {
                let a = 1 + g.next(bytes.count - 2)
                cuts.append([a, a + 1 + g.next(bytes.count - a - 1)])
            }
            for cutsOfOneRun in [[]] + cuts {
                let parser = HTTP1Parser(kind: kind, limits: defaultLimits)
                let d = RecordingDelegate()
                d.noBody = true
                parser.delegate = d
                XCTAssertEqual(feed(parser, text, cuts: cutsOfOneRun), .consumed, "round \(round), cut at \(cutsOfOneRun)")
                XCTAssertEqual(d.heads, messages.map(\.recorded), "round \(round), cut at \(cutsOfOneRun)")
                XCTAssertEqual(d.writtenHeads.map { String(decoding: $0, as: UTF8.self) }, messages.map(\.written),
                               "round \(round), cut at \(cutsOfOneRun)")
                if d.heads != messages.map(\.recorded) { return }
            }
        }
    }

    func testPipelinedMessagesWithBodiesAndTrailersReadTheSameWhereverReadsCutThem() {
        // The parser goes on after each message (no pause): the next head begins mid-read,
        // where only llhttp knows, after bodies of each framing.
        let text = "\r\nPOST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
            + "POST /2 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\nX-T: 1\r\nX-U:  two \r\n\r\n"
            + "GET /3 HTTP/1.1\r\nHost: a\r\n\r\n"
        let (d, result) = parseAtEveryBoundary(text)
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(d.heads, ["POST /1 HTTP/1.1|Host: a|Content-Length: 3", "POST /2 HTTP/1.1|Host: a|Transfer-Encoding: chunked",
                                 "GET /3 HTTP/1.1|Host: a"])
        XCTAssertEqual(d.events.filter { !$0.hasPrefix("chunk") }, ["head", "end", "head", "end|X-T: 1|X-U: two", "head", "end"])
        XCTAssertEqual(d.body, Array("abcde".utf8))
    }

    func testResponsesPipelinedAfterAnInterimOneReadTheSame() {
        let text = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nServer: x\r\n\r\nok"
        let (d, result) = parseAtEveryBoundary(text, kind: .response)
        XCTAssertEqual(result, .consumed)
        XCTAssertEqual(d.heads, ["HTTP/1.1 100 Continue", "HTTP/1.1 200 OK|Content-Length: 2|Server: x"])
    }

    // MARK: Refusals

    func testEachFaultIsRefusedWithItsKindWhereverReadsCutTheHead() {
        let trailersAfter = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n"
        let cases: [(String, HTTP1Error.Kind, String?)] = [
            ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", .malformed, "more than one space in the request line"),
            ("GET /  HTTP/1.1\r\nHost: a\r\n\r\n", .malformed, "more than one space in the request line"),
            ("GET / HTTP/1.1\nHost: a\r\n\r\n", .malformed, nil),
            ("GET / HTTP/1.1\r\nHost: a\r\n\n", .malformed, nil),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", .malformed, "obsolete line folding in a header value"),
            ("GET / HTTP/1.1\r\nHost: a\r\n: a\r\n\r\n", .malformed, nil),
            ("GET / HTTP/1.1\r\nHost: a\r\n: a:b\r\n\r\n", .malformed, nil),
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .badHost, "more than one Host header"),
            ("GET / HTTP/1.1\r\nX: a\r\n\r\n", .badHost, "HTTP/1.1 request without a Host header"),
            ("GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", .tooManyHeaders, "more than maxHeaderCount header fields"),
            (trailersAfter + "Content-Length: 1\r\n\r\n", .malformed,
             "a trailer field that frames the message (Content-Length or Transfer-Encoding)"),
            (trailersAfter + "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", .tooManyHeaders, "more than maxHeaderCount trailer fields"),
            (trailersAfter + ": x\r\n\r\n", .malformed, nil),
            (trailersAfter + "\n", .malformed, nil),
        ]
        for (text, kind, reason) in cases {
            for cut in [0] + Array(1..<text.utf8.count) {
                let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: 8192, maxFieldCount: 3))
                let d = RecordingDelegate()
                parser.delegate = d
                guard case .failed(let error) = feed(parser, text, cuts: cut == 0 ? [] : [cut]) else {
                    XCTFail("accepted \(text.debugDescription) cut at \(cut)"); continue
                }
                XCTAssertEqual(error.kind, kind, "\(text.debugDescription) cut at \(cut): \(error.reason)")
                if let reason { XCTAssertEqual(error.reason, reason, "\(text.debugDescription) cut at \(cut)") }
                XCTAssertFalse(d.events.contains { $0.hasPrefix("end") }, "\(text.debugDescription) cut at \(cut)")
                // Nothing is told after the last chunk's line before its trailers are refused (a
                // trailer's Content-Length, which llhttp takes as a length, ended the chunk too).
                if let last = d.events.firstIndex(of: "chunk 0") {
                    XCTAssertEqual(d.events.count, last + 1, "\(text.debugDescription) cut at \(cut): \(d.events)")
                }
            }
        }
    }

    func testAFoldOfOnlyWhiteSpaceAfterAnEmptyValueIsRefused() {
        // llhttp 8 reports no piece for a continuation line of white space alone: the field
        // callbacks never saw this fold. Read as lines, it is one like any other.
        for text in ["GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n \r\nY: b\r\n\r\n", "HTTP/1.1 200 OK\r\nX:   \r\n\t\r\nContent-Length: 0\r\n\r\n"] {
            let (d, result) = parseAtEveryBoundary(text, kind: text.hasPrefix("HTTP") ? .response : .request)
            guard case .failed(let error) = result else { XCTFail("accepted \(text.debugDescription)"); continue }
            XCTAssertEqual(error.reason, "obsolete line folding in a header value")
            XCTAssertEqual(d.events, [])
        }
    }

    // MARK: Size

    /// A request head of exactly `size` bytes up to the end of its last field line.
    private func head(ofSize size: Int, leadingCRLFs: Int = 0) -> String {
        let start = "GET / HTTP/1.1\r\nHost: a\r\nX:"
        let filler = String(repeating: "v", count: size - start.utf8.count - 2)
        return String(repeating: "\r\n", count: leadingCRLFs) + start + filler + "\r\n\r\n"
    }

    func testTheHeadIsCountedAsItCameUpToItsLastLineBreak() {
        let limit = 120
        for (text, fits) in [(head(ofSize: limit), true), (head(ofSize: limit + 1), false), (head(ofSize: limit, leadingCRLFs: 3), true),
                             ("GET / HTTP/1.1\r\nHost:" + String(repeating: " ", count: 200) + "a\r\n\r\n", false)] {
            for cut in [0] + Array(1..<text.utf8.count) {
                let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: limit, maxFieldCount: 10))
                let d = RecordingDelegate()
                parser.delegate = d
                let result = feed(parser, text, cuts: cut == 0 ? [] : [cut])
                if fits {
                    XCTAssertEqual(result, .consumed, "cut at \(cut)")
                } else {
                    XCTAssertEqual(result, .failed(HTTP1Error(.headTooLarge, "header block exceeds maxHeaderBytes")), "cut at \(cut)")
                }
            }
        }
    }

    func testAnIncompleteHeadHoldsNoMoreThanTheLimit() {
        let limit = 1000
        let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: limit, maxFieldCount: 100))
        let d = RecordingDelegate()
        parser.delegate = d
        XCTAssertEqual(feed(parser, "GET / HTTP/1.1\r\nHost: a\r\n"), .consumed)
        var result = HTTP1Parser.FeedResult.consumed
        var reads = 0
        while result == .consumed && reads < 1000 {
            result = feed(parser, "X-Field: \(String(repeating: "v", count: 30))\r\n")
            XCTAssertLessThanOrEqual(parser.head.bytes.count, limit + 1)
            reads += 1
        }
        XCTAssertEqual(result, .failed(HTTP1Error(.headTooLarge, "header block exceeds maxHeaderBytes")))
        // 25 bytes, then 41 a read: refused at the read that takes it past the limit and one byte.
        XCTAssertEqual(reads, (limit + 1 - 25) / 41 + 1)
    }

    func testTrailersAreCountedOnTheirOwn() {
        let before = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n"
        // Each trailer line with its CRLF; the empty line that ends them is not counted.
        for (trailers, fits) in [("X:" + String(repeating: "t", count: 96) + "\r\n", true), ("X:" + String(repeating: "t", count: 97) + "\r\n", false)] {
            let text = before + trailers + "\r\n"
            for cut in [0] + Array(1..<text.utf8.count) {
                let parser = HTTP1Parser(kind: .request, limits: HeaderLimits(maxHeadBytes: 100, maxFieldCount: 10))
                let d = RecordingDelegate()
                parser.delegate = d
                let result = feed(parser, text, cuts: cut == 0 ? [] : [cut])
                XCTAssertEqual(result, fits ? .consumed : .failed(HTTP1Error(.headTooLarge, "trailers exceed maxHeaderBytes")), "cut at \(cut)")
            }
        }
    }

    // MARK: The reader on its own

    func testTheReaderStopsAtTheEmptyLineAndPlacesEachPiece() throws {
        let head = HTTPHead()
        let text = Array("GET /t?q HTTP/1.1\r\nHost:  a.example \r\nX-Empty:\r\n\r\nbody after the head".utf8)
        let length = try text.withUnsafeBytes {
            try head.read(.head, of: .request, at: $0.baseAddress!, count: $0.count, base: 0, limits: defaultLimits)
        }
        XCTAssertEqual(length, text.count - "body after the head".utf8.count)
        head.bytes.append(text)
        XCTAssertEqual(String(decoding: head.target, as: UTF8.self), "/t?q")
        XCTAssertEqual(head.fields.map { String(decoding: head.name($0), as: UTF8.self) }, ["Host", "X-Empty"])
        XCTAssertEqual(head.fields.map { String(decoding: head.value($0), as: UTF8.self) }, ["a.example", ""])
        XCTAssertEqual(head.fields.map(\.known), [.host, .other])
        XCTAssertEqual(head.hostIndex, 0)
        XCTAssertEqual(head.host.map { String(decoding: $0, as: UTF8.self) }, "a.example")
    }

    /// `host` is the Host field's value wherever the field stands, after a head whose Host stood
    /// elsewhere, and nil once the head is reset.
    func testHostIsTheHostFieldsValueWhereverItStands() throws {
        let head = HTTPHead()
        for (text, host) in [("GET / HTTP/1.1\r\nA: 1\r\nBB: 22\r\nhOsT:\t b.example:8080\t\r\nC: 3\r\n\r\n", "b.example:8080"),
                             ("GET / HTTP/1.1\r\nHost: [::1]\r\n\r\n", "[::1]"),
                             ("GET / HTTP/1.1\r\nX: y\r\nHost:\r\n\r\n", "")] {
            head.reset()
            XCTAssertNil(head.host)
            let bytes = Array(text.utf8)
            _ = try bytes.withUnsafeBytes {
                try head.read(.head, of: .request, at: $0.baseAddress!, count: $0.count, base: 0, limits: defaultLimits)
            }
            head.bytes.append(bytes)
            XCTAssertEqual(head.host.map { String(decoding: $0, as: UTF8.self) }, host, text)
        }
    }

    /// The reader classifies names itself (a candidate by length and first letter, then a call to
    /// confirm it): what it notes for every name is what `KnownHeader(name:)` says, lookalikes in
    /// requests only.
    func testTheReaderClassifiesEachNameAsKnownHeaderDoes() throws {
        var names = ["host", "Connection", "KEEP-ALIVE", "proxy-connection", "Transfer-Encoding", "content-length", "TE", "trailer",
                     "Upgrade", "proxy-authorization", "Expect", "via", "X-Forwarded-For", "x-forwarded-proto", "X-Forwarded-Host",
                     "authorization", "forwarded", "Cookie", "max-forwards", "origin", "Sec-Fetch-Site", "sec-fetch-mode",
                     "sec-fetch-dest", "X_Forwarded_For", "content_length", "keep_alive", "x_forwarded_fox", "hose", "connexion",
                     "tx", "t", "4e", "vie", "cookies", "Content-Lengths", "sec-fetch-user", "sec-fetch-", "User-Agent", "Accept", "Date"]
        // Every name a known one's length and first letter would propose, and a few more.
        for length in 1...20 { for first in ["t", "T", "4", "v", "h", "c", "C", "k", "x", "s", "p", "a", "m", "o", "e", "f", "u"] {
            names.append(first + String(repeating: "-", count: length - 1))
        } }
        for kind in [HTTP1Parser.Kind.request, .response] {
            for name in names {
                let head = HTTPHead()
                let start = kind == .request ? "GET / HTTP/1.1" : "HTTP/1.1 200 OK"
                let text = Array("\(start)\r\n\(name): v\r\n\r\n".utf8)
                _ = try text.withUnsafeBytes {
                    try head.read(.head, of: kind, at: $0.baseAddress!, count: $0.count, base: 0, limits: defaultLimits)
                }
                let expected = Array(name.utf8).withUnsafeBytes { KnownHeader(name: $0, lookalikes: kind == .request) }
                XCTAssertEqual(head.fields.map(\.known), [expected], "\(name) in a \(kind)")
            }
        }
    }

    func testTheReaderRefusesASectionWithoutItsEnd() {
        let head = HTTPHead()
        let text = Array("HTTP/1.1 200 OK\r\nServer: x\r\n".utf8)
        XCTAssertThrowsError(try text.withUnsafeBytes {
            try head.read(.head, of: .response, at: $0.baseAddress!, count: $0.count, base: 0, limits: defaultLimits)
        })
    }
}
