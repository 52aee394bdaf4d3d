/// Reads RESP2 replies from bytes as they arrive from the network: `feed` what a read brought,
/// then take complete replies with `next` until it answers nil (more bytes are needed). A reply
/// may be split anywhere, and one read may bring several.
///
/// The bytes come from a server the relay does not control, so nothing in them can make the
/// reader crash, assert or allocate without bound: a length or count over `Limits`, arrays
/// nested deeper than allowed, a line without its CRLF past the line limit, a negative length
/// other than -1, a type byte RESP2 does not have — each is a `RESPError`, after which the
/// reader answers that error forever (the connection is beyond repair: its framing is lost).
///
/// Arrays are built as their elements arrive, so a large array fed in small pieces is read once,
/// never re-parsed from its start.
public struct RESPReader: Sendable {
    /// What one reply may hold.
    public struct Limits: Sendable, Equatable {
        /// Bytes of one bulk string (Redis itself allows 512 MB; the relay's entries are a few KB).
        public var maxBulkLength: Int
        /// Elements of one array.
        public var maxArrayCount: Int
        /// Arrays inside arrays (a top-level array is depth 1).
        public var maxDepth: Int
        /// Bytes of a `+`, `-`, `:`, `$` or `*` line, its type byte and CRLF excluded.
        public var maxLineLength: Int
        /// Bytes of one whole reply, CRLFs included: nested arrays within the other limits could
        /// otherwise stream without end (8 levels of 65,536 elements).
        public var maxReplyBytes: Int

        public init(maxBulkLength: Int = 16 * 1024 * 1024, maxArrayCount: Int = 65_536, maxDepth: Int = 8,
                    maxLineLength: Int = 64 * 1024, maxReplyBytes: Int = 64 * 1024 * 1024) {
            self.maxBulkLength = maxBulkLength
            self.maxArrayCount = maxArrayCount
            self.maxDepth = maxDepth
            self.maxLineLength = maxLineLength
            self.maxReplyBytes = maxReplyBytes
        }
    }

    public let limits: Limits
    /// Bytes fed and not yet read; those before `position` are consumed.
    private var buffer: [UInt8] = []
    private var position = 0
    /// Where the search for the current line's CRLF goes on (bytes before it hold none).
    private var scanFrom = 0
    private var expecting = Expecting.line
    /// Arrays being filled, outermost first.
    private var open: [OpenArray] = []
    /// Bytes the reply being read has consumed so far.
    private var replyBytes = 0
    private var failure: RESPError?

    private enum Expecting: Sendable {
        /// A type byte and its line.
        case line
        /// The body of a bulk string of this length, then CRLF.
        case bulkBody(Int)
    }

    private struct OpenArray: Sendable {
        var remaining: Int
        var elements: [RedisReply]
    }

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes fed and not yet returned as part of a reply (the part of a reply still incomplete).
    public var bufferedCount: Int { buffer.count - position }

    public mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        buffer.append(contentsOf: bytes)
    }

    public mutating func feed(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { feed($0) }
    }

    /// The next complete reply; nil when the bytes fed so far do not finish one.
    public mutating func next() throws(RESPError) -> RedisReply? {
        if let failure { throw failure }
        do throws(RESPError) {
            while let value = try readValue() {
                if let reply = place(value) {
                    replyBytes = 0
                    compact()
                    return reply
                }
            }
            compact()
            return nil
        } catch {
            failure = error
            buffer = []
            position = 0
            scanFrom = 0
            open = []
            replyBytes = 0
            throw error
        }
    }

    // MARK: - Reading

    /// One complete value: a scalar, nil or an empty array. A non-empty array's header opens
    /// it and reading goes on with its first element. Nil when more bytes are needed.
    private mutating func readValue() throws(RESPError) -> RedisReply? {
        while true {
            if case .bulkBody(let length) = expecting {
                guard buffer.count - position >= length + 2 else { return nil }
                guard buffer[position + length] == Self.cr, buffer[position + length + 1] == Self.lf else {
                    throw RESPError.bulkNotTerminated
                }
                let bytes = Array(buffer[position..<(position + length)])
                try consume(upTo: position + length + 2)
                expecting = .line
                return .bulk(bytes)
            }
            guard let lineEnd = try findLineEnd() else { return nil }
            let type = buffer[position]
            let line = (position + 1)..<lineEnd
            try consume(upTo: lineEnd + 2)
            switch type {
            case UInt8(ascii: "+"):
                return .status(String(decoding: buffer[line], as: UTF8.self))
            case UInt8(ascii: "-"):
                return .error(String(decoding: buffer[line], as: UTF8.self))
            case UInt8(ascii: ":"):
                guard let value = Self.integer(buffer[line]) else { throw RESPError.invalidNumber("integer") }
                return .integer(value)
            case UInt8(ascii: "$"):
                guard let length = try lengthValue(line, what: "bulk length", limit: limits.maxBulkLength) else { return .null }
                // Refused before its body is buffered when it cannot fit.
                guard replyBytes + length + 2 <= limits.maxReplyBytes else { throw Self.replyTooLarge(limits) }
                expecting = .bulkBody(length)
            case UInt8(ascii: "*"):
                guard let count = try lengthValue(line, what: "array count", limit: limits.maxArrayCount) else { return .null }
                if count == 0 { return .array([]) }
                guard open.count < limits.maxDepth else { throw RESPError.tooDeep(limit: limits.maxDepth) }
                var elements: [RedisReply] = []
                // Never reserve what the wire claims: the elements may never come.
                elements.reserveCapacity(min(count, 16))
                open.append(OpenArray(remaining: count, elements: elements))
            default:
                throw RESPError.unknownType(type)
            }
        }
    }

    /// Adds `value` to the innermost open array, closing every array it completes; the value
    /// or outermost array when it completes a reply, nil while an array is still open.
    private mutating func place(_ value: RedisReply) -> RedisReply? {
        var value = value
        while !open.isEmpty {
            let last = open.count - 1
            open[last].elements.append(value)
            open[last].remaining -= 1
            if open[last].remaining > 0 { return nil }
            value = .array(open.removeLast().elements)
        }
        return value
    }

    /// The index of the CR that ends the line at `position`; nil while it has not arrived.
    private mutating func findLineEnd() throws(RESPError) -> Int? {
        var index = max(scanFrom, position)
        while index + 1 < buffer.count {
            if buffer[index] == Self.cr && buffer[index + 1] == Self.lf { break }
            index += 1
        }
        let limit = position + 1 + limits.maxLineLength
        guard index + 1 < buffer.count else {
            // A CR at the very end may be the first half of the CRLF: looked at again next time.
            scanFrom = index
            if index > limit { throw RESPError.lineTooLong(limit: limits.maxLineLength) }
            return nil
        }
        if index == position { throw RESPError.emptyLine }
        if index > limit { throw RESPError.lineTooLong(limit: limits.maxLineLength) }
        return index
    }

    /// A `$` or `*` line's number: nil for -1 (a nil reply), else from 0 to `limit`.
    private func lengthValue(_ line: Range<Int>, what: String, limit: Int) throws(RESPError) -> Int? {
        guard let value = Self.integer(buffer[line]) else { throw RESPError.invalidNumber(what) }
        if value == -1 { return nil }
        guard value >= 0 else { throw RESPError.invalidNumber(what) }
        guard value <= limit else { throw RESPError.overLimit(what, limit: limit) }
        return Int(value)
    }

    /// Consumes the reply's bytes up to `index`; past `maxReplyBytes` the reply is refused.
    private mutating func consume(upTo index: Int) throws(RESPError) {
        replyBytes += index - position
        position = index
        scanFrom = index
        guard replyBytes <= limits.maxReplyBytes else { throw Self.replyTooLarge(limits) }
    }

    private static func replyTooLarge(_ limits: Limits) -> RESPError {
        .overLimit("size in bytes", limit: limits.maxReplyBytes)
    }

    /// Drops consumed bytes once they are most of the buffer, so it does not grow with the
    /// connection's life.
    private mutating func compact() {
        if position == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 64 * 1024)
            position = 0
            scanFrom = 0
        } else if position >= 4096 && position * 2 >= buffer.count {
            buffer.removeFirst(position)
            scanFrom -= position
            position = 0
        }
    }

    /// A decimal Int64, optionally negative: no sign `+`, no spaces, no leading zeros beyond
    /// a lone 0, at most 19 digits; nil for anything else or an overflow.
    static func integer(_ digits: ArraySlice<UInt8>) -> Int64? {
        var rest = digits[...]
        let negative = rest.first == UInt8(ascii: "-")
        if negative { rest = rest.dropFirst() }
        guard !rest.isEmpty, rest.count <= 19, !(rest.count > 1 && rest.first == UInt8(ascii: "0")) else { return nil }
        var value: Int64 = 0
        for digit in rest {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            let (shifted, overflowShift) = value.multipliedReportingOverflow(by: 10)
            let (added, overflowAdd) = shifted.addingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
            guard !overflowShift, !overflowAdd else { return nil }
            value = added
        }
        return negative ? -value : value
    }

    private static let cr: UInt8 = 0x0D
    private static let lf: UInt8 = 0x0A
}

/// Why bytes from a Redis server are not RESP2 the relay accepts. No message quotes the bytes
/// (they may hold an entry); the type byte alone is shown, in hex.
public enum RESPError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownType(UInt8)
    case emptyLine
    case lineTooLong(limit: Int)
    /// The number of an integer reply, a bulk length or an array count is not a decimal number
    /// (or a negative length other than -1).
    case invalidNumber(String)
    case overLimit(String, limit: Int)
    case tooDeep(limit: Int)
    /// A bulk string's bytes are not followed by CRLF.
    case bulkNotTerminated

    public var description: String {
        switch self {
        case .unknownType(let byte):
            "not a RESP2 reply: unknown type byte 0x\(String(byte, radix: 16, uppercase: true))"
        case .emptyLine: "not a RESP2 reply: an empty line"
        case .lineTooLong(let limit): "a reply line longer than \(limit) bytes"
        case .invalidNumber(let what): "the \(what) of a reply is not a valid number"
        case .overLimit(let what, let limit): "the \(what) of a reply is over the limit of \(limit)"
        case .tooDeep(let limit): "a reply nests arrays deeper than \(limit)"
        case .bulkNotTerminated: "a bulk string of a reply is not followed by CRLF"
        }
    }
}
