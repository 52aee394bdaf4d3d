/// `application/x-www-form-urlencoded` (RFC 6749 Appendix B, WHATWG URL): UTF-8, the RFC 3986
/// unreserved characters kept, space as `+`, every other byte as `%XX` (upper-case hex).
public enum FormURLEncoding {
    /// One name or value, encoded.
    public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        append(encoding: text.utf8, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the encoding of `bytes` to `out`, allocating nothing more (for the request
    /// path: RFC 6750 §2.3 puts `access_token=…` in the query this way).
    @inlinable
    public static func append(encoding bytes: some Sequence<UInt8>, to out: inout some RangeReplaceableCollection<UInt8>) {
        for byte in bytes {
            if isUnreserved(byte) {
                out.append(byte)
            } else if byte == UInt8(ascii: " ") {
                out.append(UInt8(ascii: "+"))
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0x0F))
            }
        }
    }

    /// `name=value` pairs joined by `&`, in the given order (names may repeat).
    public static func encode(_ fields: [(name: String, value: String)]) -> String {
        fields.map { encode($0.name) + "=" + encode($0.value) }.joined(separator: "&")
    }

    /// The pairs of a form body: `+` is a space, `%XX` a byte; a `%` not followed by two hex
    /// digits stays as it is, and a pair without `=` has an empty value.
    public static func decode(_ body: String) -> [(name: String, value: String)] {
        body.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decodeComponent(parts[0]), parts.count > 1 ? decodeComponent(parts[1]) : "")
        }
    }

    private static func decodeComponent(_ text: Substring) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    @inlinable
    static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    @inlinable
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// The value of a hex digit (either case), or nil.
    public static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
