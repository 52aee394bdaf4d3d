/// A file the configuration names whose content the relay loads into something long-lived (a
/// TLS certificate, key or CA bundle, the DPoP key, the token store's key), so a change to it is
/// applied by re-applying the configuration: `key` is the JSON path of the setting that names it
/// (`$.listenTls.certFile`, `$.routes[0].tls.clientKey`, `$.identities.orders.dpop.keyFile`), for
/// the log; `path` is the file, resolved against the config file's directory.
public struct WatchedFile: Sendable, Hashable, CustomStringConvertible {
    public var key: String
    public var path: String
    /// The file as it was just before the configuration read it (nil: missing, or not observed):
    /// the watcher's first baseline, so that a rotation between that read and the watcher's start
    /// is a change, not the baseline.
    public var atLoad: FileIdentity?

    public init(key: String, path: String, atLoad: FileIdentity? = nil) {
        self.key = key
        self.path = path
        self.atLoad = atLoad
    }

    /// `key path`, as the log's trigger names a change.
    public var description: String { "\(key) \(path)" }
}
