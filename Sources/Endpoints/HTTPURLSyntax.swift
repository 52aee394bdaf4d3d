import HTTPFields

/// Reading an absolute `http`/`https` URL into an `HTTPURL`, for every module that gets URLs
/// as text: the config's (`tokenUrl`, upstreams) and an IdP's (discovery metadata, a device
/// authorization's `verification_uri`). The path is normalized as a request path is.
extension HTTPURL {
    /// Parses `text`: a scheme of `http` or `https`, a host name, IPv4 or bracketed IPv6
    /// address, an optional port 1-65535, a path, and a query when `allowsQuery`. User info
    /// (`user:password@`) and fragments are refused, so are spaces and control characters.
    public init(absolute text: String, allowsQuery: Bool = true) throws(HTTPURLSyntaxError) {
        // Read as UTF-8 bytes: every delimiter is ASCII. Reading Characters (grapheme breaking)
        // cost 35,000 instructions a URL (now 7,400), a quarter of `oauth-relay check` with 10,000 routes.
        let bytes = text.utf8
        guard let separator = Self.schemeSeparator(in: bytes) else {
            throw HTTPURLSyntaxError("\"\(text)\" is not an absolute URL (expected http://… or https://…)")
        }
        let schemeName = text[..<separator].lowercased()
        guard let scheme = URLScheme(rawValue: schemeName) else {
            throw HTTPURLSyntaxError("unsupported scheme \"\(schemeName)\" in \"\(text)\" (expected http or https)")
        }
        let afterScheme = bytes.index(separator, offsetBy: 3)
        let authorityEnd = bytes[afterScheme...].firstIndex {
            $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
        } ?? bytes.endIndex
        let authority = text[afterScheme..<authorityEnd]
        guard !authority.utf8.contains(UInt8(ascii: "@")) else {
            throw HTTPURLSyntaxError("user info (user:password@) is not allowed in a URL; put credentials in an identity")
        }
        if bytes[authorityEnd...].contains(UInt8(ascii: "#")) {
            throw HTTPURLSyntaxError("a fragment (#…) is not allowed in \"\(text)\"")
        }
        var pathEnd = bytes.endIndex
        var query: String?
        if let questionMark = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "?")) {
            guard allowsQuery else { throw HTTPURLSyntaxError("a query (?…) is not allowed in \"\(text)\"") }
            let queryText = text[bytes.index(after: questionMark)...]
            guard queryText.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw HTTPURLSyntaxError("the query in \"\(text)\" contains spaces or characters that must be percent-encoded")
            }
            query = String(queryText)
            pathEnd = questionMark
        }
        let (host, port) = try Self.hostAndPort(authority, scheme: scheme, in: text)
        let rest = text[authorityEnd..<pathEnd]
        guard let path = RequestPath.normalize(rest.isEmpty ? "/" : String(rest)) else {
            throw HTTPURLSyntaxError("invalid path \"\(rest)\" in \"\(text)\"")
        }
        self.init(scheme: scheme, host: host, port: port, path: path, query: query)
    }

    /// Where the first `://` starts, if there is one.
    private static func schemeSeparator(in bytes: String.UTF8View) -> String.Index? {
        var searchFrom = bytes.startIndex
        while let colon = bytes[searchFrom...].firstIndex(of: UInt8(ascii: ":")) {
            let afterColon = bytes.index(after: colon)
            if bytes[afterColon...].starts(with: "//".utf8) { return colon }
            searchFrom = afterColon
        }
        return nil
    }

    private static func hostAndPort(_ authority: Substring, scheme: URLScheme, in text: String) throws(HTTPURLSyntaxError) -> (String, UInt16) {
        let (host, portText) = try HostSyntax.splitAuthority(authority) { problem in
            switch problem {
            case .unclosedBracket: HTTPURLSyntaxError("unclosed \"[\" in \"\(text)\"")
            case .unexpectedAfterHost(let rest): HTTPURLSyntaxError("unexpected \"\(rest)\" after the host in \"\(text)\"")
            case .notIPv6(let host): HTTPURLSyntaxError("\"\(host)\" is not an IPv6 address")
            case .missingHost: HTTPURLSyntaxError("missing host in \"\(text)\"")
            case .invalidHost(let host): HTTPURLSyntaxError("\"\(host)\" is not a valid host name or address")
            }
        }
        guard let portText else { return (host.lowercased(), scheme.defaultPort) }
        guard let port = HostSyntax.port(portText) else {
            throw HTTPURLSyntaxError("invalid port \"\(portText)\" in \"\(text)\" (expected a number 1-65535)")
        }
        return (host.lowercased(), port)
    }
}

/// Why a text is not an absolute http(s) URL. `message` quotes the text: a config value or a
/// URL an IdP publishes, neither of them secret.
public struct HTTPURLSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
