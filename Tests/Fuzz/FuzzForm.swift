// Fuzz target: application/x-www-form-urlencoded, as token requests are written and read.
//
// The input is taken as text (invalid UTF-8 repaired) and cut at NUL bytes into names and values.
// Invariants: any text decodes without a crash; encoded pairs decode to the same pairs, in order;
// an encoded text holds only unreserved characters, `+`, `%XX` (upper-case hex), `=` and `&`.

import OAuth2

private let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+%=&".utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzForm(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    _ = FormURLEncoding.decode(text)
    let parts = text.split(separator: "\0", omittingEmptySubsequences: false).map(String.init)
    let pairs = stride(from: 0, to: parts.count, by: 2).map { (name: parts[$0], value: $0 + 1 < parts.count ? parts[$0 + 1] : "") }
    let encoded = FormURLEncoding.encode(pairs)
    precondition(encoded.utf8.allSatisfy(allowed.contains), "an encoding with a byte outside the form alphabet: \(encoded)")
    var index = encoded.utf8.startIndex
    while let percent = encoded.utf8[index...].firstIndex(of: UInt8(ascii: "%")) {
        let digits = encoded.utf8[encoded.utf8.index(after: percent)...].prefix(2)
        precondition(digits.count == 2 && digits.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x46) },
                     "a % not followed by two upper-case hex digits: \(encoded)")
        index = encoded.utf8.index(after: percent)
    }
    let decoded = FormURLEncoding.decode(encoded)
    precondition(decoded.map(\.name) == pairs.map(\.name) && decoded.map(\.value) == pairs.map(\.value),
                 "encoded pairs decode to other pairs: \(pairs) -> \(decoded)")
    return 0
}
