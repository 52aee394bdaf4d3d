// Fuzz target: request-path normalisation, the input of routing.
//
// Invariants: a normalised path is a fixed point (normalising it again changes nothing); it
// starts with "/" and has no "." or ".." segment, no "//"-free climb; and decoding an
// unreserved byte's %-escape does not change where a path normalises to.

import Routing

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestPath(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: start, count: count)
    var normalized: [UInt8] = []
    guard RequestPath.normalize(raw, into: &normalized) else { return 0 }
    precondition(normalized.first == UInt8(ascii: "/"), "a normalised path does not start with /")
    var again: [UInt8] = []
    let ok = normalized.withUnsafeBytes { RequestPath.normalize($0, into: &again) }
    precondition(ok && again == normalized, "normalisation is not a fixed point")
    let segments = normalized.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
    precondition(!segments.contains { $0.elementsEqual([0x2E]) || $0.elementsEqual([0x2E, 0x2E]) }, "a dot segment survived")
    // Spelling every unreserved letter of the normalised path as %XX normalises back to it.
    var escaped: [UInt8] = []
    var index = 0
    while index < normalized.count {
        let byte = normalized[index]
        if byte == UInt8(ascii: "%") {
            // An escape the normaliser kept (a reserved byte) stays as it is.
            escaped += normalized[index..<min(index + 3, normalized.count)]
            index += 3
            continue
        }
        if (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) {
            escaped += Array("%\(String(byte, radix: 16, uppercase: true))".utf8)
        } else {
            escaped.append(byte)
        }
        index += 1
    }
    var fromEscaped: [UInt8] = []
    let escapedOK = escaped.withUnsafeBytes { RequestPath.normalize($0, into: &fromEscaped) }
    precondition(escapedOK && fromEscaped == normalized, "%-escaping unreserved letters changed the normalised path")
    return 0
}
