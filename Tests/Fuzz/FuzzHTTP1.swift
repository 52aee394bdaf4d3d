// Fuzz target: the HTTP/1 request and response parsers, with the relay's limits on.
//
// The first input byte chooses the parser (even: request, odd: response) and how the rest is
// split into reads; the rest is the message. Invariants, beyond "no crash" (AddressSanitizer):
//  - a head that parses, written out again with the relay's head writer, parses to the same
//    head (method or status, target, version, every field in order), whole or split;
//  - feeding the same bytes split in two reports the same heads as feeding them whole;
//  - no field the parser accepts has an empty name, a NUL, CR or LF in its value.
//
// Heads are recorded by the unit tests' RecordingDelegate (scripts/fuzz compiles it in).

import ByteBuffers
import HTTP1

private let limits = HeaderLimits(maxHeadBytes: 4096, maxFieldCount: 32)

/// The heads `bytes` parse to, fed in two reads split at `cut`, up to the first message.
private func parse(_ bytes: [UInt8], kind: HTTP1Parser.Kind, cut: Int) -> RecordingDelegate {
    let parser = HTTP1Parser(kind: kind, limits: limits)
    let heads = RecordingDelegate()
    heads.noBody = true
    heads.pauseAfterMessage = true
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
    precondition(whole.fieldProblems.isEmpty, "a field was accepted with \(whole.fieldProblems)")
    guard let first = whole.heads.first else { return 0 }
    precondition(split.heads.first == first, "a head parsed differently when split")
    // The head as the relay would write it parses to the same head. The writer speaks 1.1, and
    // an HTTP/1.0 head may lack what 1.1 requires (Host; the relay writes its own): 1.1 only.
    guard whole.versions.first == "1.1" else { return 0 }
    let again = parse(whole.writtenHeads[0], kind: kind, cut: whole.writtenHeads[0].count)
    guard let reparsed = again.heads.first else {
        preconditionFailure("the written head does not parse: \(String(decoding: whole.writtenHeads[0], as: UTF8.self))")
    }
    precondition(reparsed == first, "the written head parses to another head: \(first) -> \(reparsed)")
    return 0
}
