// `redis-sentinel://[user:password@]host[:port][,host[:port]…]/mastername[/db]`: a master that
// Redis Sentinel watches and names, with no socket. The relay asks the sentinels for the master's
// address and follows their announcements (SentinelReplies.swift parses what they say; Tokens'
// SentinelWatch does the I/O).
//
// Like a redis:// URL, a redis-sentinel:// URL may hold a password: the data nodes' password,
// kept as a `Secret`; descriptions redact it and no parsing error quotes the URL.
// `rediss-sentinel://` speaks TLS (with `store.tls`) to the sentinels and to the master alike, as
// a Sentinel deployment with `tls-port` serves both.

import Endpoints
import HTTPFields
import SafeText

/// A sentinel's address. Sentinels are asked without a password (`requirepass` on a sentinel is
/// not supported: README, "Sentinel").
public struct SentinelAddress: Sendable, Equatable, Hashable, CustomStringConvertible {
    public static let defaultPort: UInt16 = 26379

    /// Host name or IP address, lowercased; IPv6 without brackets.
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16 = defaultPort) {
        self.host = host
        self.port = port
    }

    /// The endpoint a connection to this sentinel opens: no AUTH, no SELECT; TLS with `usesTLS`.
    public func endpoint(usesTLS: Bool) -> RedisEndpoint {
        RedisEndpoint(host: host, port: port, usesTLS: usesTLS)
    }

    public var description: String {
        "\(HostSyntax.bracketed(host)):\(port)"
    }
}

/// `redis-sentinel://[user:password@]host[:port][,host[:port]…]/mastername[/db]`: the sentinels
/// to ask, the master's name among them, and how to log in to the master they name.
public struct SentinelTopology: Sendable, Equatable, CustomStringConvertible {
    static let scheme = "redis-sentinel"
    static let tlsScheme = "rediss-sentinel"

    /// `text` has the `redis-sentinel` or `rediss-sentinel` scheme (in any case).
    static func names(_ text: String) -> Bool {
        usesTLS(text) != nil
    }

    /// Whether `text`'s scheme is `rediss-sentinel`; nil when it is neither sentinel scheme.
    private static func usesTLS(_ text: String) -> Bool? {
        RedisURLParts.usesTLS(text, plain: scheme, tls: tlsScheme)
    }

    /// In the order given; asked in turn, the last that answered first.
    public var sentinels: [SentinelAddress]
    /// The name the sentinels monitor the master under (`sentinel monitor NAME …`).
    public var masterName: String
    /// The logical database on the master (`SELECT`), 0 by default.
    public var database: Int
    /// The master's ACL user; nil for the `default` user.
    public var user: String?
    /// The master's (and its replicas') password, never the sentinels'.
    public var password: Secret?
    /// `rediss-sentinel://`: TLS to the sentinels and to the master.
    public var usesTLS: Bool

    public init(sentinels: [SentinelAddress], masterName: String, database: Int = 0, user: String? = nil, password: Secret? = nil,
                usesTLS: Bool = false) {
        precondition(!sentinels.isEmpty, "a sentinel topology names a sentinel")
        self.sentinels = sentinels
        self.masterName = masterName
        self.database = database
        self.user = user
        self.password = password
        self.usesTLS = usesTLS
    }

    /// The master the sentinels named at `host`:`port`, logged in to with the URL's credentials.
    public func master(host: String, port: UInt16) -> RedisEndpoint {
        RedisEndpoint(host: host, port: port, database: database, user: user, password: password, usesTLS: usesTLS)
    }

    /// The URL with the password replaced by `…`.
    public var description: String {
        var userInfo = ""
        if password != nil { userInfo = (user ?? "") + ":…@" }
        let hosts = sentinels.map(\.description).joined(separator: ",")
        return "\(usesTLS ? Self.tlsScheme : Self.scheme)://\(userInfo)\(hosts)/\(masterName)/\(database)"
    }

    /// The longest master name accepted (Sentinel takes any; a config needs no more).
    static let maximumNameLength = 128

    /// Parses a `redis-sentinel://` or `rediss-sentinel://` URL. User and password may be
    /// percent-encoded, as in a redis:// URL; the master name is plain (letters, digits, `.`, `_`, `-`).
    public init(parsing text: String) throws(RedisURLError) {
        guard let separator = text.firstRange(of: "://"), let usesTLS = Self.usesTLS(text) else {
            throw RedisURLError("not a redis-sentinel:// URL (expected redis-sentinel://host:port[,host:port…]/mastername[/db])")
        }
        let parts = try RedisURLParts(afterScheme: text[separator.upperBound...], form: "redis-sentinel://")
        guard !parts.hosts.isEmpty else { throw RedisURLError("the URL names no sentinel (host:port[,host:port…])") }
        var sentinels: [SentinelAddress] = []
        for part in parts.hosts.split(separator: ",", omittingEmptySubsequences: false) {
            guard !part.isEmpty else { throw RedisURLError("an empty sentinel address between commas") }
            let (host, port) = try RedisEndpoint.parseHostPort(part, defaultPort: SentinelAddress.defaultPort)
            let sentinel = SentinelAddress(host: host, port: port)
            guard !sentinels.contains(sentinel) else { throw RedisURLError("a sentinel address is listed twice") }
            sentinels.append(sentinel)
        }
        // The path is "" or "/name" or "/name/db".
        let path = parts.path.dropFirst().split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let name = path.first, !name.isEmpty else {
            throw RedisURLError("the master's name is missing (redis-sentinel://host:port[,host:port…]/mastername[/db])")
        }
        guard name.utf8.count <= Self.maximumNameLength,
              name.utf8.allSatisfy({ ASCII.isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") })
        else {
            throw RedisURLError("the master's name must be 1 to \(Self.maximumNameLength) letters, digits, \".\", \"_\" or \"-\"")
        }
        let database = path.count > 1 ? try RedisEndpoint.parseDatabase(Substring("/" + path[1])) : 0
        self.init(sentinels: sentinels, masterName: String(name), database: database, user: parts.user, password: parts.password,
                  usesTLS: usesTLS)
    }
}
