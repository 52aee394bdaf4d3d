// The Config module: oauth-relay's configuration, decoded once at start-up into immutable
// values. It is a decoder: the types it fills belong to the modules that use them (route
// matching to Routing), and it holds no per-request logic.
//
// - `ConfigLoader` turns a JSON file (the contract is the team's CONFIG.md) into a
//   `RelayConfig`, or into `ConfigErrors` listing every problem in the file with its JSON
//   path, line and column. It resolves `${NAME}` from an environment passed in and reads
//   `…File` secrets; it does no other I/O and keeps no state.
//
// Secrets are `Secret` values whose descriptions are redacted, and no error message ever
// quotes a secret: a message names the key, the variable or the file instead.

import Endpoints
import HTTPFields
import JSON
import OAuth2
import Routing

/// The whole validated configuration. Build it with `ConfigLoader`; the memberwise
/// initializer (every parameter defaulted) is for tests and does not validate.
public struct RelayConfig: Sendable, Equatable {
    public var listen: HostPort
    /// Nil when the file sets `"admin": null` (no admin listener).
    public var admin: HostPort?
    /// A second, TLS listener (browsers speaking https to the relay); nil when not configured.
    public var listenTls: TLSListener?
    /// `hosts`: the Host names the listeners serve besides the loopback names (and the hosts the
    /// routes and redirect URIs name); nil when not set, which on a non-loopback listener means
    /// any name.
    public var hosts: [HostPattern]?
    /// 0 means one worker per core.
    public var workers: Int
    public var limits: Limits
    public var identities: [String: Identity]
    public var routes: [Route]
    /// Log one line per request.
    public var accessLog: Bool
    /// Count requests, upstream errors, connections and token requests for `GET /metrics` on
    /// the admin listener (nothing is counted without one).
    public var metrics: Bool
    /// When false, X-Forwarded-For/-Proto/-Host sent by a client are replaced, not appended to.
    public var trustForwardedHeaders: Bool
    /// The pseudonym the relay adds to the Via header (`1.1 oauth-relay`).
    public var via: String
    /// Where tokens are kept across restarts; nil keeps them in memory only (but see
    /// `defaultStoreAllowed`).
    public var store: StoreConfig?
    /// Without `store`, identities a person logs in to may use the default store in the user's
    /// state directory; `"store": null` says no.
    public var defaultStoreAllowed = true

    public static let defaultListen = HostPort(host: "127.0.0.1", port: 8180)
    public static let defaultAdmin = HostPort(host: "127.0.0.1", port: 9180)

    public init(listen: HostPort = Self.defaultListen, admin: HostPort? = Self.defaultAdmin, workers: Int = 0,
                limits: Limits = Limits(), identities: [String: Identity] = [:], routes: [Route] = [],
                accessLog: Bool = true, metrics: Bool = true, trustForwardedHeaders: Bool = false,
                via: String = "oauth-relay", store: StoreConfig? = nil) {
        self.listen = listen
        self.admin = admin
        self.workers = workers
        self.limits = limits
        self.identities = identities
        self.routes = routes
        self.accessLog = accessLog
        self.metrics = metrics
        self.trustForwardedHeaders = trustForwardedHeaders
        self.via = via
        self.store = store
    }
}

/// Resource limits and timeouts. Durations are in seconds.
public struct Limits: Sendable, Equatable {
    /// Request line plus headers, in bytes (431 beyond).
    public var maxHeaderBytes: Int
    public var maxHeaderCount: Int
    /// An upstream response's status line plus headers, in bytes (502 beyond).
    public var maxResponseHeaderBytes: Int
    /// Time a client has to send the complete request head.
    public var headerTimeoutSeconds: Double
    /// Time a kept-alive client connection may sit idle.
    public var idleTimeoutSeconds: Double
    public var upstreamConnectTimeoutSeconds: Double
    /// Time from the request sent to the upstream's response head, and then between reads of
    /// the response (any byte, and any request body byte sent, starts it again).
    public var upstreamResponseTimeoutSeconds: Double
    /// Time from the whole request sent to the whole response received, however steadily it
    /// comes; nil (the default) sets no such bound.
    public var upstreamResponseTotalSeconds: Double?
    /// On SIGTERM, time in-flight requests get to finish.
    public var shutdownGraceSeconds: Double
    /// How long resolved upstream addresses are reused.
    public var dnsCacheSeconds: Double
    /// Idle connections kept per upstream per worker; 0 disables pooling.
    public var maxIdleUpstreamConnections: Int
    /// Client connections of the process; more are closed when accepted. 0: derived from the
    /// file-descriptor limit at start.
    public var maxConnections: Int
    /// Time a request may wait for its identity's token before it is answered 503.
    public var tokenWaitSeconds: Double
    /// Time a request body has, from its head, to arrive; every byte received extends it by
    /// 1/`requestBodyMinBytesPerSecond` s, so a body slower than that rate on average is cut off
    /// (like Apache's mod_reqtimeout), while a fast large upload never is.
    public var requestBodyTimeoutSeconds: Double
    public var requestBodyMinBytesPerSecond: Int
    /// Connections each worker opens to one upstream (`host:port`), busy, idle or connecting;
    /// 0 (the default) sets no limit. An exchange that finds them all busy queues for one.
    public var maxUpstreamConnections: Int
    /// Time an exchange may queue for an upstream connection before it is answered 503.
    public var upstreamQueueTimeoutSeconds: Double

    public init(maxHeaderBytes: Int = 65536, maxHeaderCount: Int = 100, maxResponseHeaderBytes: Int = 65536,
                headerTimeoutSeconds: Double = 30,
                idleTimeoutSeconds: Double = 60, upstreamConnectTimeoutSeconds: Double = 5,
                upstreamResponseTimeoutSeconds: Double = 60, shutdownGraceSeconds: Double = 30,
                dnsCacheSeconds: Double = 30, maxIdleUpstreamConnections: Int = 128, maxConnections: Int = 0, tokenWaitSeconds: Double = 30,
                requestBodyTimeoutSeconds: Double = 30, requestBodyMinBytesPerSecond: Int = 500,
                upstreamResponseTotalSeconds: Double? = nil, maxUpstreamConnections: Int = 0,
                upstreamQueueTimeoutSeconds: Double = 10) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxResponseHeaderBytes = maxResponseHeaderBytes
        self.headerTimeoutSeconds = headerTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.upstreamConnectTimeoutSeconds = upstreamConnectTimeoutSeconds
        self.upstreamResponseTimeoutSeconds = upstreamResponseTimeoutSeconds
        self.shutdownGraceSeconds = shutdownGraceSeconds
        self.dnsCacheSeconds = dnsCacheSeconds
        self.maxIdleUpstreamConnections = maxIdleUpstreamConnections
        self.maxConnections = maxConnections
        self.tokenWaitSeconds = tokenWaitSeconds
        self.requestBodyTimeoutSeconds = requestBodyTimeoutSeconds
        self.requestBodyMinBytesPerSecond = requestBodyMinBytesPerSecond
        self.upstreamResponseTotalSeconds = upstreamResponseTotalSeconds
        self.maxUpstreamConnections = maxUpstreamConnections
        self.upstreamQueueTimeoutSeconds = upstreamQueueTimeoutSeconds
    }
}

extension DecodingContext {
    static let topLevelKeys = [
        "$schema", "listen", "admin", "workers", "limits", "identities", "routes", "accessLog", "metrics",
        "trustForwardedHeaders", "via", "listenTls", "store", "hosts",
    ]

    func decodeRelayConfig(_ root: JSONNode) -> RelayConfig? {
        guard let object = ObjectReader(root, at: .root, knownKeys: Self.topLevelKeys, in: self) else { return nil }
        var config = RelayConfig()
        // Where editors find the schema (`"$schema": "oauth-relay.schema.json"`); the relay has no
        // use for it. Any string, taken as written: not even `${…}` is resolved in it.
        object.field("$schema").map(checkIgnoredString)
        config.listen = object.parsed("listen", HostPort.parse) ?? config.listen
        config.listenTls = object.field("listenTls").flatMap(decodeTLSListener)
        config.hosts = object.field("hosts").flatMap(decodeHostNames)
        if let field = object.field("store"), case .null = field.value.kind {
            config.defaultStoreAllowed = false
        } else {
            config.store = object.field("store").flatMap(decodeStore)
        }
        if let field = object.field("admin") {
            if case .null = field.value.kind {
                config.admin = nil
            } else {
                config.admin = parsed(field, HostPort.parse) ?? config.admin
            }
        }
        config.workers = object.field("workers").flatMap {
            integer($0, in: 0...4096, rangeDescription: "0 (one per core) or a worker count up to 4096")
        } ?? config.workers
        config.limits = object.field("limits").flatMap(decodeLimits) ?? config.limits
        var identityNames: [String] = []
        if let field = object.field("identities") {
            config.identities = decodeIdentities(field)
            if case .object(let members) = field.value.kind {
                identityNames = members.map(\.key)
            }
        }
        if let field = object.field("routes") {
            config.routes = decodeRoutes(field, identityNames: identityNames)
            checkRouteIdentities(field, routes: config.routes, identities: config.identities)
        }
        if let field = object.field("identities") {
            checkInteractiveIdentities(&config, identitiesPath: field.path, offset: field.value.offset)
        }
        config.accessLog = object.bool("accessLog") ?? config.accessLog
        config.metrics = object.bool("metrics") ?? config.metrics
        config.trustForwardedHeaders = object.bool("trustForwardedHeaders") ?? config.trustForwardedHeaders
        config.via = object.parsed("via") { via throws(InvalidValue) in
            guard ASCII.isToken(via) else {
                throw InvalidValue("must be a single token without spaces (letters, digits, -, ., _ …), got \"\(via)\"")
            }
            return via
        } ?? config.via
        return config
    }

    /// A string the relay does not read, such as `$schema`: only its type is checked.
    private func checkIgnoredString(_ field: Field) {
        guard case .string = field.value.kind else { return typeMismatch(field, expected: "a string") }
    }

    private func decodeLimits(_ field: Field) -> Limits? {
        let secondsKeys: [(String, WritableKeyPath<Limits, Double>)] = [
            ("headerTimeoutSeconds", \.headerTimeoutSeconds),
            ("idleTimeoutSeconds", \.idleTimeoutSeconds),
            ("upstreamConnectTimeoutSeconds", \.upstreamConnectTimeoutSeconds),
            ("upstreamResponseTimeoutSeconds", \.upstreamResponseTimeoutSeconds),
            ("shutdownGraceSeconds", \.shutdownGraceSeconds),
            ("dnsCacheSeconds", \.dnsCacheSeconds),
            ("tokenWaitSeconds", \.tokenWaitSeconds),
            ("requestBodyTimeoutSeconds", \.requestBodyTimeoutSeconds),
            ("upstreamQueueTimeoutSeconds", \.upstreamQueueTimeoutSeconds),
        ]
        let countKeys: [(String, WritableKeyPath<Limits, Int>, ClosedRange<Int>, String)] = [
            ("maxHeaderBytes", \.maxHeaderBytes, 1...(1 << 24), "a positive number of bytes"),
            ("maxHeaderCount", \.maxHeaderCount, 1...100_000, "a positive count"),
            ("maxResponseHeaderBytes", \.maxResponseHeaderBytes, 1...(1 << 24), "a positive number of bytes"),
            ("maxIdleUpstreamConnections", \.maxIdleUpstreamConnections, 0...1_000_000, "a count (0 disables pooling)"),
            ("maxConnections", \.maxConnections, 0...10_000_000, "a count (0: from the file-descriptor limit)"),
            ("maxUpstreamConnections", \.maxUpstreamConnections, 0...1_000_000, "a count (0: no limit)"),
            ("requestBodyMinBytesPerSecond", \.requestBodyMinBytesPerSecond, 1...(1 << 30), "a positive number of bytes per second"),
        ]
        // Bounds that are off unless set.
        let optionalSecondsKeys: [(String, WritableKeyPath<Limits, Double?>)] = [
            ("upstreamResponseTotalSeconds", \.upstreamResponseTotalSeconds),
        ]
        let knownKeys = secondsKeys.map(\.0) + optionalSecondsKeys.map(\.0) + countKeys.map(\.0)
        guard let object = ObjectReader(field, knownKeys: knownKeys, in: self) else { return nil }
        var limits = Limits()
        for (key, property) in secondsKeys {
            if let value = object.seconds(key) { limits[keyPath: property] = value }
        }
        for (key, property) in optionalSecondsKeys {
            if let value = object.seconds(key) { limits[keyPath: property] = value }
        }
        for (key, property, range, rangeDescription) in countKeys {
            if let value = object.field(key).flatMap({ integer($0, in: range, rangeDescription: rangeDescription) }) {
                limits[keyPath: property] = value
            }
        }
        return limits
    }
}

/// `listenTls`: where the relay accepts TLS connections, and with which certificate.
public struct TLSListener: Sendable, Equatable {
    public var address: HostPort
    public var certFile: String
    public var keyFile: String
    /// Clients must present a certificate from this CA (mutual TLS); nil asks for none.
    public var clientCaFile: String?
    /// Host names this listener serves besides the top-level `hosts`.
    public var hosts: [HostPattern]?

    public init(address: HostPort, certFile: String, keyFile: String, clientCaFile: String? = nil, hosts: [HostPattern]? = nil) {
        self.address = address
        self.certFile = certFile
        self.keyFile = keyFile
        self.clientCaFile = clientCaFile
        self.hosts = hosts
    }

    static let knownKeys = ["address", "certFile", "keyFile", "clientCaFile", "hosts"]
}

extension DecodingContext {
    func decodeTLSListener(_ field: Field) -> TLSListener? {
        guard let object = ObjectReader(field, knownKeys: TLSListener.knownKeys, in: self) else { return nil }
        let address = object.parsed("address", HostPort.parse)
        let certFile = object.field("certFile").flatMap(existingFile)
        let keyFile = object.field("keyFile").flatMap(existingFile)
        let clientCaFile = object.field("clientCaFile").flatMap(existingFile)
        for key in ["address", "certFile", "keyFile"] where object.field(key) == nil {
            report("required", at: object.path.key(key), offset: object.lastOffset)
        }
        let hosts = object.field("hosts").flatMap(decodeHostNames)
        guard let address, let certFile, let keyFile else { return nil }
        return TLSListener(address: address, certFile: certFile, keyFile: keyFile, clientCaFile: clientCaFile, hosts: hosts)
    }
}

extension RelayConfig {
    /// What a reload cannot apply, because the running listeners and threads were made from it:
    /// one error per changed key, with its JSON path. Empty when `new` can be reloaded.
    public func restartOnlyChanges(to new: RelayConfig) -> [String] {
        var errors: [String] = []
        func check(_ path: String, _ before: String, _ after: String) {
            if before != after {
                errors.append("\(path): changed from \(before) to \(after); this takes a restart, not a reload")
            }
        }
        check("$.listen", listen.description, new.listen.description)
        check("$.listenTls.address", listenTls?.address.description ?? "none", new.listenTls?.address.description ?? "none")
        check("$.admin", admin?.description ?? "null", new.admin?.description ?? "null")
        check("$.workers", String(workers), String(new.workers))
        check("$.metrics", String(metrics), String(new.metrics))
        check("$.store.path", store?.path ?? "none", new.store?.path ?? "none")
        if let before = store?.key, let after = new.store?.key, before != after {
            // Never the key itself, nor its redacted tail.
            errors.append("$.store.key: changed; this takes a restart, not a reload")
        }
        let redis = (before: store?.redis, after: new.store?.redis)
        // The URL as its redacted description; a changed password is named, never shown.
        check("$.store.redis", redis.before?.endpoint.description ?? "none", redis.after?.endpoint.description ?? "none")
        if let before = redis.before?.endpoint, let after = redis.after?.endpoint,
           before.description == after.description, before.password != after.password {
            errors.append("$.store.redis: its password changed; this takes a restart, not a reload")
        }
        check("$.store.keyPrefix", redis.before?.keyPrefix ?? "none", redis.after?.keyPrefix ?? "none")
        check("$.store.timeoutMilliseconds", redis.before.map { String($0.timeoutMilliseconds) } ?? "none",
              redis.after.map { String($0.timeoutMilliseconds) } ?? "none")
        return errors
    }
}
