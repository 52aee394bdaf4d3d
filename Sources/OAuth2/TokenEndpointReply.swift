import HTTPFields

/// The token endpoint's answer as the relay's HTTP client received it: status, headers and
/// the whole body (token responses are small; the client caps the size).
public struct TokenEndpointReply: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var status: Int
    public var headers: [HTTPField]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPField] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, headers: [(String, String)], body: String) {
        self.init(status: status, headers: headers.map { HTTPField(name: $0.0, value: $0.1) }, body: Array(body.utf8))
    }

    /// The first value of the named header (names compared case-insensitively).
    public func header(_ name: String) -> String? {
        headers.value(named: name)
    }

    /// The media type of `Content-Type`, lowercased, without parameters (`application/json`).
    public var mediaType: String? {
        header("Content-Type").map {
            WhiteSpace.trimmingSpaces($0.prefix { $0 != ";" }).lowercased()
        }
    }

    /// The body is never described: it may hold a token.
    public var description: String {
        "HTTP \(status) (\(mediaType ?? "no content type"), \(body.count) bytes)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["reply": description], displayStyle: .struct)
    }
}
