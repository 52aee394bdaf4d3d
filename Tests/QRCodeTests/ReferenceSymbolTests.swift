import Foundation
import QRCode
import XCTest

/// Symbols compared module by module with two QR Code encoders the project did not write:
/// python-qrcode 8.2 for padded symbols (Fixtures/symbols) and segno 1.6.6 for every version and
/// level filled to capacity, with the mask it chooses (Fixtures/versions.txt). Both are pinned in
/// tests/requirements.txt; Fixtures/make_fixtures.py wrote the fixtures, and its docstring gives
/// their formats and why each reference serves where it does. To make them again:
///
///     .venv-test/bin/python Tests/QRCodeTests/Fixtures/make_fixtures.py
final class ReferenceSymbolTests: XCTestCase {
    private static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    private struct ReferenceSymbol {
        let name: String
        let input: [UInt8]
        let level: QRCode.ErrorCorrection
        let minimumVersion: Int
        let version: Int
        let mask: Int
        let rows: [String]
    }

    private func referenceSymbols() throws -> [ReferenceSymbol] {
        let directory = Self.fixtures.appendingPathComponent("symbols")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".txt") }.sorted()
        XCTAssertGreaterThanOrEqual(names.count, 9, "the reference symbols are missing")
        return try names.map { name in
            let lines = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
                .split(separator: "\n").map(String.init)
            var header: [String: String] = [:]
            for line in lines where line.hasPrefix("# ") {
                let parts = line.dropFirst(2).split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                header[String(parts[0])] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
            }
            func number(_ key: String) throws -> Int { try XCTUnwrap(Int(header[key] ?? ""), "\(name): \(key)") }
            return ReferenceSymbol(
                name: name, input: try hexBytes(XCTUnwrap(header["input-hex"])), level: try level(XCTUnwrap(header["level"])),
                minimumVersion: try number("min-version"), version: try number("version"), mask: try number("mask"),
                rows: lines.filter { !$0.hasPrefix("#") })
        }
    }

    func testSymbolsWithAFixedMaskMatchTheReferenceModuleForModule() throws {
        var masksSeen = Set<Int>()
        for reference in try referenceSymbols() {
            let symbol = try QRCode(encoding: reference.input, errorCorrection: reference.level,
                                    minimumVersion: reference.minimumVersion, mask: reference.mask)
            XCTAssertEqual(symbol.version, reference.version, reference.name)
            XCTAssertEqual(symbol.size, reference.rows.count, reference.name)
            let mismatches = differences(symbol, reference.rows)
            XCTAssertTrue(mismatches.isEmpty, "\(reference.name): \(mismatches.count) modules differ, first at \(mismatches.prefix(5))")
            masksSeen.insert(reference.mask)
        }
        XCTAssertEqual(masksSeen, Set(0..<8), "the fixtures should draw every mask pattern")
    }

    /// Every version at every level, filled to its capacity: the capacity, and the hash of the
    /// whole matrix, which the block structure (Table 9), the alignment patterns (Annex E) and the
    /// version information all change.
    func testEveryVersionAndLevelMatchesTheReferenceDigest() throws {
        for reference in try versionReferences() {
            let name = "\(reference.version)-\(reference.level)"
            XCTAssertEqual(try QRCode.byteCapacity(version: reference.version, errorCorrection: reference.level), reference.capacity, name)
            let symbol = try QRCode(encoding: reference.input, errorCorrection: reference.level,
                                    minimumVersion: reference.version, mask: reference.mask)
            XCTAssertEqual(symbol.version, reference.version, name)
            XCTAssertEqual(String(fnv1a64(rowsText(symbol)), radix: 16).leftPadded(to: 16), reference.digest, name)
        }
    }

    /// The mask the penalty rules choose (§7.8.3) is the one segno chooses: every version, at one
    /// level each, the four in turn (scoring eight masks of all 160 symbols takes a debug build
    /// over ten seconds; all 160 agree).
    func testTheMaskChosenByThePenaltyRulesIsTheReferences() throws {
        let levels = QRCode.ErrorCorrection.allCases
        for reference in try versionReferences() where reference.level == levels[reference.version % levels.count] {
            let symbol = try QRCode(encoding: reference.input, errorCorrection: reference.level, minimumVersion: reference.version)
            XCTAssertEqual(symbol.mask, reference.automaticMask, "\(reference.version)-\(reference.level)")
        }
    }

    // MARK: - Reading the fixtures

    private struct VersionReference {
        let version: Int
        let level: QRCode.ErrorCorrection
        let capacity: Int
        let mask: Int
        let digest: String
        let automaticMask: Int
        /// `filler` of make_fixtures.py: every byte value, different per version and level.
        var input: [UInt8] {
            let levelIndex = QRCode.ErrorCorrection.allCases.firstIndex(of: level)!
            return (0..<capacity).map { UInt8(truncatingIfNeeded: $0 * 7 + version * 13 + levelIndex) }
        }
    }

    private func versionReferences() throws -> [VersionReference] {
        let text = try String(contentsOf: Self.fixtures.appendingPathComponent("versions.txt"), encoding: .utf8)
        let references = try text.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: " ").map(String.init)
            func number(_ index: Int) throws -> Int { try XCTUnwrap(Int(fields[index]), String(line)) }
            return VersionReference(version: try number(0), level: try level(fields[1]), capacity: try number(2), mask: try number(3),
                                    digest: fields[4], automaticMask: try number(5))
        }
        XCTAssertEqual(references.count, 160)
        return references
    }

    private func level(_ letter: String) throws -> QRCode.ErrorCorrection {
        try XCTUnwrap(QRCode.ErrorCorrection.allCases.first { $0.description == letter }, "level \(letter)")
    }

    private func hexBytes(_ hex: String) throws -> [UInt8] {
        let digits = Array(hex.utf8)
        return try stride(from: 0, to: digits.count, by: 2).map { index in
            try XCTUnwrap(UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16))
        }
    }

    private func rowsText(_ symbol: QRCode) -> String {
        (0..<symbol.size).map { y in String((0..<symbol.size).map { symbol[$0, y] ? "1" : "0" }) + "\n" }.joined()
    }

    private func differences(_ symbol: QRCode, _ rows: [String]) -> [(x: Int, y: Int)] {
        var result: [(x: Int, y: Int)] = []
        for (y, row) in rows.enumerated() {
            for (x, module) in row.enumerated() where y < symbol.size && x < symbol.size && symbol[x, y] != (module == "1") {
                result.append((x, y))
            }
        }
        return result
    }

    private func fnv1a64(_ text: String) -> UInt64 {
        text.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01B3 }
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
