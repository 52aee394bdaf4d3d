import HTTPFields
import Foundation

/// A JSON value as JOSE headers and JWT claims need it: objects keep member order (so what the
/// relay signs is written the same way every time), integers stay integers (NumericDate), and
/// `true` is never the number 1. Read through `JSONSerialization` (where a member name repeats,
/// the last one counts, as RFC 7515 §5.2 allows), written by `serialized`.
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

    /// The value of an integer, or of a number with no fraction that fits.
    public var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .number(let value): Int64(exactly: value.rounded(.down))
        default: nil
        }
    }

    public var members: [JSONMember]? {
        if case .object(let members) = self { members } else { nil }
    }

    /// The member `name` of an object (the last one, should a name repeat).
    public subscript(name: String) -> JSONValue? {
        members?.last { $0.name == name }?.value
    }

    // MARK: Reading

    /// The JSON object in `bytes`, or `.malformed(what)` when they hold anything else.
    static func object(from bytes: [UInt8], what: String) throws(JOSEError) -> JSONValue {
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(bytes)), parsed is [String: Any],
              let value = JSONValue(foundation: parsed) else {
            throw .malformed("\(what) is not a JSON object")
        }
        return value
    }

    private static let booleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    /// Foundation's reading of a JSON value. `JSONSerialization` gives booleans and numbers both
    /// as `NSNumber`; only the class of the boolean singletons tells `true` from `1`.
    init?(foundation value: Any) {
        switch value {
        case let string as String:
            self = .string(string)
        case let number as NSNumber:
            if ObjectIdentifier(type(of: number)) == Self.booleanClass {
                self = .bool(number.boolValue)
            } else if "\(number)" == "\(number.int64Value)" {
                // Exactly an integer as written (a Double would lose digits past 2^53).
                self = .integer(number.int64Value)
            } else {
                self = .number(number.doubleValue)
            }
        case let array as [Any]:
            var values: [JSONValue] = []
            for element in array {
                guard let converted = JSONValue(foundation: element) else { return nil }
                values.append(converted)
            }
            self = .array(values)
        case let dictionary as [String: Any]:
            var members: [JSONMember] = []
            for name in dictionary.keys.sorted() {
                guard let converted = JSONValue(foundation: dictionary[name]!) else { return nil }
                members.append(JSONMember(name, converted))
            }
            self = .object(members)
        case is NSNull:
            self = .null
        default:
            return nil
        }
    }

    // MARK: Writing

    /// Compact JSON, members in order, no whitespace.
    public var serialized: String {
        var output = ""
        write(to: &output)
        return output
    }

    func write(to output: inout String) {
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
