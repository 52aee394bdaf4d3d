@testable import QRCode
import XCTest

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
