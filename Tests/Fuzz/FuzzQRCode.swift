// Fuzz target: QR Code symbols of arbitrary bytes, as `oauth-relay login` draws a device login's
// verification URI.
//
// The first byte chooses the error correction level (bits 0–1), the smallest version (bits 2–4:
// 1, 5, 9, … 29) and the mask (bits 5–7: 0 lets the penalty rules choose, 1–7 fix that one); the
// rest, cut to 600 bytes so that one input stays fast, is the data. Invariants: a symbol or a
// typed error, never a crash; a symbol is 17 + 4 × version modules wide, in the version asked for
// or above, the smallest that holds the data; an error only for data too long for version 40;
// the terminal drawing has one line per two rows of modules, each as wide as the symbol and its
// quiet zone.

import QRCode

private let levels: [QRCode.ErrorCorrection] = [.low, .medium, .quartile, .high]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQRCode(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    let level = levels[Int(input[0] & 3)]
    let minimumVersion = 1 + 4 * Int((input[0] >> 2) & 7)
    let fixedMask = input[0] >> 5 == 0 ? nil : Int(input[0] >> 5)
    let data = Array(input.dropFirst().prefix(600))
    let largest = try! QRCode.byteCapacity(version: 40, errorCorrection: level)
    do {
        let symbol = try QRCode(encoding: data, errorCorrection: level, minimumVersion: minimumVersion, mask: fixedMask)
        precondition(symbol.size == 17 + 4 * symbol.version, "size \(symbol.size) for version \(symbol.version)")
        precondition(symbol.version >= minimumVersion && data.count <= (try! QRCode.byteCapacity(version: symbol.version, errorCorrection: level)),
                     "version \(symbol.version) for \(data.count) bytes from version \(minimumVersion)")
        precondition(symbol.version == minimumVersion
                     || data.count > (try! QRCode.byteCapacity(version: symbol.version - 1, errorCorrection: level)),
                     "version \(symbol.version) is not the smallest for \(data.count) bytes")
        precondition(fixedMask.map { symbol.mask == $0 } ?? (0..<8).contains(symbol.mask), "mask \(symbol.mask)")
        let lines = symbol.terminalText(quietZone: 2, ansiColors: false).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        precondition(lines.count == (symbol.size + 5) / 2 && lines.allSatisfy { $0.count == symbol.size + 4 },
                     "a drawing of \(lines.count) lines for a \(symbol.size)-module symbol")
    } catch {
        precondition(error == .dataTooLong(byteCount: data.count, maximum: largest, errorCorrection: level) && data.count > largest,
                     "\(error) for \(data.count) bytes")
    }
    return 0
}
