import Endpoints
import Routing

/// Reading an `HTTPURL` from config text, with the message `oauth-relay check` shows.
extension HTTPURL {
    /// Parses an absolute http(s) URL (a query allowed); nil for anything `ConfigLoader` would reject.
    public init?(parsing text: String) {
        guard let url = try? Self.parse(text, allowsQuery: true) else { return nil }
        self = url
    }

    /// `HTTPURL(absolute:allowsQuery:)` (Routing: the one URL reader, shared with discovery), its
    /// error as a config value's.
    static func parse(_ text: String, allowsQuery: Bool) throws(InvalidValue) -> HTTPURL {
        do throws(HTTPURLSyntaxError) {
            return try HTTPURL(absolute: text, allowsQuery: allowsQuery)
        } catch {
            throw InvalidValue(error.message)
        }
    }
}
