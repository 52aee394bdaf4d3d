@testable import QRCode
import XCTest

/// The layout of function patterns and the penalty rules, each on its own.
final class ModuleGridTests: XCTestCase {
    /// The count of data modules `SymbolVersion` computes is the count the grid leaves free, and
    /// gives Table 1's codewords and remainder bits.
    func testDataModulesAreTheModulesTheFunctionPatternsLeave() {
        for number in SymbolVersion.range {
            let version = SymbolVersion(number: number)
            let grid = ModuleGrid(version)
            XCTAssertEqual(grid.isFunction.filter { !$0 }.count, version.dataModuleCount, "version \(number)")
        }
        let table1: [(version: Int, codewords: Int, remainderBits: Int)] = [
            (1, 26, 0), (2, 44, 7), (6, 172, 7), (7, 196, 0), (14, 581, 3), (21, 1156, 4), (28, 1921, 3), (35, 2876, 0), (40, 3706, 0),
        ]
        for row in table1 {
            let version = SymbolVersion(number: row.version)
            XCTAssertEqual(version.codewordCount, row.codewords, "version \(row.version)")
            XCTAssertEqual(version.dataModuleCount % 8, row.remainderBits, "version \(row.version)")
        }
    }

    /// Table 9's groups follow from the codeword count: 7-H has 5 blocks of 26 error correction
    /// codewords, so 196 − 130 = 66 data codewords, 4 blocks of 13 and 1 of 14.
    func testBlocksShareTheDataCodewordsAsTable9Does() {
        let blocks = SymbolVersion(number: 7).blocks(.high)
        XCTAssertEqual(blocks.dataCodewordCount, 66)
        XCTAssertEqual((0..<blocks.blockCount).map(blocks.dataCount(ofBlock:)), [13, 13, 13, 13, 14])
        // 5-Q: 2 blocks of 15 and 2 of 16 data codewords, 18 error correction codewords each.
        let fiveQ = SymbolVersion(number: 5).blocks(.quartile)
        XCTAssertEqual((0..<fiveQ.blockCount).map(fiveQ.dataCount(ofBlock:)), [15, 15, 16, 16])
    }

    /// Interleaving (§7.6): data codeword i of each block in turn, the longer blocks' extra one
    /// last, then the error correction codewords likewise.
    func testInterleavingTakesOneCodewordOfEachBlockInTurn() {
        let blocks = SymbolVersion(number: 5).blocks(.quartile)
        let data = (0..<UInt8(62)).map { $0 }
        let message = CodewordSequence.interleaved(data, blocks)
        XCTAssertEqual(message.count, 62 + 4 * 18)
        XCTAssertEqual(Array(message.prefix(8)), [0, 15, 30, 46, 1, 16, 31, 47])
        XCTAssertEqual(Array(message[56..<62]), [14, 29, 44, 60, 45, 61])
        XCTAssertEqual(Array(message[62..<66]), [
            ReedSolomon.errorCorrectionCodewords(for: Array(data[0..<15]), count: 18)[0],
            ReedSolomon.errorCorrectionCodewords(for: Array(data[15..<30]), count: 18)[0],
            ReedSolomon.errorCorrectionCodewords(for: Array(data[30..<46]), count: 18)[0],
            ReedSolomon.errorCorrectionCodewords(for: Array(data[46..<62]), count: 18)[0],
        ])
    }
}

/// Each penalty rule of §7.8.3 (Table 11) on modules made for it.
final class MaskPenaltyTests: XCTestCase {
    /// Modules from "#" (dark) and "." (light).
    private func modules(_ text: String) -> [Bool] { text.map { $0 == "#" } }

    private func onLine<Result>(_ text: String, _ rule: (MaskPenalty.Line) -> Result) -> Result {
        modules(text).withUnsafeBufferPointer { rule(MaskPenalty.Line(modules: $0, first: 0, step: 1, length: text.count)) }
    }

    func testN1RunsOfFiveOrMore() {
        XCTAssertEqual(onLine("####.#.#", MaskPenalty.runs), 0)
        XCTAssertEqual(onLine("#####.#.", MaskPenalty.runs), 3)
        XCTAssertEqual(onLine(".#######", MaskPenalty.runs), 5)
        XCTAssertEqual(onLine("......#.#####", MaskPenalty.runs), 4 + 3)
    }

    func testN2BlocksOfOneColourOverlap() {
        // 3×3: the four 2×2 blocks of an all-dark square; a light centre spoils all four, a light
        // corner one.
        XCTAssertEqual(modules("#########").withUnsafeBufferPointer { MaskPenalty.blocks($0, size: 3) }, 12)
        XCTAssertEqual(modules("####.####").withUnsafeBufferPointer { MaskPenalty.blocks($0, size: 3) }, 0)
        XCTAssertEqual(modules(".########").withUnsafeBufferPointer { MaskPenalty.blocks($0, size: 3) }, 9)
    }

    /// A finder-like pattern counts with 4 light modules before or after it, the quiet zone beyond
    /// the edge being light; two patterns sharing modules count once.
    func testN3FinderLikePatterns() {
        XCTAssertEqual(onLine("....#.###.#", MaskPenalty.finderLike), 40)
        XCTAssertEqual(onLine("#.###.#....", MaskPenalty.finderLike), 40)
        XCTAssertEqual(onLine("#.###.#", MaskPenalty.finderLike), 40, "the quiet zone on both sides")
        XCTAssertEqual(onLine("#.#.###.#.#.###", MaskPenalty.finderLike), 0, "dark within 4 modules on both sides")
        XCTAssertEqual(onLine("##...#.###.#...##", MaskPenalty.finderLike), 0, "only 3 light modules on either side")
        XCTAssertEqual(onLine("....#.###.###.#....", MaskPenalty.finderLike), 40, "overlapping: one feature")
        XCTAssertEqual(onLine("....#.###.#....#.###.#....", MaskPenalty.finderLike), 80)
    }

    func testN4BalanceInStepsOfFivePercent() {
        func balance(dark: Int, of count: Int) -> Int {
            modules(String(repeating: "#", count: dark) + String(repeating: ".", count: count - dark))
                .withUnsafeBufferPointer(MaskPenalty.balance)
        }
        XCTAssertEqual(balance(dark: 50, of: 100), 0)
        XCTAssertEqual(balance(dark: 54, of: 100), 0)
        XCTAssertEqual(balance(dark: 55, of: 100), 10)
        XCTAssertEqual(balance(dark: 39, of: 100), 20)
        XCTAssertEqual(balance(dark: 0, of: 100), 100)
    }

    /// The whole score is the four rules' sum over every row and column.
    func testTheScoreSumsTheRulesOverRowsAndColumns() {
        let board = (0..<12).map { y in String((0..<12).map { ($0 + y) % 2 == 0 ? "#" : "." }) }.joined()
        XCTAssertEqual(MaskPenalty.score(modules(board), size: 12), 0)
        // All light, 6×6: 12 runs of 6 (4 each), 25 blocks (3 each), 50 % off balance (100).
        XCTAssertEqual(MaskPenalty.score(modules(String(repeating: ".", count: 36)), size: 6), 12 * 4 + 25 * 3 + 100)
    }
}
