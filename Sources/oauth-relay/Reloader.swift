// Reloader: SIGHUP and the admin `POST /reload` re-read the configuration file; a rotated
// certificate, key or CA file re-applies the configuration in force (CredentialFileWatcher).
//
// A valid configuration is put in force for requests that start from now on: the token service
// keeps every identity whose settings did not change (its token stays; no token request is made),
// and the workers take the new routes, upstream TLS settings and listener certificate at their
// next request head (their upstream pools are retired: idle connections close, busy ones after
// their exchange). Requests under way finish with what they began with, and no client connection
// closes. A file that does not load, or that changes what only a restart can (the listen
// addresses, the admin address, the worker count, metrics on or off, where the store is),
// changes nothing: each error is logged with its JSON path.
//
// A re-apply decodes the text the configuration in force was loaded from, kept in memory, not
// the config file: an operator's half-finished edit is never applied by a certificate renewal.
// The files it names are read anew, so a renewed certificate is a changed TLS configuration, a
// new DPoP key or client certificate a changed identity (a fresh token, bound to the new one), a
// new store key the key entries are written with (StoreKeys: the previous one still reads).

import AdminAPI
import Config
import Logging
import OAuth2
import Proxy
import RelayMetrics
import SafeText
import TokenStore
import Tokens
import HTTPFields
import FoundationEssentials

final class Reloader {
    private let source: ConfigSource?
    /// The configuration in force, and the text it was decoded from.
    private var config: RelayConfig
    private var text: ConfigText?
    private let server: RelayServer
    private let tokens: TokenService
    private let storage: TokenStorage
    private let metrics: RelayMetrics?
    private let logger: Logger
    /// Told of every configuration put in force (the file watcher follows its files).
    var onApplied: ((RelayConfig) -> Void)?

    init(source: ConfigSource?, config: RelayConfig, server: RelayServer, tokens: TokenService, storage: TokenStorage,
         metrics: RelayMetrics?, logger: Logger) {
        self.source = source
        self.config = config
        text = source?.text
        self.server = server
        self.tokens = tokens
        self.storage = storage
        self.metrics = metrics
        self.logger = logger
    }

    /// Reloads the configuration file now (on the main thread). `trigger` names the cause in the log.
    func reload(trigger: String) -> ReloadOutcome {
        guard let source else {
            return reject(["the demo's configuration is built in; there is no file to reload"], trigger: trigger)
        }
        let read: ConfigText
        do {
            read = try ConfigLoader.read(path: source.path)
        } catch {
            return reject(error.errors.map(\.description), trigger: trigger)
        }
        switch validateConfig(read, storeKeys: storage.keys?.snapshot) {
        case .failure(let errors): return reject(errors.lines, trigger: trigger)
        case .success(let loaded): return apply(loaded, trigger: trigger, logRejection: true)
        }
    }

    /// Re-applies the configuration in force, from its text, reading the files it names anew (on
    /// the main thread). A rejection is not logged here: the caller tells an outage once. Nor are
    /// the configuration's warnings: start-up or the reload that put the text in force told them.
    func reapply(trigger: String) -> ReloadOutcome {
        guard let text else { return .rejected(errors: ["the demo's configuration is built in; there is no file to re-read"]) }
        switch validateConfig(text, storeKeys: storage.keys?.snapshot, warnings: .silent) {
        case .failure(let errors):
            metrics?.reloadEnded(applied: false)
            return .rejected(errors: errors.lines)
        case .success(let loaded):
            return apply(loaded, trigger: trigger, logRejection: false)
        }
    }

    private func apply(_ loaded: LoadedConfig, trigger: String, logRejection: Bool) -> ReloadOutcome {
        let restartOnly = config.restartOnlyChanges(to: loaded.config)
        if !restartOnly.isEmpty {
            if logRejection { return reject(restartOnly, trigger: trigger) }
            metrics?.reloadEnded(applied: false)
            return .rejected(errors: restartOnly)
        }
        // Its CA certificate is polled too (observed before the CA is read).
        let inForce = ForwardCA.watchingCertificate(of: loaded.config, environment: ProcessInfo.processInfo.environment)
        let leaves: (any InterceptionLeaves)?
        do throws(ForwardCA.Failure) {
            leaves = try CALeaves.forReload(leaves: server.settings.interceptionLeaves, to: inForce, logger: logger)
        } catch {
            let errors = ["$.forward: cannot open the forward proxy CA: \(error)"]
            if logRejection { return reject(errors, trigger: trigger) }
            metrics?.reloadEnded(applied: false)
            return .rejected(errors: errors)
        }
        rotateStoreKey(to: loaded.config.store)
        let change = tokens.replace(identities: loaded.config.identities, tls: loaded.tls.identities,
                                    resourceTLS: resourceTLS(loaded.config, loaded.tls), limits: tokenClientLimits(loaded.config))
        server.reload(ProxySettings(config: inForce, tokens: tokens, identities: change.set, tls: loaded.tls,
                                    interceptionLeaves: leaves))
        config = inForce
        logSharedStepUpIdentities(inForce, logger: logger)
        text = loaded.text
        metrics?.reloadEnded(applied: true)
        logger.info("configuration reloaded", metadata: [
            "trigger": .string(trigger),
            "routes": LoggedList.metadata(config.routes, describe: Self.describe),
            "identities_kept": .array(change.kept.map { .string($0) }),
            "identities_started": .array(change.started.map { .string($0) }),
            "identities_removed": .array(change.removed.map { .string($0) }),
        ])
        onApplied?(config)
        func names(_ list: [String]) -> String { "[" + list.map(JSONText.quote).joined(separator: ",") + "]" }
        return .applied(summary: "{\"status\":\"applied\",\"routes\":\(config.routes.count),\"identities\":{"
                        + "\"kept\":\(names(change.kept)),\"started\":\(names(change.started)),\"removed\":\(names(change.removed))}}")
    }

    /// Puts a changed `store.key` in force before the identities are replaced (their next writes
    /// use it), and seals the directory's entries again under it, so that a restart with the new
    /// key alone still reads them. `validateConfig` checked the key's length.
    private func rotateStoreKey(to store: StoreConfig?) {
        guard let keys = storage.keys, let store, let key = try? TokenStore.key(base64: store.key.value), keys.rotate(to: key) else {
            return
        }
        guard let directory = storage.store else {
            return logger.info("token store key rotated; entries under the previous key are still read until they are written again")
        }
        do throws(StoreError) {
            let resealing = try directory.reseal()
            logger.info("token store key rotated; entries sealed again under the new key", metadata: [
                "store": .string(directory.path),
                "resealed": .array(resealing.resealed.map { .string($0) }),
                "busy": .array(resealing.busy.map { .string($0) }),
                "unreadable": .array(resealing.unreadable.map { .string($0) }),
            ])
        } catch {
            let message = "token store key rotated, but its entries could not all be sealed again; "
                + "they are read with the previous key until written again"
            logger.warning("\(message)", metadata: ["store": .string(directory.path), "error": .string("\(error)")])
        }
    }

    private func reject(_ errors: [String], trigger: String) -> ReloadOutcome {
        metrics?.reloadEnded(applied: false)
        logger.error("configuration not reloaded; nothing changed", metadata: [
            "trigger": .string(trigger),
            "file": .string(source?.path ?? "-"),
            "errors": .array(errors.map { .string($0) }),
        ])
        return .rejected(errors: errors)
    }

    /// A route as the start-up and reload log lines list it (LoggedList: the first 20 of a longer list).
    static func describe(_ route: Route) -> String {
        "\(route.name) \(route.match.host.map { "\($0)" } ?? "*")\(route.match.pathPrefix) -> \(route.upstream)"
            + (route.identity.map { " (identity \($0))" } ?? "")
    }

    /// An identity as the start-up log line lists it: no secret, no query.
    static func describe(_ identity: Identity) -> String {
        if identity.grant.isSelfSigned { return "\(identity.name) self-signed JWT (no token endpoint)" }
        let endpoint = identity.tokenUrl.map { "\($0.scheme.rawValue)://\($0.host):\($0.port)" } ?? "discovered from its issuer"
        return "\(identity.name) \(identity.grant.grantType) \(endpoint)"
    }
}
