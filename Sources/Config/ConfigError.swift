/// One problem found in a configuration file, located by its JSON path
/// (`$.routes[1].match.pathPrefix`) and, when known, by line and column.
///
/// Messages never contain the value of a secret: they name the key, the variable or the
/// file instead.
public struct ConfigError: Sendable, Equatable, CustomStringConvertible {
    /// JSON path of the offending value, in dot notation (`$.identities.orders.grant`);
    /// keys that are not plain names use brackets (`$.routes[0].setHeaders["X Y"]`).
    public var path: String
    public var message: String
    /// 1-based line and column (in characters) in the file, when the problem has a place.
    public var line: Int?
    public var column: Int?

    public init(path: String, message: String, line: Int? = nil, column: Int? = nil) {
        self.path = path
        self.message = message
        self.line = line
        self.column = column
    }

    public var description: String {
        guard let line, let column else { return "\(path): \(message)" }
        return "\(path): \(message) (line \(line), column \(column))"
    }
}

/// Every problem found in one configuration file, in document order.
public struct ConfigErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [ConfigError]

    public init(_ errors: [ConfigError]) {
        self.errors = errors
    }

    /// One error per line, ready for `oauth-relay check`.
    public var description: String {
        errors.map(\.description).joined(separator: "\n")
    }
}

/// A value that could not be parsed; the decoder adds the JSON path.
struct InvalidValue: Error {
    var message: String

    init(_ message: String) {
        self.message = message
    }
}

/// Where a byte offset of a UTF-8 file lies, as 1-based line and column (in characters).
struct SourceLocation: Equatable {
    var line: Int
    var column: Int

    init(offset: Int, in bytes: [UInt8]) {
        var line = 1
        var column = 1
        for byte in bytes[..<min(offset, bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {  // not a UTF-8 continuation byte
                column += 1
            }
        }
        self.line = line
        self.column = column
    }
}
