/// Byte classes shared by the validators and the hot-path matchers (RFC 3986, RFC 9110).
enum ASCII {
    @inline(__always)
    static func isAlpha(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    @inline(__always)
    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isAlpha(byte) || isDigit(byte)
    }

    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// RFC 3986 unreserved: ALPHA DIGIT - . _ ~
    @inline(__always)
    static func isUnreserved(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    /// RFC 3986 pchar without pct-encoded: unreserved, sub-delims, ":" and "@".
    @inline(__always)
    static func isPathCharacter(_ byte: UInt8) -> Bool {
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
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
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

    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenCharacter)
    }

    /// True when the text can be a header field value: no control characters but HTAB
    /// (so no CR, LF or NUL, which would split or end the header).
    static func isFieldValue(_ text: String) -> Bool {
        text.utf8.allSatisfy { byte in byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }
    }
}
