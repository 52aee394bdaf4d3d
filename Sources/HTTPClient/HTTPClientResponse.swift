import HTTPFields

/// The final response `sendHTTPRequest` read: its status, fields and whole (bounded) body.
public struct HTTPClientResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [HTTPField]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPField], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first field named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.value(named: name)
    }
}
