// Fuzz target: the HTTP/1 request and response parsers, with the relay's limits on.
//
// The first input byte chooses the parser (even: request, odd: response) and how the rest is
// split into reads; the rest is the message. Invariants, beyond "no crash" (AddressSanitizer):
//  - a head that parses, written out again with the relay's head writer, parses to the same
//    head (method or status, target, version, every field in order), whole or split;
//  - feeding the same bytes split in two reports the same heads as feeding them whole;
//  - no field the parser accepts has an empty name, a NUL, CR or LF in its value.

import ByteBuffers
import HTTP1

private final class Heads: HTTP1ParserDelegate {
    var heads: [[UInt8]] = []
    var written: [[UInt8]] = []

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        let head = parser.head
        // The version first, so that a comparison can leave it out (the writer always says 1.1).
        var text = Array("\(head.versionMajor).\(head.versionMinor) ".utf8)
        var out = ByteBuffer()
        if parser.kind == .request {
            text += Array(head.methodName) + [0x20] + Array(head.target)
            out.appendRequestLine(method: head.methodName, target: head.target)
        } else {
            text += Array("\(head.statusCode) ".utf8) + Array(head.reason)
            out.appendStatusLine(head.statusCode, reason: head.reason)
        }
        for field in head.fields {
            let name = head.name(field), value = head.value(field)
            precondition(!name.isEmpty, "a field with an empty name was accepted")
            precondition(!value.contains(0) && !value.contains(0x0D) && !value.contains(0x0A), "a value with NUL, CR or LF")
            text += [0x7C] + Array(name) + [0x3A] + Array(value)
            out.appendField(name, value)
        }
        out.appendEndOfHead()
        heads.append(text)
        written.append(Array(out.readableBytes))
        return .none
    }

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {}
    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {}
    func parserDidFinishChunk(_ parser: HTTP1Parser) {}
    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool { true }
}

private let limits = HeaderLimits(maxHeadBytes: 4096, maxFieldCount: 32)

/// The heads `bytes` parse to, fed in two reads split at `cut`, up to the first message.
private func parse(_ bytes: [UInt8], kind: HTTP1Parser.Kind, cut: Int) -> Heads {
    let parser = HTTP1Parser(kind: kind, limits: limits)
    let heads = Heads()
    parser.delegate = heads
    bytes.withUnsafeBytes { all in
        let split = min(cut, all.count)
        if case .failed = parser.feed(UnsafeRawBufferPointer(rebasing: all[..<split])) { return }
        if heads.heads.isEmpty { _ = parser.feed(UnsafeRawBufferPointer(rebasing: all[split...])) }
    }
    return heads
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP1(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 1 else { return 0 }
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    let kind: HTTP1Parser.Kind = input[0] & 1 == 0 ? .request : .response
    let message = Array(input[1...])
    let whole = parse(message, kind: kind, cut: message.count)
    let split = parse(message, kind: kind, cut: Int(input[0] >> 1))
    guard let first = whole.heads.first else { return 0 }
    precondition(split.heads.first == first, "a head parsed differently when split")
    // The head as the relay would write it parses to the same head. The writer speaks 1.1, and
    // an HTTP/1.0 head may lack what 1.1 requires (Host; the relay writes its own): 1.1 only.
    guard first.starts(with: Array("1.1 ".utf8)) else { return 0 }
    let again = parse(whole.written[0], kind: kind, cut: whole.written[0].count)
    guard let reparsed = again.heads.first else {
        preconditionFailure("the written head does not parse: \(String(decoding: whole.written[0], as: UTF8.self))")
    }
    precondition(reparsed.dropFirst(4) == first.dropFirst(4),
                 "the written head parses to another head: \(String(decoding: first, as: UTF8.self)) -> "
                    + String(decoding: reparsed, as: UTF8.self))
    return 0
}
