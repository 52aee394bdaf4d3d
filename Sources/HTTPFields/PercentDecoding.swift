/// `%XX` escapes decoded (RFC 3986 §2.1), strictly: a `%` not followed by two hex digits makes
/// the text invalid rather than staying as it is (as form bodies have it, see
/// `FormURLEncoding.decode`). For URL parts that name something: a path parameter, the user
/// and password of a `redis://` URL.
public enum PercentDecoding {
    /// The bytes `text` stands for, or nil when it holds a malformed escape.
    public static func bytes(_ text: Substring) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        let utf8 = text.utf8
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            index = utf8.index(after: index)
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard index != utf8.endIndex, utf8.index(after: index) != utf8.endIndex,
                  let high = ASCII.hexDigitValue(utf8[index]), let low = ASCII.hexDigitValue(utf8[utf8.index(after: index)]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index = utf8.index(index, offsetBy: 2)
        }
        return bytes
    }

    /// The text `text` stands for, or nil when it holds a malformed escape or is not UTF-8 once
    /// decoded.
    public static func string(_ text: Substring) -> String? {
        bytes(text).flatMap { String(validating: $0, as: UTF8.self) }
    }
}
