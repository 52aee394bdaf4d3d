/// The plaintext of a sealed record (a token entry, a registered client): fields written as a
/// one-byte tag, a 4-byte big-endian length and the bytes, tags strictly increasing. A binary form
/// rather than JSON so that reading it is exact and small: what reads writes back to the same bytes.
struct TaggedFields {
    private(set) var bytes: [UInt8] = []

    mutating func append(_ tag: UInt8, _ value: [UInt8]) {
        let count = UInt32(value.count)
        bytes += [tag, UInt8(count >> 24 & 0xff), UInt8(count >> 16 & 0xff), UInt8(count >> 8 & 0xff), UInt8(count & 0xff)]
        bytes += value
    }

    /// A time as the 8 big-endian bytes of its IEEE 754 bit pattern.
    mutating func append(_ tag: UInt8, time value: Double) {
        append(tag, withUnsafeBytes(of: value.bitPattern.bigEndian) { Array($0) })
    }

    /// The fields of `plaintext` by tag; nil unless every field is whole, its tag `isKnown`, and
    /// the tags strictly increasing.
    static func read(_ plaintext: [UInt8], isKnown: (UInt8) -> Bool) -> [UInt8: [UInt8]]? {
        var fields: [UInt8: [UInt8]] = [:]
        var offset = 0
        var last: UInt8 = 0
        while offset < plaintext.count {
            let tag = plaintext[offset]
            guard plaintext.count - offset >= 5, isKnown(tag), tag > last else { return nil }
            let count = plaintext[(offset + 1)...(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            offset += 5
            guard plaintext.count - offset >= count else { return nil }
            fields[tag] = Array(plaintext[offset..<(offset + count)])
            offset += count
            last = tag
        }
        return fields
    }

    /// A text field: `.some(nil)` when absent, nil when not UTF-8 (only valid UTF-8 round-trips;
    /// anything else is damage).
    static func text(_ bytes: [UInt8]?) -> String?? {
        guard let bytes else { return .some(nil) }
        guard let string = String(validating: bytes, as: UTF8.self) else { return nil }
        return .some(string)
    }

    /// A time field: `.some(nil)` when absent, nil when not 8 bytes or not finite (damage).
    static func time(_ bytes: [UInt8]?) -> Double?? {
        guard let bytes else { return .some(nil) }
        guard bytes.count == 8 else { return nil }
        let value = Double(bitPattern: bytes.reduce(0) { $0 << 8 | UInt64($1) })
        return value.isFinite ? .some(value) : nil
    }
}
