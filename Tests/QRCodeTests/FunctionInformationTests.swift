@testable import QRCode
import XCTest

/// The BCH codes of the format and version information against the standard's tables.
final class FunctionInformationTests: XCTestCase {
    /// Annex C, Table C.1: the 15-bit format information after masking, per level and mask 0…7.
    func testFormatInformationOfTableC1() {
        let table: [(QRCode.ErrorCorrection, [UInt32])] = [
            (.low, [0x77C4, 0x72F3, 0x7DAA, 0x789D, 0x662F, 0x6318, 0x6C41, 0x6976]),
            (.medium, [0x5412, 0x5125, 0x5E7C, 0x5B4B, 0x45F9, 0x40CE, 0x4F97, 0x4AA0]),
            (.quartile, [0x355F, 0x3068, 0x3F31, 0x3A06, 0x24B4, 0x2183, 0x2EDA, 0x2BED]),
            (.high, [0x1689, 0x13BE, 0x1CE7, 0x19D0, 0x0762, 0x0255, 0x0D0C, 0x083B]),
        ]
        for (level, values) in table {
            XCTAssertEqual((0..<8).map { FunctionInformation.formatBits(level, mask: $0) }, values, "\(level)")
        }
    }

    /// Annex D, Table D.1: the 18-bit version information of versions 7…40.
    func testVersionInformationOfTableD1() {
        let table: [UInt32] = [
            0x07C94, 0x085BC, 0x09A99, 0x0A4D3, 0x0BBF6, 0x0C762, 0x0D847, 0x0E60D, 0x0F928, 0x10B78,
            0x1145D, 0x12A17, 0x13532, 0x149A6, 0x15683, 0x168C9, 0x177EC, 0x18EC4, 0x191E1, 0x1AFAB,
            0x1B08E, 0x1CC1A, 0x1D33F, 0x1ED75, 0x1F250, 0x209D5, 0x216F0, 0x228BA, 0x2379F, 0x24B0B,
            0x2542E, 0x26A64, 0x27541, 0x28C69,
        ]
        XCTAssertEqual((7...40).map(FunctionInformation.versionBits), table)
    }
}
