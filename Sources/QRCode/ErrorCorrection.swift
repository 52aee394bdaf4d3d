extension QRCode {
    /// How much of a symbol may be damaged and still be read (ISO/IEC 18004:2015 §7.5.1, Table 9):
    /// about 7 % of the codewords at L, 15 % at M, 25 % at Q and 30 % at H. Each step up costs data
    /// capacity, so the same text needs a larger symbol.
    public enum ErrorCorrection: Sendable, CaseIterable, CustomStringConvertible {
        case low, medium, quartile, high

        /// The two bits the format information carries for the level (§7.9.1, Table 12). They are not
        /// in the order of strength: L is 01, M 00, Q 11, H 10.
        var formatBits: UInt16 {
            switch self {
            case .low: 0b01
            case .medium: 0b00
            case .quartile: 0b11
            case .high: 0b10
            }
        }

        /// The column of `BlockStructure`'s table for this level.
        var tableIndex: Int {
            switch self {
            case .low: 0
            case .medium: 1
            case .quartile: 2
            case .high: 3
            }
        }

        /// The level's letter, as the standard names it.
        public var description: String {
            switch self {
            case .low: "L"
            case .medium: "M"
            case .quartile: "Q"
            case .high: "H"
            }
        }
    }
}
