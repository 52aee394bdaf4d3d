/// One member of a JSON object.
public struct JSONMember: Sendable, Equatable {
    public var name: String
    public var value: JSONValue

    public init(_ name: String, _ value: JSONValue) {
        self.name = name
        self.value = value
    }
}
