@testable import QRCode
import XCTest

/// The layout of the function patterns, the blocks and their interleaving.
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
