/// QR Code symbols (ISO/IEC 18004:2015), made from bytes, for showing a URL where a phone camera
/// can read it (the device login of `oauth-relay login`).
///
/// The encoder follows the standard's steps, one file each:
/// 1. `CodewordSequence`: the bytes in byte mode (§7.4.2) with the mode indicator and count,
///    terminator and pad codewords up to the smallest version that holds them (§7.4.9).
/// 2. `ReedSolomon`: per block, error correction codewords over GF(256) (§7.5.2); the blocks
///    (`SymbolVersion`, Table 9) are interleaved into the final message (§7.6).
/// 3. `ModuleGrid`: finder, separator, timing and alignment patterns (§6.3), then the message
///    placed in the zig-zag order of §7.7.3.
/// 4. `DataMask` and `MaskPenalty`: each of the eight masks is applied (§7.8.2) and scored
///    (§7.8.3); the lowest score wins. Then the format and version information
///    (`FunctionInformation`, §7.9, §7.10) complete the symbol.
///
/// Only byte mode: the symbols are for URLs, which numeric and alphanumeric modes would not
/// shorten by much (lower-case letters are not in the alphanumeric set). No ECI header is written:
/// readers take the bytes of a URL, which are ASCII, as they are.
public struct QRCode: Sendable, Equatable {
    /// 1…40; the symbol is 17 + 4 × version modules wide.
    public let version: Int
    public let errorCorrection: ErrorCorrection
    /// The data mask applied, 0…7 (§7.8.2).
    public let mask: Int
    /// Modules per side, not counting the quiet zone (4 modules of light the standard asks for
    /// around the symbol, §6.3.8), which is the renderer's to add.
    public let size: Int
    private let modules: [Bool]

    /// The symbol for `bytes` in the smallest version from `minimumVersion` on that holds them at
    /// `errorCorrection`, with the mask of the lowest penalty unless `mask` names one.
    public init(encoding bytes: [UInt8], errorCorrection: ErrorCorrection = .medium,
                minimumVersion: Int = 1, mask: Int? = nil) throws(QRCodeError) {
        guard SymbolVersion.range.contains(minimumVersion) else { throw .versionOutOfRange(minimumVersion) }
        if let mask, !DataMask.all.contains(mask) { throw .maskOutOfRange(mask) }
        guard let version = (minimumVersion...SymbolVersion.range.upperBound).lazy.map(SymbolVersion.init(number:))
            .first(where: { bytes.count <= CodewordSequence.byteCapacity($0, errorCorrection) }) else {
            let largest = SymbolVersion(number: SymbolVersion.range.upperBound)
            throw .dataTooLong(byteCount: bytes.count, maximum: CodewordSequence.byteCapacity(largest, errorCorrection),
                               errorCorrection: errorCorrection)
        }
        let data = CodewordSequence.dataCodewords(bytes, version, errorCorrection)
        var grid = ModuleGrid(version)
        grid.placeData(CodewordSequence.interleaved(data, version.blocks(errorCorrection)))
        let chosenMask = mask ?? Self.lowestPenaltyMask(grid)
        self.version = version.number
        self.errorCorrection = errorCorrection
        self.mask = chosenMask
        size = version.size
        modules = grid.masked(chosenMask).completed(version, level: errorCorrection, mask: chosenMask).dark
    }

    /// The mask whose symbol scores the fewest penalty points, the lowest-numbered on a tie. The
    /// symbols are scored before their format and version information is written: the standard's
    /// encoding procedure (§7.1) chooses the mask in step 6 and adds that information in step 7,
    /// so its modules, and the dark module, are light while the masks are compared.
    private static func lowestPenaltyMask(_ grid: ModuleGrid) -> Int {
        var best = (mask: 0, score: MaskPenalty.score(grid.masked(0).dark, size: grid.size))
        for mask in DataMask.all.dropFirst() {
            let score = MaskPenalty.score(grid.masked(mask).dark, size: grid.size)
            if score < best.score { best = (mask, score) }
        }
        return best.mask
    }

    /// The symbol for the UTF-8 bytes of `text`.
    public init(encoding text: String, errorCorrection: ErrorCorrection = .medium) throws(QRCodeError) {
        try self.init(encoding: Array(text.utf8), errorCorrection: errorCorrection)
    }

    /// Whether the module in column `x`, row `y` (from the top-left, 0..<size) is dark.
    public subscript(x: Int, y: Int) -> Bool {
        precondition((0..<size).contains(x) && (0..<size).contains(y), "module (\(x), \(y)) is outside a \(size)×\(size) symbol")
        return modules[y * size + x]
    }

    /// How many bytes a symbol of `version` holds at `errorCorrection` (Table 7's byte column).
    public static func byteCapacity(version: Int, errorCorrection: ErrorCorrection) throws(QRCodeError) -> Int {
        guard SymbolVersion.range.contains(version) else { throw .versionOutOfRange(version) }
        return CodewordSequence.byteCapacity(SymbolVersion(number: version), errorCorrection)
    }
}
