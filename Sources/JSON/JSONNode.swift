/// A JSON document as `JSONParser` reads it, for readers that report where a problem is (the
/// config decoder): object members keep their order and duplicates (so errors come in document
/// order and duplicate keys can be reported), numbers keep their literal text (so integers stay
/// exact and `true` is never a number), and every value knows the byte offset where it starts
/// (so errors can name a line and column). `JSONValue(parsing:)` is the same reading without
/// the offsets.
public struct JSONNode: Sendable {
    public enum Kind: Sendable {
        case object([Member])
        case array([JSONNode])
        case string(String)
        case number(String)
        case bool(Bool)
        case null
    }

    public struct Member: Sendable {
        public var key: String
        public var keyOffset: Int
        public var value: JSONNode
    }

    public var kind: Kind
    /// Byte offset of the value's first byte.
    public var offset: Int
    /// Byte offset of the value's last byte (the closing brace of an object).
    public var lastOffset: Int

    /// The type's name as used in "expected a string, got number".
    public var typeName: String {
        switch kind {
        case .object: "object"
        case .array: "array"
        case .string: "string"
        case .number: "number"
        case .bool: "boolean"
        case .null: "null"
        }
    }
}
