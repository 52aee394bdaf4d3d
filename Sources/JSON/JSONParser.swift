import HTTPFields

/// Why a text is not JSON, and where: `offset` is the byte the problem was found at.
public struct JSONSyntaxError: Error, Sendable {
    public var offset: Int
    public var message: String
}

/// A strict RFC 8259 parser (no comments, no trailing commas, no NaN), with a nesting limit.
public struct JSONParser {
    public static let maxDepth = 64

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONNode {
        var parser = JSONParser(bytes: bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {  // a UTF-8 byte order mark
            parser.index = 3
        }
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.index == bytes.count else {
            throw parser.failure("unexpected \(parser.describeCurrent()) after the end of the document")
        }
        return value
    }

    private var current: UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    private func failure(_ message: String, at offset: Int? = nil) -> JSONSyntaxError {
        JSONSyntaxError(offset: offset ?? index, message: message)
    }

    private func describeCurrent() -> String {
        guard let byte = current else { return "end of input" }
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    private mutating func skipWhitespace() {
        while let byte = current,
              byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\t") {
            index += 1
        }
    }

    /// `what` is written only when the byte is not there: after each element of a large
    /// document, writing it every time was a fifth of parsing the document (callgrind).
    private mutating func expect(_ byte: UInt8, _ what: @autoclosure () -> String) throws(JSONSyntaxError) {
        guard current == byte else { throw failure("expected \(what()), found \(describeCurrent())") }
        index += 1
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONNode {
        let start = index
        guard let byte = current else { throw failure("expected a value, found end of input") }
        let kind: JSONNode.Kind
        switch byte {
        case UInt8(ascii: "{"): kind = .object(try parseObject())
        case UInt8(ascii: "["): kind = .array(try parseArray())
        case UInt8(ascii: "\""): kind = .string(try parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): kind = .number(try parseNumber())
        case UInt8(ascii: "t"): try parseLiteral("true"); kind = .bool(true)
        case UInt8(ascii: "f"): try parseLiteral("false"); kind = .bool(false)
        case UInt8(ascii: "n"): try parseLiteral("null"); kind = .null
        default: throw failure("expected a value, found \(describeCurrent())")
        }
        return JSONNode(kind: kind, offset: start, lastOffset: index - 1)
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> [JSONNode.Member] {
        // Room for a config object's few members at once, rather than grown one, two, four.
        var members: [JSONNode.Member] = []
        members.reserveCapacity(4)
        try parseContainer(closing: UInt8(ascii: "}"), element: "object member") { parser throws(JSONSyntaxError) in
            guard parser.current == UInt8(ascii: "\"") else {
                throw parser.failure("expected a string key, found \(parser.describeCurrent())")
            }
            let keyOffset = parser.index
            let key = try parser.parseString()
            parser.skipWhitespace()
            try parser.expect(UInt8(ascii: ":"), "':' after an object key")
            parser.skipWhitespace()
            members.append(JSONNode.Member(key: key, keyOffset: keyOffset, value: try parser.parseValue()))
        }
        return members
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> [JSONNode] {
        var elements: [JSONNode] = []
        try parseContainer(closing: UInt8(ascii: "]"), element: "array element") { parser throws(JSONSyntaxError) in
            elements.append(try parser.parseValue())
        }
        return elements
    }

    /// The comma-separated elements of an object or array, from its opening bracket to
    /// `closing`, each read by `parseElement`.
    private mutating func parseContainer(
        closing: UInt8, element: String, _ parseElement: (inout JSONParser) throws(JSONSyntaxError) -> Void
    ) throws(JSONSyntaxError) {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maxDepth else { throw failure("nesting deeper than \(Self.maxDepth) levels") }
        // Named only in an error message: built there, not for each of a document's containers.
        var closingName: String { "'\(Character(Unicode.Scalar(closing)))'" }
        index += 1
        skipWhitespace()
        if current == closing {
            index += 1
            return
        }
        while true {
            if current == closing { throw failure("trailing comma before \(closingName)") }
            try parseElement(&self)
            skipWhitespace()
            if current == closing {
                index += 1
                return
            }
            try expect(UInt8(ascii: ","), "',' or \(closingName) after an \(element)")
            skipWhitespace()
        }
    }

    private mutating func parseLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
        let start = index
        for byte in UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount) {
            guard current == byte else { throw failure("invalid literal, expected \(literal)", at: start) }
            index += 1
        }
    }

    private mutating func skipDigits() -> Bool {
        let start = index
        while let byte = current, byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") { index += 1 }
        return index > start
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> String {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else if !skipDigits() {
            throw failure("invalid number", at: start)
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard skipDigits() else { throw failure("invalid number: expected digits after '.'", at: start) }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() else { throw failure("invalid number: expected digits in the exponent", at: start) }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        let start = index
        index += 1  // the opening quote
        // Most strings (every key, most values) hold no escape: they are their bytes, made into a
        // String at once. Copying them byte by byte into an array first was half of parsing a
        // config of 10,000 routes (callgrind).
        var end = index
        var bytesOred: UInt8 = 0
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") {
                let contents = index..<end
                // ASCII needs no validation (and the generic validation costs a thousand
                // instructions a string).
                let ascii = bytesOred < 0x80
                let string = bytes.withUnsafeBufferPointer { all in
                    let slice = UnsafeBufferPointer(rebasing: all[contents])
                    return ascii ? String(decoding: slice, as: UTF8.self) : String(validating: slice, as: UTF8.self)
                }
                guard let string else { throw failure("string is not valid UTF-8", at: start) }
                index = end + 1
                return string
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            bytesOred |= byte
            end += 1
        }
        // An escape, a control character or the end of input: the bytes so far, then one at a time.
        var utf8 = Array(bytes[index..<end])
        index = end
        while true {
            guard let byte = current else { throw failure("unterminated string", at: start) }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: utf8, as: UTF8.self) else {
                    throw failure("string is not valid UTF-8", at: start)
                }
                return string
            case UInt8(ascii: "\\"):
                try parseEscape(into: &utf8)
            case 0..<0x20:
                throw failure("control character in a string (write it as an escape like \\n)")
            default:
                utf8.append(byte)
                index += 1
            }
        }
    }

    private mutating func parseEscape(into utf8: inout [UInt8]) throws(JSONSyntaxError) {
        let start = index
        index += 1  // the backslash
        guard let byte = current else { throw failure("unterminated string") }
        index += 1
        let simple: UInt8? = switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): byte
        case UInt8(ascii: "b"): 0x08
        case UInt8(ascii: "f"): 0x0C
        case UInt8(ascii: "n"): 0x0A
        case UInt8(ascii: "r"): 0x0D
        case UInt8(ascii: "t"): 0x09
        default: nil
        }
        if let simple {
            utf8.append(simple)
            return
        }
        guard byte == UInt8(ascii: "u") else { throw failure("invalid escape in a string", at: start) }
        var scalar = try parseHex4(escapeStart: start)
        if (0xD800..<0xDC00).contains(scalar) {
            guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                throw failure("unpaired UTF-16 surrogate in a \\u escape", at: start)
            }
            index += 2
            let low = try parseHex4(escapeStart: start)
            guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired UTF-16 surrogate in a \\u escape", at: start) }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let unicode = Unicode.Scalar(scalar) else {
            throw failure("unpaired UTF-16 surrogate in a \\u escape", at: start)
        }
        utf8.append(contentsOf: UTF8.encode(unicode)!)
    }

    private mutating func parseHex4(escapeStart: Int) throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = ASCII.hexDigitValue(byte) else {
                throw failure("invalid \\u escape: expected four hex digits", at: escapeStart)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
