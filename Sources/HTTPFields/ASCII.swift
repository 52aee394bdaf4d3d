/// Byte classes and comparisons over ASCII, shared by the HTTP parser's hot path, the route
/// matcher and the config validators (RFC 3986, RFC 9110), so header and path handling never
/// builds a `String` per request. Everything is `@inlinable`: these run per byte on the request
/// path, in other modules, and must inline there as they did when each module had its own copy.
public enum ASCII {
    @inlinable @inline(__always)
    public static func isAlpha(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    @inlinable @inline(__always)
    public static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    @inlinable @inline(__always)
    public static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isAlpha(byte) || isDigit(byte)
    }

    @inlinable @inline(__always)
    public static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// The value of an ASCII hex digit, or nil.
    @inlinable @inline(__always)
    public static func hexDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte &- UInt8(ascii: "A") &+ 10
        default: nil
        }
    }

    /// RFC 3986 unreserved: ALPHA DIGIT - . _ ~
    @inlinable @inline(__always)
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    /// RFC 3986 pchar without pct-encoded: unreserved, sub-delims, ":" and "@".
    @inlinable @inline(__always)
    public static func isPathCharacter(_ byte: UInt8) -> Bool {
        if isUnreserved(byte) { return true }
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
             UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
             UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"):
            return true
        default:
            return false
        }
    }

    /// RFC 9110 tchar, the characters of a header name or a Via pseudonym.
    @inlinable
    public static func isTokenCharacter(_ byte: UInt8) -> Bool {
        if isAlphanumeric(byte) { return true }
        switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    public static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenCharacter)
    }

    /// True when the text can be a header field value: no control characters but HTAB
    /// (so no CR, LF or NUL, which would split or end the header).
    public static func isFieldValue(_ text: String) -> Bool {
        text.utf8.allSatisfy { byte in byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }
    }

    /// Compares `bytes` to `lowercase` (which must already be lower case), ignoring ASCII case.
    @inlinable
    public static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: [UInt8]) -> Bool {
        guard bytes.count == lowercase.count else { return false }
        for i in 0..<bytes.count where lowercased(bytes[i]) != lowercase[i] { return false }
        return true
    }

    /// Whether `bytes` spells `lowercase` (already lower case) ignoring ASCII case and reading
    /// each `_` of `bytes` as `-`: servers that map names CGI-style (`HTTP_X_FORWARDED_USER`)
    /// take `X_Forwarded_User` for `X-Forwarded-User` (as `KnownHeader.underscoredLookalike`).
    @inlinable
    public static func equalsIgnoringCaseReadingUnderscoreAsHyphen(_ bytes: UnsafeRawBufferPointer, _ lowercase: [UInt8]) -> Bool {
        guard bytes.count == lowercase.count else { return false }
        for i in 0..<bytes.count where lowercased(bytes[i]) != lowercase[i] {
            guard bytes[i] == UInt8(ascii: "_") && lowercase[i] == UInt8(ascii: "-") else { return false }
        }
        return true
    }

    /// Whether `bytes` starts with `lowercasePrefix` (already lower case), ignoring ASCII case.
    @inlinable
    public static func startsIgnoringCase(_ bytes: UnsafeRawBufferPointer, with lowercasePrefix: [UInt8]) -> Bool {
        guard bytes.count >= lowercasePrefix.count else { return false }
        for i in 0..<lowercasePrefix.count where lowercased(bytes[i]) != lowercasePrefix[i] { return false }
        return true
    }

    @inlinable
    public static func equalsIgnoringCase(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where lowercased(a[i]) != lowercased(b[i]) { return false }
        return true
    }

    /// Calls `body` with each comma-separated element of a list-valued header (RFC 9110 §5.6.1),
    /// trimmed of optional white space; empty elements are skipped.
    @inlinable
    public static func forEachListElement(_ value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count && value[end] != UInt8(ascii: ",") { end += 1 }
            var lo = start, hi = end
            while lo < hi && (value[lo] == 0x20 || value[lo] == 0x09) { lo += 1 }
            while hi > lo && (value[hi - 1] == 0x20 || value[hi - 1] == 0x09) { hi -= 1 }
            if hi > lo { body(UnsafeRawBufferPointer(rebasing: value[lo..<hi])) }
            start = end + 1
        }
    }

    /// `text` without leading and trailing optional white space (SP and HTAB, RFC 9110 §5.6.3).
    public static func trimmingWhitespace(_ text: Substring) -> Substring {
        var text = text
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
