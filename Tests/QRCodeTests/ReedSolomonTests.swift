@testable import QRCode
import XCTest

/// Reed–Solomon over GF(256) against the standard's own numbers.
final class ReedSolomonTests: XCTestCase {
    /// ISO/IEC 18004:2015 Annex I: "01234567" in numeric mode as a 1-M symbol; its 16 data
    /// codewords (the example's bit stream, padded) and the 10 error correction codewords the
    /// example gives for them.
    func testTheStandardsVersion1MExample() {
        let data: [UInt8] = [0b0001_0000, 0b0010_0000, 0b0000_1100, 0b0101_0110, 0b0110_0001, 0b1000_0000,
                             0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11, 0xEC, 0x11]
        let expected: [UInt8] = [0b1010_0101, 0b0010_0100, 0b1101_0100, 0b1100_0001, 0b1110_1101,
                                 0b0011_0110, 0b1100_0111, 0b1000_0111, 0b0010_1100, 0b0101_0101]
        XCTAssertEqual(ReedSolomon.errorCorrectionCodewords(for: data, count: 10), expected)
    }

    /// Annex A lists g(x) by the exponents of α of its coefficients, highest power first.
    func testGeneratorPolynomialsOfAnnexA() {
        func exponents(_ degree: Int) -> [Int] {
            ReedSolomon.generatorPolynomial(degree: degree).map { coefficient in
                (0..<255).first { ReedSolomon.power($0) == coefficient }!
            }
        }
        XCTAssertEqual(exponents(7), [0, 87, 229, 146, 149, 238, 102, 21])
        XCTAssertEqual(exponents(10), [0, 251, 67, 46, 61, 118, 70, 64, 94, 32, 45])
        XCTAssertEqual(exponents(13), [0, 74, 152, 176, 100, 86, 100, 106, 104, 130, 218, 206, 140, 78])
    }

    func testFieldArithmetic() {
        // α⁸ = α⁴ + α³ + α² + 1 (the primitive polynomial 0x11D), and α²⁵⁵ = 1.
        XCTAssertEqual(ReedSolomon.power(8), 0b0001_1101)
        XCTAssertEqual(ReedSolomon.power(255), 1)
        XCTAssertEqual(ReedSolomon.multiply(ReedSolomon.power(200), ReedSolomon.power(100)), ReedSolomon.power(45))
        XCTAssertEqual(ReedSolomon.multiply(0, 0x53), 0)
        // Every non-zero element is a power of α exactly once: α generates the field.
        XCTAssertEqual(Set((0..<255).map(ReedSolomon.power)).count, 255)
    }

    /// A codeword sequence with its remainder appended is a multiple of g(x): it evaluates to 0 at
    /// every root αⁱ, which is what a reader's syndrome check computes.
    func testCodewordsWithTheirRemainderAreAMultipleOfTheGenerator() {
        let data: [UInt8] = Array("oauth-relay device login".utf8)
        let codeword = data + ReedSolomon.errorCorrectionCodewords(for: data, count: 18)
        for root in 0..<18 {
            let value = codeword.reduce(UInt8(0)) { ReedSolomon.multiply($0, ReedSolomon.power(root)) ^ $1 }
            XCTAssertEqual(value, 0, "syndrome \(root)")
        }
    }
}
