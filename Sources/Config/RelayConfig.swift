// The Config module: oauth-relay's configuration, decoded once at start-up into immutable
// values. It is a decoder: the types it fills belong to the modules that use them (route
// matching to Routing), and it holds no per-request logic.
//
// - `ConfigLoader` turns a JSON file (the contract is the team's CONFIG.md) into a
//   `RelayConfig`, or into `ConfigErrors` listing every problem in the file with its JSON
//   path, line and column. It resolves `${NAME}` from an environment passed in and reads
//   `…File` secrets; it does no other I/O and keeps no state.
// - Decoding is split by section of the file: `RelayConfigDecoding` reads the top level and
//   hands each section to its own decoder (`ListenerDecoding`, `StoreDecoding`, `LimitsDecoding`,
//   `IdentityDecoding` with `ClientAuthDecoding`, `DPoPDecoding` and `IdentityKeyChecks`,
//   `RouteDecoding` with `BrowserAccessDecoding`, and `TLSSettingsDecoding` and
//   `HeaderFieldsDecoding` for both routes and identities), then runs the checks across
//   sections (`RouteIdentityChecks`, `InteractiveIdentityChecks`). Routes with `"identity": "auto"`
//   get identities made for their upstreams (`AutoDecoding`, `AutoIdentities`) before those checks. All of them report into one
//   `DecodingContext`, which holds what they share: the environment, the base directory (the
//   files the config names are `ReferencedFiles`), the problems found and the readers of
//   single values.
//
// Secrets are `Secret` values whose descriptions are redacted, and no error message ever
// quotes a secret: a message names the key, the variable or the file instead.

import Endpoints
import OAuth2
import Routing
import WatchedFiles

/// The whole validated configuration. Build it with `ConfigLoader`; the memberwise
/// initializer (every parameter defaulted) is for tests and does not validate.
public struct RelayConfig: Sendable, Equatable {
    public var listen: HostPort
    /// Nil when the file sets `"admin": null` (no admin listener).
    public var admin: HostPort?
    /// A second, TLS listener (browsers speaking https to the relay); nil when not configured.
    public var listenTls: TLSListener?
    /// The forward-proxy listener (`HTTPS_PROXY`); nil when not configured.
    public var forward: ForwardListener?
    /// `hosts`: the Host names the listeners serve besides the loopback names (and the hosts the
    /// routes and redirect URIs name); nil when not set, which on a non-loopback listener means
    /// any name.
    public var hosts: [HostPattern]?
    /// 0 means one worker per core.
    public var workers: Int
    public var limits: Limits
    /// The configured identities, and those made for the routes with `"identity": "auto"`
    /// (`Identity.auto` set, named `auto-…` for their upstream).
    public var identities: [String: Identity]
    public var routes: [Route]
    /// The top-level `auto` object: what the identities of `"identity": "auto"` routes start from;
    /// nil when the file has none (`AutoDefaults()` then applies).
    public var auto: AutoDefaults?
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
    /// The files read into long-lived objects (TLS certificates, keys and CA bundles, DPoP key
    /// files, the store's key file) with the setting that names each, in document order: the
    /// relay watches them and re-applies the configuration when one changes. Filled by
    /// `ConfigLoader`; the credentials sent in token requests are not among them (the token
    /// thread reads those when it needs them).
    public var watchedFiles: [WatchedFile] = []

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
        // `forward`'s other keys, and the passwords `proxyAuthFile` holds, apply at a reload.
        check("$.forward.listen", forward?.address.description ?? "none", new.forward?.address.description ?? "none")
        check("$.admin", admin?.description ?? "null", new.admin?.description ?? "null")
        check("$.workers", String(workers), String(new.workers))
        check("$.metrics", String(metrics), String(new.metrics))
        check("$.store.path", store?.path ?? "none", new.store?.path ?? "none")
        // `store.key` may change: the new key writes, the previous ones still read (StoreKeys).
        let redis = (before: store?.redis, after: new.store?.redis)
        // The URL as its redacted description; a changed password is named, never shown.
        check("$.store.redis", redis.before?.topology.description ?? "none", redis.after?.topology.description ?? "none")
        // A password from `passwordFile` is read again at each connection: its change needs no restart.
        check("$.store.passwordFile", redis.before?.passwordFile ?? "none", redis.after?.passwordFile ?? "none")
        if let before = redis.before?.topology, let after = redis.after?.topology, redis.after?.passwordFile == nil,
           before.description == after.description, before.password != after.password {
            errors.append("$.store.redis: its password changed; this takes a restart, not a reload")
        }
        check("$.store.keyPrefix", redis.before?.keyPrefix ?? "none", redis.after?.keyPrefix ?? "none")
        check("$.store.timeoutMilliseconds", redis.before.map { String($0.timeoutMilliseconds) } ?? "none",
              redis.after.map { String($0.timeoutMilliseconds) } ?? "none")
        // Its files are read when the relay starts; a renewed certificate in place is no change here.
        func settings(_ tls: TLSSettings?) -> TLSSettings? {
            var tls = tls
            tls?.clientCertThumbprint = nil
            return tls
        }
        if redis.before?.topology.usesTLS == redis.after?.topology.usesTLS, settings(redis.before?.tls) != settings(redis.after?.tls) {
            errors.append("$.store.tls: changed; this takes a restart, not a reload")
        }
        return errors
    }
}
