import Endpoints

/// A route's upstream: where requests are forwarded. `basePath` is prepended to the
/// forwarded path: `http://svc:8080/v1` sends `/orders` as `/v1/orders`.
public struct UpstreamURL: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var scheme: URLScheme
    /// Host name or IP address, lowercased, IPv6 without brackets.
    public var host: String
    /// The explicit port, or the scheme's default.
    public var port: UInt16
    /// `""` when the URL has no path or just `/`; otherwise the normalized path without a
    /// trailing slash (`/v1`).
    public var basePath: String

    public init(scheme: URLScheme, host: String, port: UInt16? = nil, basePath: String = "") {
        self.scheme = scheme
        self.host = host
        self.port = port ?? scheme.defaultPort
        self.basePath = basePath
    }

    /// Parses an upstream URL; nil for anything `ConfigLoader` would reject.
    public init?(parsing text: String) {
        guard let url = try? Self.parse(text) else { return nil }
        self = url
    }

    /// `host`, or `host:port` when the port is not the scheme's default.
    public var authority: String {
        HostSyntax.authority(host: host, port: port, defaultPort: scheme.defaultPort)
    }

    public var description: String {
        "\(scheme.rawValue)://\(authority)\(basePath)"
    }

    static func parse(_ text: String) throws(InvalidValue) -> UpstreamURL {
        let url = try HTTPURL.parse(text, allowsQuery: false)
        var basePath = Substring(url.path)
        while basePath.hasSuffix("/") { basePath = basePath.dropLast() }
        return UpstreamURL(scheme: url.scheme, host: url.host, port: url.port, basePath: String(basePath))
    }
}
