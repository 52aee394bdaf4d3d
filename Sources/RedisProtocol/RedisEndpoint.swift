// RedisProtocol: what the relay says to Redis and hears back, as values with no socket — the
// endpoint a `redis://` or `rediss://` URL names (this file), commands in RESP (RedisCommand.swift)
// and replies (RedisReply.swift, read from bytes by RESPReader.swift). The connection itself (TCP
// or TLS on the event loop) is RedisClient's.
//
// The URL may hold a password: it is kept as a `Secret`, and neither a description of the
// endpoint nor any parsing error ever shows it (errors do not even quote the URL).

import Endpoints
import HTTPFields
import SafeText

/// Where a Redis server is and how to log in to it: `redis://[user:password@]host[:port][/db]`,
/// or `rediss://…` for TLS (the TLS settings themselves are `store.tls`, Config's).
public struct RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    public static let defaultPort: UInt16 = 6379

    /// Host name or IP address, lowercased; IPv6 without brackets.
    public var host: String
    public var port: UInt16
    /// The logical database (`SELECT`), 0 by default.
    public var database: Int
    /// The ACL user (Redis 6 `AUTH user password`); nil for the `default` user (`AUTH password`).
    public var user: String?
    public var password: Secret?
    /// `rediss://`: the connection is TLS, its certificate verified for `host` (or `store.tls`'s
    /// `serverName`).
    public var usesTLS: Bool

    public init(host: String, port: UInt16 = defaultPort, database: Int = 0, user: String? = nil, password: Secret? = nil,
                usesTLS: Bool = false) {
        self.host = host
        self.port = port
        self.database = database
        self.user = user
        self.password = password
        self.usesTLS = usesTLS
    }

    /// The URL with the password replaced by `…`: what logs and errors show.
    public var description: String {
        var userInfo = ""
        if password != nil { userInfo = (user ?? "") + ":…@" }
        return "\(usesTLS ? "rediss" : "redis")://\(userInfo)\(HostSyntax.bracketed(host)):\(port)/\(database)"
    }
}

/// Why a `store.redis` value is not a usable Redis URL. No message quotes the URL: it may hold
/// a password.
public struct RedisURLError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension RedisEndpoint {
    /// Parses `redis://[user:password@]host[:port][/db]` and the same with `rediss://` (TLS).
    /// User and password may be percent-encoded (a password holding `@`, `:` or `/` must be).
    public init(parsing text: String) throws(RedisURLError) {
        guard let separator = text.firstRange(of: "://") else {
            throw RedisURLError("not a redis:// URL (expected redis://[user:password@]host[:port][/db], or rediss:// for TLS)")
        }
        let usesTLS: Bool
        switch text[..<separator.lowerBound].lowercased() {
        case "redis": usesTLS = false
        case "rediss": usesTLS = true
        case let scheme:
            let shown = scheme.utf8.count <= 16 && scheme.utf8.allSatisfy(ASCII.isAlphanumeric) ? "\"\(scheme)\"" : "in the URL"
            throw RedisURLError("unsupported scheme \(shown) (expected redis://, rediss://, redis-cluster:// or redis-sentinel://; Unix sockets are not supported)")
        }
        let parts = try RedisURLParts(afterScheme: text[separator.upperBound...], form: "redis://")
        let (host, port) = try Self.parseHostPort(parts.hosts)
        self.init(host: host, port: port, database: try Self.parseDatabase(parts.path), user: parts.user, password: parts.password,
                  usesTLS: usesTLS)
    }

    static func parseUserInfo(_ userInfo: Substring) throws(RedisURLError) -> (String?, Secret) {
        guard let colon = userInfo.firstIndex(of: ":") else {
            throw RedisURLError("the user info needs a colon: write user:password@ (Redis 6 ACL user) or :password@ (the default user)")
        }
        let user = try percentDecoded(userInfo[..<colon], what: "user")
        let password = try percentDecoded(userInfo[userInfo.index(after: colon)...], what: "password")
        guard !password.isEmpty else { throw RedisURLError("the password in the URL is empty") }
        return (user.isEmpty ? nil : user, Secret(password))
    }

    static func parseHostPort(_ authority: Substring, defaultPort: UInt16 = defaultPort) throws(RedisURLError) -> (String, UInt16) {
        // No message quotes the URL: it may hold a password.
        let (host, portText) = try HostSyntax.splitAuthority(authority) { problem in
            switch problem {
            case .unclosedBracket: RedisURLError("unclosed \"[\" in the host")
            case .unexpectedAfterHost: RedisURLError("unexpected characters after the IPv6 address")
            case .notIPv6: RedisURLError("the bracketed host is not an IPv6 address")
            case .missingHost: RedisURLError("the URL has no host")
            case .invalidHost: RedisURLError("the host is not a valid host name or address (a password with \"@\" or \"/\" must be percent-encoded)")
            }
        }
        var port = defaultPort
        if let portText {
            guard let value = HostSyntax.port(portText) else {
                throw RedisURLError("the port is not a number from 1 to 65535")
            }
            port = value
        }
        return (host.lowercased(), port)
    }

    static func parseDatabase(_ path: Substring) throws(RedisURLError) -> Int {
        let digits = path.dropFirst()
        if digits.isEmpty { return 0 }
        guard digits.utf8.count <= 9, digits.utf8.allSatisfy(ASCII.isDigit), let database = Int(digits) else {
            throw RedisURLError("the path must be a database number (/0, /1, …)")
        }
        return database
    }

    /// `%XX` decoded; the result must be UTF-8 (a Redis user or password is sent as given).
    static func percentDecoded(_ text: Substring, what: String) throws(RedisURLError) -> String {
        guard let bytes = PercentDecoding.bytes(text) else {
            throw RedisURLError("the \(what) has a \"%\" not followed by two hex digits")
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw RedisURLError("the \(what) is not UTF-8 once percent-decoded")
        }
        return decoded
    }
}
