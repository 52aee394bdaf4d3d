import ByteBuffers
import HTTP1

/// Records what a parser reports, as text that tests compare against.
final class RecordingDelegate: HTTP1ParserDelegate {
    var events: [String] = []
    var body: [UInt8] = []
    var heads: [String] = []
    var pauseAfterMessage = false
    var noBody = false
    /// Each head as the relay's head writer writes it out again.
    var writtenHeads: [[UInt8]] = []
    /// Each head's version, `major.minor`.
    var versions: [String] = []
    /// Fields the parser should never have accepted (an empty name; NUL, CR or LF in a value).
    var fieldProblems: [String] = []

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        let head = parser.head
        var line = parser.kind == .request
            ? "\(string(head.methodName)) \(string(head.target)) HTTP/\(head.versionMajor).\(head.versionMinor)"
            : "HTTP/\(head.versionMajor).\(head.versionMinor) \(head.statusCode) \(string(head.reason))"
        var written = ByteBuffer()
        if parser.kind == .request {
            written.appendRequestLine(method: head.methodName, target: head.target)
        } else {
            written.appendStatusLine(head.statusCode, reason: head.reason)
        }
        for field in head.fields {
            let name = head.name(field), value = head.value(field)
            line += "|\(string(name)): \(string(value))"
            if name.isEmpty { fieldProblems.append("an empty name") }
            if value.contains(where: { $0 == 0 || $0 == 0x0D || $0 == 0x0A }) { fieldProblems.append("NUL, CR or LF in \(string(name))") }
            written.appendField(field, of: head)
        }
        written.appendEndOfHead()
        writtenHeads.append(Array(written.readableBytes))
        versions.append("\(head.versionMajor).\(head.versionMinor)")
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
