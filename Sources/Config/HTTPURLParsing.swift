import Endpoints
import Foundation
import Routing

/// Reading an `HTTPURL` from config text, with the message `oauth-relay check` shows.
extension HTTPURL {
    /// Parses an absolute http(s) URL (a query allowed); nil for anything `ConfigLoader` would reject.
    public init?(parsing text: String) {
        guard let url = try? Self.parse(text, allowsQuery: true) else { return nil }
        self = url
    }

    static func parse(_ text: String, allowsQuery: Bool) throws(InvalidValue) -> HTTPURL {
        guard let separator = text.range(of: "://") else {
            throw InvalidValue("\"\(text)\" is not an absolute URL (expected http://… or https://…)")
        }
        let schemeName = text[..<separator.lowerBound].lowercased()
        guard let scheme = URLScheme(rawValue: schemeName) else {
            throw InvalidValue("unsupported scheme \"\(schemeName)\" in \"\(text)\" (expected http or https)")
        }
        let afterScheme = text[separator.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        var rest = afterScheme[authorityEnd...]
        guard !authority.contains("@") else {
            throw InvalidValue("user info (user:password@) is not allowed in a URL; put credentials in an identity")
        }
        if rest.contains("#") {
            throw InvalidValue("a fragment (#…) is not allowed in \"\(text)\"")
        }
        var query: String?
        if let questionMark = rest.firstIndex(of: "?") {
            guard allowsQuery else { throw InvalidValue("a query (?…) is not allowed in \"\(text)\"") }
            let queryText = rest[rest.index(after: questionMark)...]
            guard queryText.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw InvalidValue("the query in \"\(text)\" contains spaces or characters that must be percent-encoded")
            }
            query = String(queryText)
            rest = rest[..<questionMark]
        }
        let (host, port) = try parseAuthority(authority, scheme: scheme, in: text)
        guard let path = RequestPath.normalize(rest.isEmpty ? "/" : String(rest)) else {
            throw InvalidValue("invalid path \"\(rest)\" in \"\(text)\"")
        }
        return HTTPURL(scheme: scheme, host: host, port: port, path: path, query: query)
    }

    private static func parseAuthority(_ authority: Substring, scheme: URLScheme, in text: String) throws(InvalidValue) -> (String, UInt16) {
        let (host, portText) = try HostSyntax.splitAuthority(authority) { problem in
            switch problem {
            case .unclosedBracket: InvalidValue("unclosed \"[\" in \"\(text)\"")
            case .unexpectedAfterHost(let rest): InvalidValue("unexpected \"\(rest)\" after the host in \"\(text)\"")
            case .notIPv6(let host): InvalidValue("\"\(host)\" is not an IPv6 address")
            case .missingHost: InvalidValue("missing host in \"\(text)\"")
            case .invalidHost(let host): InvalidValue("\"\(host)\" is not a valid host name or address")
            }
        }
        var port = scheme.defaultPort
        if let portText {
            port = try HostPort.parsePort(portText, in: text)
            guard port != 0 else { throw InvalidValue("port 0 is not allowed in \"\(text)\"") }
        }
        return (host.lowercased(), port)
    }
}
