import HTTPFields

/// The name of the identity made for the routes to one upstream with `"identity": "auto"`:
/// `auto-<host>[-<port>][-<path segments joined by ->]`, the port only when it is not the
/// scheme's default, and every character but letters, digits, `.`, `_` and `-` replaced by `_`
/// (an identity name is used in URLs, logs and metrics labels). `https://api.example.com/mcp`
/// gives `auto-api.example.com-mcp`, `http://[::1]:8080` gives `auto-__1-8080`. Two upstreams
/// can give one name (`http://a` and `https://a`); `AutoIdentities` refuses that.
enum AutoIdentityName {
    /// What a route's `identity` says to have an identity made for its upstream; no configured
    /// identity may be named so.
    static let keyword = "auto"

    static func name(for upstream: UpstreamURL) -> String {
        var parts = [keyword, upstream.host]
        if upstream.port != upstream.scheme.defaultPort { parts.append(String(upstream.port)) }
        parts += upstream.basePath.split(separator: "/").map(String.init)
        return String(decoding: parts.joined(separator: "-").utf8.map { byte in
            ASCII.isAlphanumeric(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                ? byte : UInt8(ascii: "_")
        }, as: UTF8.self)
    }
}
