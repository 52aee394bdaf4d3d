/// base64url without padding (RFC 7515 §2, RFC 4648 §5), strict in what it reads: only the
/// URL-safe alphabet, no `=`, no whitespace, no length that cannot come from an encoding, and
/// no set bits in the unused low bits of the last character. So every byte string has exactly
/// one text, and a JWS that verifies re-serialises to the very bytes it was read from.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { table[Int(character)] = UInt8(value) }
        return table
    }()

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var output: [UInt8] = []
        Array(bytes).withUnsafeBytes { append(encoding: $0, to: &output) }
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends the encoding of `bytes` to `out`, with no allocation beyond `out`'s growth (the
    /// DPoP proofs a worker writes for every request): the characters are written into a
    /// temporary buffer (on the stack for a proof's sizes) and appended in one copy, not grown
    /// into `out` a character at a time (callgrind: that way a proof's claims and signature took
    /// 5,300 instructions to encode, a quarter of them spent growing `out` a zero at a time).
    public static func append(encoding bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let length = (bytes.count * 4 + 2) / 3
        guard length > 0 else { return }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { buffer in
            encode(bytes, into: buffer.baseAddress!)
            out.append(contentsOf: UnsafeBufferPointer(buffer))
        }
    }

    /// Writes the `(bytes.count * 4 + 2) / 3` characters of `bytes`' encoding at `output`.
    /// Wrapping arithmetic: the indices stay within `bytes.count`, which cannot overflow.
    private static func encode(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutablePointer<UInt8>) {
        alphabet.withUnsafeBufferPointer { alphabet in
            let alphabet = alphabet.baseAddress!
            var output = output
            var index = 0
            while index &+ 3 <= bytes.count {
                let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index &+ 1]) << 8 | UInt32(bytes[index &+ 2])
                output[0] = alphabet[Int(chunk >> 18 & 63)]
                output[1] = alphabet[Int(chunk >> 12 & 63)]
                output[2] = alphabet[Int(chunk >> 6 & 63)]
                output[3] = alphabet[Int(chunk & 63)]
                output += 4
                index &+= 3
            }
            let rest = bytes.count &- index
            guard rest > 0 else { return }
            let chunk = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index &+ 1]) << 8 : 0)
            output[0] = alphabet[Int(chunk >> 18 & 63)]
            output[1] = alphabet[Int(chunk >> 12 & 63)]
            if rest == 2 { output[2] = alphabet[Int(chunk >> 6 & 63)] }
        }
    }

    /// The bytes `text` encodes, or nil when it is not canonical unpadded base64url.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(bytes: Array(text.utf8))
    }

    public static func decode(bytes text: [UInt8]) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Left-over bits must be zero: "QQ" is the only text for [0x41], not "QR".
        guard accumulator == 0 else { return nil }
        return output
    }
}
