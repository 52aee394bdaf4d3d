@testable import QRCode
import XCTest

/// Choosing the version, the data codewords, and the errors for what cannot be encoded.
final class EncodingTests: XCTestCase {
    /// Byte mode (§7.4.2): mode 0100, an 8-bit count, the bytes, the terminator 0000, then the
    /// pad codewords 11101100 and 00010001 in turn up to 1-M's 16 data codewords (§7.4.9, §7.4.10).
    func testDataCodewordsOfAShortText() {
        let codewords = CodewordSequence.dataCodewords(Array("AB".utf8), SymbolVersion(number: 1), .medium)
        XCTAssertEqual(codewords, [0x40, 0x24, 0x14, 0x20, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11])
    }

    /// From version 10 the count takes 16 bits (Table 3), and a text that fills the symbol leaves no
    /// room for the terminator, which is then cut short (§7.4.9).
    func testSixteenBitCountAndATerminatorCutShort() throws {
        let version = SymbolVersion(number: 10)
        let capacity = try QRCode.byteCapacity(version: 10, errorCorrection: .medium)
        XCTAssertEqual(capacity, 213)
        let codewords = CodewordSequence.dataCodewords(Array(repeating: 0xFF, count: capacity), version, .medium)
        XCTAssertEqual(codewords.count, version.blocks(.medium).dataCodewordCount)
        // 0100, then 213 = 0x00D5 in 16 bits, then the first byte: 0100 0000 0000 0000 1101 0101 1111 …
        XCTAssertEqual(Array(codewords.prefix(3)), [0x40, 0x0D, 0x5F])
        // The last of the 216 codewords: the last data byte's low four bits, and four terminator bits.
        XCTAssertEqual(codewords.last, 0xF0)
    }

    /// Table 7's byte capacities at the corners of the table.
    func testCapacitiesOfTable7() throws {
        XCTAssertEqual(try QRCode.byteCapacity(version: 1, errorCorrection: .low), 17)
        XCTAssertEqual(try QRCode.byteCapacity(version: 1, errorCorrection: .high), 7)
        XCTAssertEqual(try QRCode.byteCapacity(version: 40, errorCorrection: .low), 2953)
        XCTAssertEqual(try QRCode.byteCapacity(version: 40, errorCorrection: .high), 1273)
    }

    func testTheSmallestVersionThatHoldsTheTextIsChosen() throws {
        for version in 1...39 {
            let capacity = try QRCode.byteCapacity(version: version, errorCorrection: .quartile)
            XCTAssertEqual(try QRCode(encoding: Array(repeating: 0x61, count: capacity), errorCorrection: .quartile, mask: 0).version, version)
            XCTAssertEqual(try QRCode(encoding: Array(repeating: 0x61, count: capacity + 1), errorCorrection: .quartile, mask: 0).version, version + 1)
        }
        let symbol = try QRCode(encoding: Array("a".utf8), minimumVersion: 5, mask: 3)
        XCTAssertEqual(symbol.version, 5)
        XCTAssertEqual(symbol.size, 37)
        XCTAssertEqual(symbol.mask, 3)
        XCTAssertEqual(symbol.errorCorrection, .medium)
    }

    func testTooLongForTheLargestSymbol() throws {
        for level in QRCode.ErrorCorrection.allCases {
            let maximum = try QRCode.byteCapacity(version: 40, errorCorrection: level)
            XCTAssertEqual(try QRCode(encoding: Array(repeating: 0x7A, count: maximum), errorCorrection: level, mask: 1).version, 40)
            XCTAssertThrowsError(try QRCode(encoding: Array(repeating: 0x7A, count: maximum + 1), errorCorrection: level)) { error in
                XCTAssertEqual(error as? QRCodeError, .dataTooLong(byteCount: maximum + 1, maximum: maximum, errorCorrection: level))
            }
        }
        XCTAssertEqual(QRCodeError.dataTooLong(byteCount: 2332, maximum: 2331, errorCorrection: .medium).description,
                       "2332 bytes do not fit in a QR code at error correction level M (at most 2331 bytes)")
    }

    func testVersionsAndMasksOutOfRange() {
        XCTAssertThrowsError(try QRCode(encoding: [], minimumVersion: 0)) { XCTAssertEqual($0 as? QRCodeError, .versionOutOfRange(0)) }
        XCTAssertThrowsError(try QRCode(encoding: [], minimumVersion: 41)) { XCTAssertEqual($0 as? QRCodeError, .versionOutOfRange(41)) }
        XCTAssertThrowsError(try QRCode(encoding: [], mask: 8)) { XCTAssertEqual($0 as? QRCodeError, .maskOutOfRange(8)) }
        XCTAssertThrowsError(try QRCode(encoding: [], mask: -1)) { XCTAssertEqual($0 as? QRCodeError, .maskOutOfRange(-1)) }
        XCTAssertThrowsError(try QRCode.byteCapacity(version: 0, errorCorrection: .low)) {
            XCTAssertEqual($0 as? QRCodeError, .versionOutOfRange(0))
        }
        XCTAssertEqual(QRCodeError.versionOutOfRange(41).description, "QR code version 41 does not exist (versions are 1 to 40)")
    }

    /// The text initialiser encodes the UTF-8 bytes.
    func testTextIsEncodedAsUTF8() throws {
        XCTAssertEqual(try QRCode(encoding: "Grüße ✓"), try QRCode(encoding: Array("Grüße ✓".utf8)))
        XCTAssertEqual(try QRCode(encoding: "Grüße ✓").version, 1)
    }
}
