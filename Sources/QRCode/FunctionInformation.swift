/// The two small codes a reader decodes before the data: the format information (error
/// correction level and mask) and, from version 7 on, the version information. Both are BCH codes
/// so that a reader can correct a few misread modules (ISO/IEC 18004:2015 §7.9, §7.10).
enum FunctionInformation {
    /// The 15-bit format information (§7.9.1): 2 level bits and 3 mask bits, then 10 bits of
    /// BCH(15,5) with generator x¹⁰ + x⁸ + x⁵ + x⁴ + x² + x + 1 (0x537), the whole XORed with
    /// 101010000010010 (0x5412) so that no combination is all light (Annex C, Table C.1).
    static func formatBits(_ level: QRCode.ErrorCorrection, mask: Int) -> UInt32 {
        let data = UInt32(level.formatBits) << 3 | UInt32(mask)
        return (data << 10 | bchRemainder(data << 10, generator: 0x537)) ^ 0x5412
    }

    /// The 18-bit version information (§7.10): the 6-bit version number, then 12 bits of
    /// BCH(18,6) with generator x¹² + x¹¹ + x¹⁰ + x⁹ + x⁸ + x⁵ + x² + 1 (0x1F25); not masked
    /// (Annex D, Table D.1).
    static func versionBits(_ version: Int) -> UInt32 {
        let data = UInt32(version)
        return data << 12 | bchRemainder(data << 12, generator: 0x1F25)
    }

    /// The remainder of `value` divided by `generator`, both read as polynomials over GF(2).
    private static func bchRemainder(_ value: UInt32, generator: UInt32) -> UInt32 {
        func degree(_ polynomial: UInt32) -> Int { UInt32.bitWidth - 1 - polynomial.leadingZeroBitCount }
        var remainder = value
        while degree(remainder) >= degree(generator) {
            remainder ^= generator << (degree(remainder) - degree(generator))
        }
        return remainder
    }
}
