import HTTPFields
import SafeText

// The relay's one JSON reader and writer, without Foundation (whose `JSONSerialization` would
// bring libFoundation and ICU into the process: several MiB of resident memory at start).
//
// - `JSONParser` reads a strict RFC 8259 text into a `JSONNode`: members in order, duplicates
//   kept, numbers as their literal text, each value with its byte offset. The config decoder
//   reads that, to name the line and column of a problem.
// - `JSONValue` is the same reading without offsets, with numbers as `Int64` or `Double`, for
//   everything else: IdP answers (token, device, discovery, JWKS), JOSE headers and claims,
//   the admin API's answers. It is also what the relay builds and writes (`serialized`).
// - `JSONText` (in HTTPFields, for the hot path's problem bodies and log lines) quotes strings.

/// A JSON value as IdP answers, JOSE headers and JWT claims need it: objects keep member order
/// (so what the relay signs is written the same way every time), integers stay integers
/// (NumericDate), and `true` is never the number 1.
public enum JSONValue: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([JSONMember])

    public var string: String? {
        if case .string(let value) = self { value } else { nil }
    }

    public var bool: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// The value of an integer, or of a number with no fraction that fits.
    public var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .number(let value): Int64(exactly: value.rounded(.down))
        default: nil
        }
    }

    /// The value of any number (an integer beyond 2^53 rounded to the nearest Double).
    public var double: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .number(let value): value
        default: nil
        }
    }

    public var array: [JSONValue]? {
        if case .array(let values) = self { values } else { nil }
    }

    /// The elements of an array of strings; nil for anything else (an array holding a number too).
    public var strings: [String]? {
        guard case .array(let values) = self else { return nil }
        var strings: [String] = []
        for value in values {
            guard case .string(let string) = value else { return nil }
            strings.append(string)
        }
        return strings
    }

    public var members: [JSONMember]? {
        if case .object(let members) = self { members } else { nil }
    }

    /// The members of an object by name (the last one, should a name repeat, as RFC 7515 §5.2
    /// allows); nil when the value is no object.
    public var dictionary: [String: JSONValue]? {
        members.map { members in Dictionary(members.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }) }
    }

    /// The member `name` of an object (the last one, should a name repeat).
    public subscript(name: String) -> JSONValue? {
        members?.last { $0.name == name }?.value
    }

    // MARK: Reading

    /// The value `bytes` hold as JSON text (UTF-8, an optional byte order mark). Throws where
    /// they are no JSON, and for a number beyond a Double (`1e400`), which no reader can hold.
    public init(parsing bytes: [UInt8]) throws(JSONSyntaxError) {
        try self.init(node: try JSONParser.parse(bytes))
    }

    /// The value of a parsed node: an integer literal that fits `Int64` stays exact, any other
    /// number becomes a Double.
    public init(node: JSONNode) throws(JSONSyntaxError) {
        switch node.kind {
        case .string(let value):
            self = .string(value)
        case .number(let literal):
            // `Int64(_:)` reads only a sign and digits: a fraction or exponent goes to Double.
            if let integer = Int64(literal) {
                self = .integer(integer)
            } else if let number = Double(literal), number.isFinite {
                self = .number(number)
            } else {
                throw JSONSyntaxError(offset: node.offset, message: "number out of range")
            }
        case .bool(let value):
            self = .bool(value)
        case .null:
            self = .null
        case .array(let nodes):
            var values: [JSONValue] = []
            values.reserveCapacity(nodes.count)
            for element in nodes { values.append(try JSONValue(node: element)) }
            self = .array(values)
        case .object(let nodes):
            var members: [JSONMember] = []
            members.reserveCapacity(nodes.count)
            for member in nodes { members.append(JSONMember(member.key, try JSONValue(node: member.value))) }
            self = .object(members)
        }
    }

    // MARK: Writing

    /// Compact JSON, members in order, no whitespace.
    public var serialized: String {
        var output = ""
        write(to: &output)
        return output
    }

    private func write(to output: inout String) {
        switch self {
        case .string(let value): output += JSONText.quote(value)
        case .integer(let value): output += String(value)
        case .number(let value): output += value.isFinite ? "\(value)" : "null"
        case .bool(let value): output += value ? "true" : "false"
        case .null: output += "null"
        case .array(let values):
            output += "["
            for (index, value) in values.enumerated() {
                if index > 0 { output += "," }
                value.write(to: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { output += "," }
                output += JSONText.quote(member.name)
                output += ":"
                member.value.write(to: &output)
            }
            output += "}"
        }
    }
}
