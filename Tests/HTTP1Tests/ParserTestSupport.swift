import CLLHTTP
import HTTP1
import XCTest

let defaultLimits = HeaderLimits(maxHeadBytes: 8192, maxFieldCount: 32)

/// The llhttp the tests run with, as its header says: 8.1 on Debian 12 (built from node-llhttp's
/// sources), 9.2 on Debian 13 (libllhttp-dev). Where the two differ, a test says what each does.
let llhttpVersion = (major: Int(LLHTTP_VERSION_MAJOR), minor: Int(LLHTTP_VERSION_MINOR))

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

func assertSame(_ a: RecordingDelegate, _ b: RecordingDelegate, _ ra: HTTP1Parser.FeedResult, _ rb: HTTP1Parser.FeedResult,
                cut: Int, file: StaticString, line: UInt) {
    XCTAssertEqual(a.heads, b.heads, "heads differ when split at \(cut)", file: file, line: line)
    XCTAssertEqual(b.fieldProblems, [], "fields accepted when split at \(cut)", file: file, line: line)
    XCTAssertEqual(a.body, b.body, "body differs when split at \(cut)", file: file, line: line)
    XCTAssertEqual(a.events.filter { !$0.hasPrefix("chunk") }, b.events.filter { !$0.hasPrefix("chunk") },
                   "events differ when split at \(cut)", file: file, line: line)
    switch (ra, rb) {
    case (.failed(let x), .failed(let y)): XCTAssertEqual(x.kind, y.kind, "error differs at \(cut)", file: file, line: line)
    case (.consumed, .consumed), (.paused, .paused), (.upgraded, .upgraded): break
    default: XCTFail("result \(ra) vs \(rb) when split at \(cut)", file: file, line: line)
    }
}
