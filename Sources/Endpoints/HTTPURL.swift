// Endpoints: where the relay connects and how — an http(s) URL, the TLS settings for the
// connection, and the host syntax both share. Values only: Config parses them from JSON, the
// proxy (upstreams) and OAuth2 (token endpoints) use them. No I/O.

/// An absolute `http`/`https` URL, such as an identity's `tokenUrl`. The host is lowercased,
/// the path normalized like a request path (`/` when the URL has none); user info and
/// fragments are rejected. (Config parses it; `HTTPURL(parsing:)` is there.)
public struct HTTPURL: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var scheme: URLScheme
    /// Host name or IP address, lowercased, IPv6 without brackets.
    public var host: String
    /// The explicit port, or the scheme's default.
    public var port: UInt16
    /// The normalized path, starting with `/`.
    public var path: String
    /// The query without `?`, if any.
    public var query: String?

    public init(scheme: URLScheme, host: String, port: UInt16? = nil, path: String = "/", query: String? = nil) {
        self.scheme = scheme
        self.host = host
        self.port = port ?? scheme.defaultPort
        self.path = path
        self.query = query
    }

    /// `host`, or `host:port` when the port is not the scheme's default: the Host header.
    public var authority: String {
        HostSyntax.authority(host: host, port: port, defaultPort: scheme.defaultPort)
    }

    /// The same origin (RFC 6454: scheme, host and port) as `other`.
    public func hasSameOrigin(as other: HTTPURL) -> Bool {
        scheme == other.scheme && host == other.host && port == other.port
    }

    /// The path and query as sent in the request line.
    public var requestTarget: String {
        query.map { path + "?" + $0 } ?? path
    }

    public var description: String {
        "\(scheme.rawValue)://\(authority)\(requestTarget)"
    }
}
