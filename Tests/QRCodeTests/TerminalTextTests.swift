import Foundation
import QRCode
import XCTest

/// The half-block drawing for terminals: read back into modules, and read by a real decoder.
final class TerminalTextTests: XCTestCase {
    private let url = "https://idp.example.com/realms/dev/device?user_code=WDJB-MJHT"

    /// The text back into modules: each line is two rows, ▀ the upper dark, ▄ the lower, █ both.
    /// SGR escape sequences (ESC [ … m) are dropped.
    private func modules(_ text: String) -> [[Bool]] {
        var rows: [[Bool]] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            var upper: [Bool] = [], lower: [Bool] = []
            var inEscape = false
            for character in line {
                if inEscape { inEscape = character != "m"; continue }
                switch character {
                case "\u{1B}": inEscape = true
                case "█": upper.append(true); lower.append(true)
                case "▀": upper.append(true); lower.append(false)
                case "▄": upper.append(false); lower.append(true)
                case " ": upper.append(false); lower.append(false)
                default: XCTFail("unexpected character \(character.unicodeScalars.map { String($0.value, radix: 16) }) in the drawing")
                }
            }
            rows += [upper, lower]
        }
        return rows
    }

    /// The symbol with `quietZone` light modules around it, row by row.
    private func expectedModules(_ symbol: QRCode, quietZone: Int) -> [[Bool]] {
        let span = symbol.size + 2 * quietZone
        return (0..<span).map { y in
            (0..<span).map { x in
                let column = x - quietZone, row = y - quietZone
                return (0..<symbol.size).contains(column) && (0..<symbol.size).contains(row) && symbol[column, row]
            }
        }
    }

    func testTheDrawingHoldsEveryModuleAndTheQuietZone() throws {
        let symbol = try QRCode(encoding: url)
        for quietZone in [0, 2, 4] {
            let text = symbol.terminalText(quietZone: quietZone, ansiColors: false)
            var rows = modules(text)
            // The span is odd (an odd size plus an even zone): the last line's lower half is past it.
            XCTAssertEqual(rows.count, symbol.size + 2 * quietZone + 1)
            XCTAssertEqual(rows.removeLast(), Array(repeating: false, count: symbol.size + 2 * quietZone))
            XCTAssertEqual(rows, expectedModules(symbol, quietZone: quietZone), "quiet zone \(quietZone)")
            XCTAssertEqual(text.split(separator: "\n").first?.count, symbol.terminalWidth(quietZone: quietZone))
        }
    }

    /// Dark text on a bright white ground on every line, reset before each line ends, so that a
    /// dark terminal theme neither inverts the symbol nor colours what follows.
    func testColoursAreSetOnEveryLineAndReset() throws {
        let symbol = try QRCode(encoding: url)
        let text = symbol.terminalText()
        let lines = text.split(separator: "\n")
        XCTAssertEqual(lines.count, (symbol.size + 4 + 1) / 2)
        for line in lines {
            XCTAssertTrue(line.hasPrefix("\u{1B}[30;107m"), String(line))
            XCTAssertTrue(line.hasSuffix("\u{1B}[0m"), String(line))
        }
        XCTAssertEqual(modules(text).dropLast(), modules(symbol.terminalText(ansiColors: false)).dropLast())
    }

    /// zbarimg (Debian zbar-tools, a decoder the project did not write) reads the drawing, turned
    /// into a grey-scale image at 4 pixels a module, back to the URL.
    func testADecoderReadsTheDrawingBackToTheURL() throws {
        let zbarimg = "/usr/bin/zbarimg"
        guard FileManager.default.isExecutableFile(atPath: zbarimg) else {
            return XCTFail("\(zbarimg) is missing: scripts/install-deps --unit-test or --test installs zbar-tools")
        }
        for (text, level) in [(url, QRCode.ErrorCorrection.medium), (url + "&session=" + String(repeating: "4f2c9a7e", count: 16), .high)] {
            let symbol = try QRCode(encoding: text, errorCorrection: level)
            let rows = Array(modules(symbol.terminalText()).dropLast())
            let image = FileManager.default.temporaryDirectory.appendingPathComponent("qr-\(UUID().uuidString).pgm")
            defer { try? FileManager.default.removeItem(at: image) }
            try pgm(rows, pixelsPerModule: 4).write(to: image)
            XCTAssertEqual(try run(zbarimg, ["--raw", "-q", image.path]), text + "\n", "version \(symbol.version)")
        }
    }

    /// A binary PGM (netpbm P5): dark modules black, light ones white.
    private func pgm(_ rows: [[Bool]], pixelsPerModule scale: Int) -> Data {
        let width = rows[0].count * scale, height = rows.count * scale
        var data = Data("P5\n\(width) \(height)\n255\n".utf8)
        for row in rows {
            let line = row.flatMap { Array(repeating: $0 ? UInt8(0) : 255, count: scale) }
            for _ in 0..<scale { data.append(contentsOf: line) }
        }
        return data
    }

    private func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "\(executable) \(arguments)")
        return String(decoding: data, as: UTF8.self)
    }
}
