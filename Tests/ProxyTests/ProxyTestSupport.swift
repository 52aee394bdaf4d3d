import ByteBuffers
import Config
import HTTP1
@testable import Proxy
import HTTPFields
import Routing
import XCTest

/// A message head written line by line: each line ends with CRLF, and an empty line ends the
/// head. Both the messages fed to a parser and the heads the relay writes are spelled this way.
func head(_ lines: String...) -> String {
    head(lines)
}

func head(_ lines: [String]) -> String {
    lines.map { $0 + "\r\n" }.joined() + "\r\n"
}

/// Parses `text` (one whole message, or a head and part of its body) and returns the head the
/// parser collected; fails the test when the parser rejects it.
func parsedHead(_ text: String, kind: HTTP1Parser.Kind = .request,
                file: StaticString = #filePath, line: UInt = #line) -> HTTPHead {
    let parser = HTTP1Parser(kind: kind, limits: HeaderLimits(maxHeadBytes: 8192, maxFieldCount: 32))
    let result = Array(text.utf8).withUnsafeBytes { parser.feed($0) }
    if case .failed(let error) = result { XCTFail("the parser rejected the message: \(error)", file: file, line: line) }
    return parser.head
}

/// What a writer appended to an empty buffer, as text.
func written(_ write: (inout ByteBuffer) -> Void) -> String {
    var out = ByteBuffer()
    write(&out)
    return String(decoding: out.readableBytes, as: UTF8.self)
}

/// What `body` makes of the bytes of `text`.
func withBytes<R>(_ text: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
    Array(text.utf8).withUnsafeBytes(body)
}

/// The pseudonym every test relay uses in `Via`.
let viaSuffix = Array(" oauth-relay\r\n".utf8)

/// A route to `upstream` (parsed as the config would), with the given options.
func route(to upstream: String = "http://orders.internal:8080", pathPrefix: String = "/", stripPrefix: Bool = false,
           setHeaders: [HTTPField] = []) -> Route {
    guard let url = UpstreamURL(parsing: upstream) else { preconditionFailure("test upstream \(upstream) does not parse") }
    return Route(name: "orders", match: RouteMatch(pathPrefix: pathPrefix), upstream: url,
                 stripPrefix: stripPrefix, setHeaders: setHeaders)
}
