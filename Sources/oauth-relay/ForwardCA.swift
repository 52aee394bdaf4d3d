import Config
import LocalCA
import Logging
import TokenStore
import WatchedFiles
#if canImport(Glibc)
import Glibc
#endif

/// The forward proxy's CA for a configuration: where it lives (`forward.caDirectory`, else
/// `forward-ca` in the token store's directory) and, at start, the CA loaded or issued with the
/// leaves it will mint.
enum ForwardCA {
    /// Why the CA of a configuration cannot be opened.
    enum Failure: Error, CustomStringConvertible {
        case noForwardListener
        case noDirectory
        case authority(directory: String, LocalCAError)

        var description: String {
            switch self {
            case .noForwardListener:
                "the configuration has no \"forward\" listener, so there is no forward proxy CA"
            case .noDirectory:
                "no directory for the forward proxy CA: set forward.caDirectory or store.path (or HOME or XDG_STATE_HOME)"
            case .authority(_, let error):
                "\(error)"
            }
        }
    }

    /// `forward.caDirectory`, else `<store.path or the default store's directory>/forward-ca`.
    static func directory(config: RelayConfig, environment: [String: String]) throws(Failure) -> String {
        guard let forward = config.forward else { throw .noForwardListener }
        if let directory = forward.caDirectory { return directory }
        guard let store = config.store?.path ?? DefaultStore.directory(environment: environment) else { throw .noDirectory }
        return store + "/forward-ca"
    }

    /// The CA of `config`, loaded or issued for its intercepted hosts, as of `now`.
    static func authority(config: RelayConfig, environment: [String: String], now: Int64) throws(Failure) -> (LocalCA, LocalCA.Change) {
        let directory = try directory(config: config, environment: environment)
        do throws(LocalCAError) {
            return try LocalCA.loadOrCreate(directory: directory, hosts: config.interceptedHosts, now: now)
        } catch {
            throw .authority(directory: directory, error)
        }
    }

    /// For `run` and a reload: the leaves the forward listener intercepts with, or nil when no
    /// route names a host (then it only tunnels, and no CA is made). The CA's files are read
    /// every time: `current`'s leaves are kept only while the CA there is the one they come from
    /// (so a CA another `oauth-relay ca` replaced is put in force, not the old one's leaves).
    /// A CA made now, or made again because the hosts changed, is logged at notice level: clients
    /// must trust it (`oauth-relay ca`).
    static func open(config: RelayConfig, environment: [String: String], logger: Logger,
                     keeping current: InterceptionCertificates? = nil) throws(Failure) -> InterceptionCertificates? {
        guard config.forward != nil else { throw .noForwardListener }
        guard !config.interceptedHosts.isEmpty else { return nil }
        let (authority, change) = try authority(config: config, environment: environment, now: Int64(time(nil)))
        if let current, change == .loaded, current.authority.fingerprint == authority.fingerprint,
           current.authority.hosts == authority.hosts {
            return current
        }
        let metadata: Logger.Metadata = [
            "certificate": .string(authority.certificatePath), "fingerprint": .string(authority.fingerprint),
            "hosts": .string(authority.hosts.map(\.description).joined(separator: " ")),
        ]
        switch change {
        case .loaded:
            logger.info("forward proxy CA loaded", metadata: metadata)
        case .created:
            logger.notice("forward proxy CA created; clients must trust it: oauth-relay ca", metadata: metadata)
        case .reissued(let previous):
            logger.notice("forward proxy CA issued again for the routes' hosts; re-trust the CA: oauth-relay ca",
                          metadata: metadata.merging(["previousFingerprint": .string(previous)]) { new, _ in new })
        }
        return InterceptionCertificates(authority: authority, mintingFailed: { host, reason in
            logger.error("forward proxy cannot mint a leaf; the CONNECT is not intercepted",
                         metadata: ["host": .string(host), "error": .string(reason)])
        })
    }

    /// `config` with its CA certificate (`ca.pem`) among the files the relay polls, as it is now
    /// (call it before the CA is read): a CA replaced there (`oauth-relay ca` with another
    /// configuration) re-applies the configuration, which puts that CA in force.
    static func watchingCertificate(of config: RelayConfig, environment: [String: String]) -> RelayConfig {
        // The directory first: without a forward listener there is none, and the hosts (every
        // route's, hashed and sorted: 4% of a reload of 10,000 routes) are not needed.
        guard let directory = try? directory(config: config, environment: environment), !config.interceptedHosts.isEmpty else {
            return config
        }
        var watching = config
        let path = LocalCA.certificatePath(inDirectory: directory)
        watching.watchedFiles.append(WatchedFile(key: "$.forward.caDirectory", path: path, atLoad: FileIdentity.observe(path: path)))
        return watching
    }
}
