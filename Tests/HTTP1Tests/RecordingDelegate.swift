import HTTP1

/// Records what a parser reports, as text that tests compare against.
final class RecordingDelegate: HTTP1ParserDelegate {
    var events: [String] = []
    var body: [UInt8] = []
    var heads: [String] = []
    var pauseAfterMessage = false
    var noBody = false

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        let head = parser.head
        var line = parser.kind == .request
            ? "\(string(head.methodName)) \(string(head.target)) HTTP/\(head.versionMajor).\(head.versionMinor)"
            : "HTTP/\(head.versionMajor).\(head.versionMinor) \(head.statusCode) \(string(head.reason))"
        for field in head.fields {
            line += "|\(string(head.name(field))): \(string(head.value(field)))"
        }
        heads.append(line)
        events.append("head")
        return noBody ? .none : .framed
    }

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {
        body.append(contentsOf: bytes)
    }

    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {
        events.append("chunk \(size)")
    }

    func parserDidFinishChunk(_ parser: HTTP1Parser) {
        events.append("chunk end")
    }

    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        var line = "end"
        for field in parser.head.trailers {
            line += "|\(string(parser.head.name(field))): \(string(parser.head.value(field)))"
        }
        events.append(line)
        return pauseAfterMessage
    }

    private func string(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

let defaultLimits = HeaderLimits(maxHeadBytes: 8192, maxFieldCount: 32)

/// Feeds `text` in pieces cut at `cuts`, returning the last result.
@discardableResult
func feed(_ parser: HTTP1Parser, _ text: String, cuts: [Int] = []) -> HTTP1Parser.FeedResult {
    let bytes = Array(text.utf8)
    var result = HTTP1Parser.FeedResult.consumed
    var start = 0
    for end in cuts + [bytes.count] where end > start {
        result = bytes[start..<end].withUnsafeBytes { parser.feed($0) }
        if case .consumed = result { start = end } else { return result }
    }
    return result
}

/// Parses `text` whole and split at every single byte boundary, and checks that all splits
/// produce the same events as the whole; returns the delegate of the whole parse.
func parseAtEveryBoundary(_ text: String, kind: HTTP1Parser.Kind = .request,
                          file: StaticString = #filePath, line: UInt = #line) -> (RecordingDelegate, HTTP1Parser.FeedResult) {
    let whole = RecordingDelegate()
    let wholeParser = HTTP1Parser(kind: kind, limits: defaultLimits)
    wholeParser.delegate = whole
    let wholeResult = feed(wholeParser, text)
    for cut in 1..<max(1, text.utf8.count) {
        let split = RecordingDelegate()
        let splitParser = HTTP1Parser(kind: kind, limits: defaultLimits)
        splitParser.delegate = split
        let result = feed(splitParser, text, cuts: [cut])
        assertSame(whole, split, wholeResult, result, cut: cut, file: file, line: line)
    }
    return (whole, wholeResult)
}
