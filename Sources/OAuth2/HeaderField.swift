/// One header of a token request. Its description shows the value only for headers that
/// cannot carry a credential (`Content-Type`, `Accept`); any other value is redacted, since
/// `Authorization` holds the client secret and an identity's extra `headers` may hold keys.
public struct HeaderField: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let name: String
    public let value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    static let shownValues: Set<String> = ["content-type", "accept"]

    public var description: String {
        "\(name): " + (Self.shownValues.contains(name.lowercased()) ? value : redacted(value))
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["header": description], displayStyle: .struct)
    }
}
