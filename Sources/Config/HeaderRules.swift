import HTTPFields

/// The header names the config may not set, and the syntax of the ones it may.
enum HeaderRules {
    /// Hop-by-hop and message-framing headers (RFC 9110 §7.6.1, RFC 9112): the relay
    /// manages them per connection, so the config cannot set them.
    static let framingHeaders: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length",
    ]

    /// The name, if it is an HTTP token and not one of `forbidden` (lowercased names).
    static func validName(_ name: String, forbidden: Set<String>) throws(InvalidValue) -> String {
        guard ASCII.isToken(name) else { throw InvalidValue("\"\(name)\" is not a valid header name") }
        guard !forbidden.contains(name.lowercased()) else {
            throw InvalidValue("\"\(name)\" is managed by the relay and cannot be set here")
        }
        return name
    }
}
