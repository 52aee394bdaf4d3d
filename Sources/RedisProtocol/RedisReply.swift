/// A reply from Redis (RESP2), as `RESPReader` reads it.
public enum RedisReply: Sendable, Equatable, CustomStringConvertible {
    /// `+OK`, `+PONG`.
    case status(String)
    /// `-ERR …`, `-WRONGPASS …`: the server refused the command (the connection stays usable).
    case error(String)
    case integer(Int64)
    /// A bulk string: binary, maybe an encrypted entry.
    case bulk([UInt8])
    /// A nil bulk string or array (a missing key or field).
    case null
    case array([RedisReply])

    /// The bytes of a bulk or status reply; nil for anything else.
    public var bytes: [UInt8]? {
        switch self {
        case .bulk(let bytes): bytes
        case .status(let text): Array(text.utf8)
        default: nil
        }
    }

    /// A bulk or status reply as UTF-8 text.
    public var text: String? {
        bytes.flatMap { String(validating: $0, as: UTF8.self) }
    }

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var elements: [RedisReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// Bulk strings as their length only: they may hold an entry.
    public var description: String {
        switch self {
        case .status(let text): "+\(text)"
        case .error(let text): "-\(text)"
        case .integer(let value): ":\(value)"
        case .bulk(let bytes): "$\(bytes.count) bytes"
        case .null: "nil"
        case .array(let elements): "[" + elements.map(\.description).joined(separator: ", ") + "]"
        }
    }
}
