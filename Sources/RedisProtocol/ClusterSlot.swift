// Redis Cluster's key space: 16384 hash slots, a key's slot being CRC16 (XMODEM) of the key, or of
// its hash tag — the text between the first `{` and the first `}` after it, when not empty — mod
// 16384 (the cluster specification, "Keys distribution model"). Keys with one hash tag share a
// slot, so one script may touch them all.

/// A hash slot, 0 ..< 16384.
public struct ClusterSlot: Sendable, Hashable, Comparable, CustomStringConvertible {
    public static let count = 16384

    public let number: Int

    public init?(_ number: Int) {
        guard (0..<Self.count).contains(number) else { return nil }
        self.number = number
    }

    /// The slot of `key`.
    public init(key: [UInt8]) {
        number = Int(Self.crc16(Self.hashed(key)) & 0x3FFF)
    }

    /// What the slot is computed from: the hash tag when there is a non-empty one, else the key.
    static func hashed(_ key: [UInt8]) -> ArraySlice<UInt8> {
        guard let open = key.firstIndex(of: UInt8(ascii: "{")),
              let close = key[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 else { return key[...] }
        return key[(open + 1)..<close]
    }

    /// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection.
    static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 {
                crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
            }
        }
        return crc
    }

    public static func < (lhs: ClusterSlot, rhs: ClusterSlot) -> Bool { lhs.number < rhs.number }

    public var description: String { "slot \(number)" }
}
