import Endpoints
import HTTPFields
import JSON

/// A protected resource's metadata (RFC 9728 §2), read and checked: its `resource` is the
/// upstream URL the relay forwards to (§3.3; compared after RFC 3986 normalization of scheme,
/// host, default port and percent-encoding, an empty path equal to "/", a trailing slash
/// ignored: `ResourceIdentifier`), and every URL in it is https (plain http only on a loopback
/// host). Fetching is the caller's (`AutoResolution`); this type only reads.
public struct ResourceMetadata: Sendable, Equatable {
    public let resource: String
    /// Issuer identifiers, in the resource's order (may be empty: then nothing can be learnt).
    public let authorizationServers: [String]
    public let scopesSupported: [String]
    public let bearerMethodsSupported: [String]
    public let resourceName: String?

    public init(resource: String, authorizationServers: [String], scopesSupported: [String] = [],
                bearerMethodsSupported: [String] = [], resourceName: String? = nil) {
        self.resource = resource
        self.authorizationServers = authorizationServers
        self.scopesSupported = scopesSupported
        self.bearerMethodsSupported = bearerMethodsSupported
        self.resourceName = resourceName
    }
}

extension ResourceMetadata {
    /// RFC 9728 §3.1: `/.well-known/oauth-protected-resource` inserted between the host and the
    /// resource's path (a trailing "/" of the path dropped), query and fragment dropped.
    public static func wellKnownURL(for resource: HTTPURL) -> HTTPURL {
        let path = resource.path.hasSuffix("/") ? String(resource.path.dropLast()) : resource.path
        return HTTPURL(scheme: resource.scheme, host: resource.host, port: resource.port,
                       path: "/.well-known/oauth-protected-resource" + path)
    }

    /// Reads the metadata document `members`, fetched from `url`, for `expectedResource`.
    public init(members: [String: JSONValue], from url: String, expectedResource: HTTPURL) throws(AutoSetupError) {
        func string(_ name: String) throws(AutoSetupError) -> String? {
            guard let value = members[name], value != .null else { return nil }
            guard let text = value.string else { throw .invalidDocument(url: url, reason: "\(name) is not a string") }
            return text
        }
        func strings(_ name: String) throws(AutoSetupError) -> [String] {
            guard let value = members[name], value != .null else { return [] }
            guard let texts = value.strings else { throw .invalidDocument(url: url, reason: "\(name) is not an array of strings") }
            return texts
        }
        guard let resource = try string("resource") else { throw .invalidDocument(url: url, reason: "it has no resource") }
        guard ResourceIdentifier.matches(resource, expectedResource) else {
            throw .resourceMismatch(url: url, expected: expectedResource.description, found: ErrorText.clean(resource, removing: []))
        }
        let servers = try strings("authorization_servers")
        for server in servers {
            let issuer: HTTPURL
            do throws(HTTPURLSyntaxError) {
                issuer = try HTTPURL(absolute: server, allowsQuery: false)
            } catch {
                throw .invalidDocument(url: url, reason: "authorization_servers holds \"\(ErrorText.clean(server, removing: []))\", "
                                       + "which is not an issuer identifier: \(ErrorText.clean(error.message, removing: []))")
            }
            guard issuer.scheme == .https || HostSyntax.isLoopback(issuer.host) else {
                throw .insecureURL(what: "the authorization server in authorization_servers of \(url)", url: redactedURL(issuer))
            }
        }
        self.init(resource: resource, authorizationServers: servers, scopesSupported: try strings("scopes_supported"),
                  bearerMethodsSupported: try strings("bearer_methods_supported"),
                  resourceName: try string("resource_name").map { ErrorText.clean($0, removing: []) })
    }
}

/// RFC 9728 §3.3's comparison of a metadata document's `resource` with the upstream URL: the
/// scheme and host in any case, the default port written or not, an empty path the same as
/// "/", and the paths compared after RFC 3986 §6.2.2.2's percent-encoding normalization
/// (`PercentEncoding.normalized`) and without trailing slashes (the upstream URL is kept without
/// them, so `https://h/mcp/` is the upstream `https://h/mcp/`); the rest of the path (dot
/// segments too) and the query exactly as written.
enum ResourceIdentifier {
    static func matches(_ text: String, _ expected: HTTPURL) -> Bool {
        guard let found = try? HTTPURL(absolute: text) else { return false }
        // The path as written (HTTPURL normalizes it like a request path: dot segments, escapes).
        guard let separator = text.firstRange(of: "://") else { return false }
        let afterScheme = text[separator.upperBound...]
        let pathAndQuery = afterScheme.drop { $0 != "/" && $0 != "?" }
        let writtenPath = String(pathAndQuery.prefix { $0 != "?" })
        return found.hasSameOrigin(as: expected) && comparable(writtenPath) == comparable(expected.path) && found.query == expected.query
    }

    /// `path` with its escapes normalized and its trailing slashes dropped ("" for "/" and "").
    private static func comparable(_ path: String) -> [UInt8] {
        var bytes = PercentEncoding.normalized(Array(path.utf8))
        while bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        return bytes
    }
}

/// RFC 3986 §6.2.2.2: a `%XX` of an unreserved character (ALPHA DIGIT `-` `.` `_` `~`)
/// decoded, every other escape's hex digits uppercased; anything else (a `%` without two hex
/// digits too) kept as it is. The escapes of `RequestPath.normalize`, without its other changes.
enum PercentEncoding {
    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    static func normalized(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = ASCII.hexDigitValue(bytes[index + 1]),
               let low = ASCII.hexDigitValue(bytes[index + 2]) {
                let decoded = high << 4 | low
                if ASCII.isUnreserved(decoded) {
                    output.append(decoded)
                } else {
                    output += [UInt8(ascii: "%"), hexDigits[Int(high)], hexDigits[Int(low)]]
                }
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return output
    }
}
