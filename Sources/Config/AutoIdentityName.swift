import Crypto
import HTTPFields

/// The name of the identity made for the routes to one upstream with `"identity": "auto"`:
/// `auto-<host>[-<port>][-<path segments joined by ->]`, the port only when it is not the
/// scheme's default, and every character but letters, digits, `.`, `_` and `-` replaced by `_`
/// (an identity name is used in URLs, logs and metrics labels). `https://api.example.com/mcp`
/// gives `auto-api.example.com-mcp`, `http://[::1]:8080` gives `auto-__1-8080`. A name longer
/// than 100 characters is cut to 91 and ends in `-` and 8 hex digits of the SHA-256 of the
/// upstream URL. Two upstreams can give one name (`http://localhost` and `https://localhost`);
/// `AutoIdentities` refuses that.
enum AutoIdentityName {
    /// What a route's `identity` says to have an identity made for its upstream; no configured
    /// identity may be named so.
    static let keyword = "auto"

    /// The longest name made: the store's file names (`client-NAME.registration`) and metrics
    /// labels stay well within their limits.
    static let maximumLength = 100

    static func name(for upstream: UpstreamURL) -> String {
        var parts = [keyword, upstream.host]
        if upstream.port != upstream.scheme.defaultPort { parts.append(String(upstream.port)) }
        parts += upstream.basePath.split(separator: "/").map(String.init)
        let name = parts.joined(separator: "-").utf8.map { byte in
            ASCII.isAlphanumeric(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                ? byte : UInt8(ascii: "_")
        }
        guard name.count > maximumLength else { return String(decoding: name, as: UTF8.self) }
        // Too long: cut, and told apart from other upstreams cut the same by the upstream's hash.
        let hash = SHA256.hash(Array(upstream.description.utf8)).prefix(4).map { byte in
            String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
        }.joined()
        return String(decoding: name.prefix(maximumLength - 9), as: UTF8.self) + "-" + hash
    }
}
