/// The square of modules while a symbol is built: which are dark, and which belong to function
/// patterns (finders, separators, timing, alignment, format and version information), which
/// neither the data nor the mask may touch (ISO/IEC 18004:2015 §6.3, §7.7–§7.10).
/// Coordinates are (x: column, y: row) from the top-left corner.
struct ModuleGrid: Sendable, Equatable {
    let size: Int
    private(set) var dark: [Bool]
    private(set) var isFunction: [Bool]

    /// A grid with the finder, separator, timing and alignment patterns drawn, and the modules of
    /// the format information, the dark module and the version information reserved: light until
    /// `completed(_:level:mask:)` fills them in, once a mask is chosen (§7.1 steps 6 and 7).
    init(_ version: SymbolVersion) {
        size = version.size
        dark = Array(repeating: false, count: size * size)
        isFunction = dark
        // Timing patterns first (§6.3.5): row and column 6 alternate dark and light, starting
        // dark; the finders drawn next cover their ends.
        for index in 0..<size {
            setFunction(index, 6, dark: index % 2 == 0)
            setFunction(6, index, dark: index % 2 == 0)
        }
        for (x, y) in [(3, 3), (size - 4, 3), (3, size - 4)] { drawFinder(centerX: x, centerY: y) }
        let centers = version.alignmentCenters
        for x in centers {
            for y in centers {
                // The three corners where a finder pattern already is get no alignment pattern.
                let nearFinder = (x == centers.first && (y == centers.first || y == centers.last))
                    || (x == centers.last && y == centers.first)
                if !nearFinder { drawAlignment(centerX: x, centerY: y) }
            }
        }
        drawFormatInformation(0)
        setFunction(8, size - 8, dark: false)
        if version.hasVersionInformation { drawVersionInformation(0) }
    }

    private mutating func setFunction(_ x: Int, _ y: Int, dark value: Bool) {
        dark[y * size + x] = value
        isFunction[y * size + x] = true
    }

    /// A 7×7 finder pattern (§6.3.3: dark ring, light ring, 3×3 dark centre) and the light
    /// separator around it, clipped where it would fall outside the symbol.
    private mutating func drawFinder(centerX: Int, centerY: Int) {
        for dy in -4...4 {
            for dx in -4...4 {
                let x = centerX + dx, y = centerY + dy
                guard (0..<size).contains(x), (0..<size).contains(y) else { continue }
                let ring = max(abs(dx), abs(dy))
                setFunction(x, y, dark: ring <= 1 || ring == 3)
            }
        }
    }

    /// A 5×5 alignment pattern (§6.3.6): dark ring, light ring, one dark centre module.
    private mutating func drawAlignment(centerX: Int, centerY: Int) {
        for dy in -2...2 {
            for dx in -2...2 {
                setFunction(centerX + dx, centerY + dy, dark: max(abs(dx), abs(dy)) != 1)
            }
        }
    }

    /// Both copies of the 15 format bits (§7.9.1, Figure 25), bit 0 the least significant. Around
    /// the upper-left finder, from bit 0 at the top: down column 8, then left along row 8, stepping
    /// over the timing patterns. The other copy: bits 0–7 leftwards along row 8 from the right edge
    /// (under the upper-right finder), bits 8–14 down column 8 to the bottom edge (beside the
    /// lower-left finder).
    private mutating func drawFormatInformation(_ bits: UInt32) {
        for index in 0..<15 {
            let value = (bits >> UInt32(index)) & 1 == 1
            switch index {
            case 0...5: setFunction(8, index, dark: value)
            case 6: setFunction(8, 7, dark: value)
            case 7: setFunction(8, 8, dark: value)
            case 8: setFunction(7, 8, dark: value)
            default: setFunction(14 - index, 8, dark: value)
            }
            if index < 8 {
                setFunction(size - 1 - index, 8, dark: value)
            } else {
                setFunction(8, size - 15 + index, dark: value)
            }
        }
    }

    /// Both copies of the 18 version bits (§7.10, Figure 27): bit i at column i / 3, row
    /// size − 11 + i % 3 (a 6×3 block above the lower-left finder), and transposed (a 3×6 block left
    /// of the upper-right finder).
    private mutating func drawVersionInformation(_ bits: UInt32) {
        for index in 0..<18 {
            let value = (bits >> UInt32(index)) & 1 == 1
            let across = index / 3, along = size - 11 + index % 3
            setFunction(across, along, dark: value)
            setFunction(along, across, dark: value)
        }
    }

    /// Places the final message's bits (§7.7.3): most significant bit of each codeword first, in
    /// two-module-wide columns from the right edge, upwards then downwards in turn, each pair of
    /// modules right before left, skipping function modules and the vertical timing column. The
    /// modules left once the bits run out are the remainder bits: light.
    mutating func placeData(_ codewords: [UInt8]) {
        let bitCount = codewords.count * 8
        var next = 0
        var upward = true
        var right = size - 1
        while right > 0 {
            if right == 6 { right = 5 }
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for x in [right, right - 1] where !isFunction[y * size + x] {
                    if next < bitCount {
                        dark[y * size + x] = codewords[next / 8] & (0x80 >> UInt8(next % 8)) != 0
                    }
                    next += 1
                }
            }
            upward.toggle()
            right -= 2
        }
    }

    /// This grid with data mask `mask` applied to every module outside the function patterns
    /// (§7.8.2).
    func masked(_ mask: Int) -> ModuleGrid {
        var result = self
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] && DataMask.inverts(mask, row: y, column: x) {
                result.dark[y * size + x].toggle()
            }
        }
        return result
    }

    /// The symbol once the mask is chosen: the format information naming the level and mask
    /// (§7.9), the dark module beside it (§7.9.1: always dark, not part of the information), and
    /// from version 7 on the version information (§7.10).
    func completed(_ version: SymbolVersion, level: QRCode.ErrorCorrection, mask: Int) -> ModuleGrid {
        var result = self
        result.drawFormatInformation(FunctionInformation.formatBits(level, mask: mask))
        result.setFunction(8, size - 8, dark: true)
        if version.hasVersionInformation { result.drawVersionInformation(FunctionInformation.versionBits(version.number)) }
        return result
    }
}

/// The eight data mask patterns (§7.8.2, Table 10). A mask inverts the modules where its
/// condition holds, so that the data does not happen to form patterns that look like finders or
/// large areas of one colour; i is the row and j the column.
enum DataMask {
    static let all = 0..<8

    static func inverts(_ mask: Int, row i: Int, column j: Int) -> Bool {
        switch mask {
        case 0: (i + j) % 2 == 0
        case 1: i % 2 == 0
        case 2: j % 3 == 0
        case 3: (i + j) % 3 == 0
        case 4: (i / 2 + j / 3) % 2 == 0
        case 5: (i * j) % 2 + (i * j) % 3 == 0
        case 6: ((i * j) % 2 + (i * j) % 3) % 2 == 0
        default: ((i + j) % 2 + (i * j) % 3) % 2 == 0
        }
    }
}
