/// What a version (1…40) fixes about a symbol: its size, where its alignment patterns are, and
/// how its codewords split into error correction blocks at each level.
struct SymbolVersion: Sendable, Equatable {
    static let range = 1...40

    let number: Int

    /// Modules per side: 21 for version 1, four more per version (§6.3.1, Table 1).
    var size: Int { 17 + 4 * number }

    /// Versions 7 and up carry their number in two 6×3 blocks; smaller ones are told apart by
    /// size alone (§7.10).
    var hasVersionInformation: Bool { number >= 7 }

    /// The character count indicator of byte mode is 8 bits long in versions 1–9 and 16 bits from
    /// version 10 on (§7.4.1, Table 3).
    var byteCountBits: Int { number <= 9 ? 8 : 16 }

    /// Row and column coordinates of the alignment patterns' centres (Annex E, Table E.1): a
    /// pattern sits at every pair of them except the three corners the finder patterns occupy.
    var alignmentCenters: [Int] { Self.alignmentTable[number - 1] }

    /// Modules left for codewords once the function patterns are placed (§7.7.3): the whole
    /// square less the finder patterns with their separators (3 × 8 × 8), the timing patterns
    /// between the finders, the two copies of the format information with the dark module (31),
    /// the alignment patterns (5 × 5 each, less the 5 modules each of those on row or column 6
    /// shares with a timing pattern), and the version information (2 × 18).
    /// `ModuleGridTests` checks this count against the grid the placement leaves.
    var dataModuleCount: Int {
        let centers = alignmentCenters.count
        let alignmentPatterns = centers == 0 ? 0 : centers * centers - 3
        let onTimingLines = centers == 0 ? 0 : 2 * (centers - 2)
        var functionModules = 3 * 64 + 2 * (size - 16) + 31 + 25 * alignmentPatterns - 5 * onTimingLines
        if hasVersionInformation { functionModules += 36 }
        return size * size - functionModules
    }

    /// All codewords, data and error correction; the modules past the last whole codeword are
    /// remainder bits, left light before masking (§7.6).
    var codewordCount: Int { dataModuleCount / 8 }

    func blocks(_ level: QRCode.ErrorCorrection) -> BlockStructure {
        let (errorCorrectionPerBlock, blockCount) = Self.blockTable[number - 1][level.tableIndex]
        return BlockStructure(codewordCount: codewordCount, errorCorrectionPerBlock: errorCorrectionPerBlock, blockCount: blockCount)
    }

    /// Table 9, per version, for L, M, Q, H: (error correction codewords per block, number of
    /// blocks). The table also lists the data codewords of each block; they follow from these two
    /// numbers and the symbol's codeword count (see `BlockStructure`), so they are not repeated.
    private static let blockTable: [[(Int, Int)]] = [
        /*  1 */ [(7, 1), (10, 1), (13, 1), (17, 1)],
        /*  2 */ [(10, 1), (16, 1), (22, 1), (28, 1)],
        /*  3 */ [(15, 1), (26, 1), (18, 2), (22, 2)],
        /*  4 */ [(20, 1), (18, 2), (26, 2), (16, 4)],
        /*  5 */ [(26, 1), (24, 2), (18, 4), (22, 4)],
        /*  6 */ [(18, 2), (16, 4), (24, 4), (28, 4)],
        /*  7 */ [(20, 2), (18, 4), (18, 6), (26, 5)],
        /*  8 */ [(24, 2), (22, 4), (22, 6), (26, 6)],
        /*  9 */ [(30, 2), (22, 5), (20, 8), (24, 8)],
        /* 10 */ [(18, 4), (26, 5), (24, 8), (28, 8)],
        /* 11 */ [(20, 4), (30, 5), (28, 8), (24, 11)],
        /* 12 */ [(24, 4), (22, 8), (26, 10), (28, 11)],
        /* 13 */ [(26, 4), (22, 9), (24, 12), (22, 16)],
        /* 14 */ [(30, 4), (24, 9), (20, 16), (24, 16)],
        /* 15 */ [(22, 6), (24, 10), (30, 12), (24, 18)],
        /* 16 */ [(24, 6), (28, 10), (24, 17), (30, 16)],
        /* 17 */ [(28, 6), (28, 11), (28, 16), (28, 19)],
        /* 18 */ [(30, 6), (26, 13), (28, 18), (28, 21)],
        /* 19 */ [(28, 7), (26, 14), (26, 21), (26, 25)],
        /* 20 */ [(28, 8), (26, 16), (30, 20), (28, 25)],
        /* 21 */ [(28, 8), (26, 17), (28, 23), (30, 25)],
        /* 22 */ [(28, 9), (28, 17), (30, 23), (24, 34)],
        /* 23 */ [(30, 9), (28, 18), (30, 25), (30, 30)],
        /* 24 */ [(30, 10), (28, 20), (30, 27), (30, 32)],
        /* 25 */ [(26, 12), (28, 21), (30, 29), (30, 35)],
        /* 26 */ [(28, 12), (28, 23), (28, 34), (30, 37)],
        /* 27 */ [(30, 12), (28, 25), (30, 34), (30, 40)],
        /* 28 */ [(30, 13), (28, 26), (30, 35), (30, 42)],
        /* 29 */ [(30, 14), (28, 28), (30, 38), (30, 45)],
        /* 30 */ [(30, 15), (28, 29), (30, 40), (30, 48)],
        /* 31 */ [(30, 16), (28, 31), (30, 43), (30, 51)],
        /* 32 */ [(30, 17), (28, 33), (30, 45), (30, 54)],
        /* 33 */ [(30, 18), (28, 35), (30, 48), (30, 57)],
        /* 34 */ [(30, 19), (28, 37), (30, 51), (30, 60)],
        /* 35 */ [(30, 19), (28, 38), (30, 53), (30, 63)],
        /* 36 */ [(30, 20), (28, 40), (30, 56), (30, 66)],
        /* 37 */ [(30, 21), (28, 43), (30, 59), (30, 70)],
        /* 38 */ [(30, 22), (28, 45), (30, 62), (30, 74)],
        /* 39 */ [(30, 24), (28, 47), (30, 65), (30, 77)],
        /* 40 */ [(30, 25), (28, 49), (30, 68), (30, 81)],
    ]

    /// Annex E, Table E.1: the first centre is always 6 (on the timing patterns), the last is
    /// size − 7, and those between are evenly spaced from the last, as the table fixes them.
    private static let alignmentTable: [[Int]] = [
        /*  1 */ [],
        /*  2 */ [6, 18],
        /*  3 */ [6, 22],
        /*  4 */ [6, 26],
        /*  5 */ [6, 30],
        /*  6 */ [6, 34],
        /*  7 */ [6, 22, 38],
        /*  8 */ [6, 24, 42],
        /*  9 */ [6, 26, 46],
        /* 10 */ [6, 28, 50],
        /* 11 */ [6, 30, 54],
        /* 12 */ [6, 32, 58],
        /* 13 */ [6, 34, 62],
        /* 14 */ [6, 26, 46, 66],
        /* 15 */ [6, 26, 48, 70],
        /* 16 */ [6, 26, 50, 74],
        /* 17 */ [6, 30, 54, 78],
        /* 18 */ [6, 30, 56, 82],
        /* 19 */ [6, 30, 58, 86],
        /* 20 */ [6, 34, 62, 90],
        /* 21 */ [6, 28, 50, 72, 94],
        /* 22 */ [6, 26, 50, 74, 98],
        /* 23 */ [6, 30, 54, 78, 102],
        /* 24 */ [6, 28, 54, 80, 106],
        /* 25 */ [6, 32, 58, 84, 110],
        /* 26 */ [6, 30, 58, 86, 114],
        /* 27 */ [6, 34, 62, 90, 118],
        /* 28 */ [6, 26, 50, 74, 98, 122],
        /* 29 */ [6, 30, 54, 78, 102, 126],
        /* 30 */ [6, 26, 52, 78, 104, 130],
        /* 31 */ [6, 30, 56, 82, 108, 134],
        /* 32 */ [6, 34, 60, 86, 112, 138],
        /* 33 */ [6, 30, 58, 86, 114, 142],
        /* 34 */ [6, 34, 62, 90, 118, 146],
        /* 35 */ [6, 30, 54, 78, 102, 126, 150],
        /* 36 */ [6, 24, 50, 76, 102, 128, 154],
        /* 37 */ [6, 28, 54, 80, 106, 132, 158],
        /* 38 */ [6, 32, 58, 84, 110, 136, 162],
        /* 39 */ [6, 26, 54, 82, 110, 138, 166],
        /* 40 */ [6, 30, 58, 86, 114, 142, 170],
    ]
}

/// How one version's codewords at one level divide into blocks (§7.5.1, Table 9): every block has
/// the same number of error correction codewords; the data codewords are shared out as evenly as
/// possible, the blocks of the first group having one fewer than those of the second.
struct BlockStructure: Sendable, Equatable {
    let errorCorrectionPerBlock: Int
    let blockCount: Int
    /// Data codewords of the whole symbol.
    let dataCodewordCount: Int
    /// Data codewords in each block of the first group; the second group's have one more.
    let shortBlockDataCount: Int
    /// How many blocks have `shortBlockDataCount + 1` data codewords (the later ones).
    let longBlockCount: Int

    init(codewordCount: Int, errorCorrectionPerBlock: Int, blockCount: Int) {
        self.errorCorrectionPerBlock = errorCorrectionPerBlock
        self.blockCount = blockCount
        dataCodewordCount = codewordCount - errorCorrectionPerBlock * blockCount
        shortBlockDataCount = dataCodewordCount / blockCount
        longBlockCount = dataCodewordCount % blockCount
    }

    /// The data codewords of block `index` (0-based, in the order of Table 9's groups).
    func dataCount(ofBlock index: Int) -> Int {
        shortBlockDataCount + (index >= blockCount - longBlockCount ? 1 : 0)
    }
}
