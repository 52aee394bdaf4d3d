// HTTPFields: the relay's one header-field type, the rule for showing a secret, and the
// byte-level ASCII classes every parser and validator of the relay shares. No C, no I/O, no
// Foundation, so HTTP1, Routing, Config and OAuth2 can all sit on it.

import SafeText


/// One header field with its own name and value: a token request's headers, the token
/// client's request and response, a route's `setHeaders`.
///
/// Its description shows the value only for headers that cannot carry a credential
/// (`Content-Type`, `Accept`); any other value is redacted, since `Authorization` holds a
/// client secret or a token and configured headers may hold API keys. So a list of fields can
/// be logged, dumped or put into an error as it is.
///
/// (The parser keeps a parsed head's fields as offsets into its buffer, `FieldSlot` in HTTP1,
/// so the request path makes no copy per field; this type is for the few places that own one.)
public struct HTTPField: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// Lowercased names of the fields whose values are shown.
    static let shownValues: Set<String> = ["content-type", "accept"]

    public var description: String {
        "\(name): " + (Self.shownValues.contains(name.lowercased()) ? value : redacted(value))
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["header": description], displayStyle: .struct)
    }
}

extension Array where Element == HTTPField {
    /// The value of the first field named `name` (ASCII case-insensitive).
    public func value(named name: String) -> String? {
        let lower = name.lowercased()
        return first { $0.name.lowercased() == lower }?.value
    }
}
