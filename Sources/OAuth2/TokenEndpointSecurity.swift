import Endpoints
import FoundationEssentials

/// Whether an identity's token URL may be used: `https://` always; `http://` on a loopback
/// host (a local IdP in development); any other `http://` only with `allowInsecureTokenUrl`,
/// which the relay logs as a warning, since client secrets and tokens would cross the
/// network in clear text.
public enum TokenEndpointSecurity: Sendable, Equatable {
    case https
    case loopbackHTTP
    /// `http://` to a host that is not loopback, allowed by `allowInsecureTokenUrl`: warn.
    case insecureHTTPAllowed

    /// Checks every IdP URL the identity configures (the token endpoint and the others a login
    /// uses); the answer is the weakest of them.
    public static func check(_ identity: Identity) throws(InsecureTokenURL) -> TokenEndpointSecurity {
        let urls: [(String, HTTPURL?)] = [
            ("tokenUrl", identity.tokenUrl), ("authorizationUrl", identity.authorizationUrl),
            ("deviceAuthorizationUrl", identity.deviceAuthorizationUrl), ("jwksUrl", identity.jwksUrl),
            ("revocationUrl", identity.revocationUrl),
        ]
        var weakest = TokenEndpointSecurity.https
        for case let (key, url?) in urls {
            let security = try check(url, key: key, of: identity)
            if security.rank > weakest.rank { weakest = security }
        }
        return weakest
    }

    /// Checks one of the identity's IdP URLs (configured under `key`, or discovered for it).
    public static func check(_ url: HTTPURL, key: String, of identity: Identity) throws(InsecureTokenURL) -> TokenEndpointSecurity {
        guard url.scheme == .http else { return .https }
        if isLoopback(url.host) { return .loopbackHTTP }
        guard identity.allowInsecureTokenUrl else { throw InsecureTokenURL(identity: identity.name, key: key, url: redactedURL(url)) }
        return .insecureHTTPAllowed
    }

    private var rank: Int {
        switch self {
        case .https: 0
        case .loopbackHTTP: 1
        case .insecureHTTPAllowed: 2
        }
    }

    /// `localhost` and `*.localhost` (RFC 6761), 127.0.0.0/8, `::1` and `::ffff:127.x.x.x`.
    public static func isLoopback(_ host: String) -> Bool {
        let host = host.lowercased()
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        if let ipv4 = ipv4Octets(Substring(host)) { return ipv4[0] == 127 }
        guard host.contains(":"), let groups = ipv6Groups(host.split(separator: "%", maxSplits: 1)[0]) else { return false }
        if groups[..<7].allSatisfy({ $0 == 0 }) && groups[7] == 1 { return true }
        return groups[..<5].allSatisfy { $0 == 0 } && groups[5] == 0xFFFF && groups[6] >> 8 == 127
    }

    private static func ipv4Octets(_ text: Substring) -> [Int]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let octets = parts.compactMap { part in
            part.count <= 3 && part.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } ? Int(part) : nil
        }
        return octets.count == 4 && parts.count == 4 && octets.allSatisfy({ $0 <= 255 }) ? octets : nil
    }

    /// The eight 16-bit groups of an IPv6 address (with `::` and an embedded IPv4 tail).
    private static func ipv6Groups(_ text: Substring) -> [Int]? {
        let halves = text.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [Int]? {
            guard !part.isEmpty else { return [] }
            var result: [Int] = []
            for piece in part.split(separator: ":", omittingEmptySubsequences: false) {
                if piece.contains("."), let octets = ipv4Octets(piece) {
                    result += [octets[0] << 8 | octets[1], octets[2] << 8 | octets[3]]
                } else if let group = Int(piece, radix: 16), piece.count <= 4 {
                    result.append(group)
                } else {
                    return nil
                }
            }
            return result
        }
        guard let head = groups(halves[0]), let tail = halves.count == 2 ? groups(halves[1]) : [] else { return nil }
        let missing = 8 - head.count - tail.count
        guard halves.count == 2 ? missing >= 1 : missing == 0 else { return nil }
        return head + Array(repeating: 0, count: missing) + tail
    }
}

/// An `http://` token URL on a host that is not loopback, without `allowInsecureTokenUrl`.
public struct InsecureTokenURL: Error, Sendable, Equatable, CustomStringConvertible {
    public let identity: String
    /// The key that named the URL (`tokenUrl`, `authorizationUrl`, …).
    public let key: String
    public let url: String

    public init(identity: String, key: String = "tokenUrl", url: String) {
        self.identity = identity
        self.key = key
        self.url = url
    }

    /// The config path of the offending value, for `oauth-relay check` (a name with a `.` or a
    /// leading digit in brackets, as Config writes paths).
    public var path: String {
        let plain = identity.first.map { !$0.isNumber } ?? false && !identity.contains(".")
        return "$.identities" + (plain ? ".\(identity)" : "[\"\(identity)\"]") + ".\(key)"
    }

    public var description: String {
        "\(path): \(url) is plain http:// to a host that is not loopback, so the client credentials and tokens "
            + "would cross the network unencrypted; use https://, or set \"allowInsecureTokenUrl\": true to accept the risk"
    }
}
