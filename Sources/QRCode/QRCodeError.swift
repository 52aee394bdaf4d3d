/// Why a text could not be made into a QR Code symbol.
public enum QRCodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// More bytes than the largest symbol allowed holds at the chosen error correction level.
    case dataTooLong(byteCount: Int, maximum: Int, errorCorrection: QRCode.ErrorCorrection)
    /// A version outside 1…40 was asked for.
    case versionOutOfRange(Int)
    /// A mask outside 0…7 was asked for.
    case maskOutOfRange(Int)

    public var description: String {
        switch self {
        case let .dataTooLong(byteCount, maximum, level):
            "\(byteCount) bytes do not fit in a QR code at error correction level \(level) (at most \(maximum) bytes)"
        case let .versionOutOfRange(version):
            "QR code version \(version) does not exist (versions are 1 to 40)"
        case let .maskOutOfRange(mask):
            "QR code mask \(mask) does not exist (masks are 0 to 7)"
        }
    }
}
