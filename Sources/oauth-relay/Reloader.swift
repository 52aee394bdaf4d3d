// Reloader: SIGHUP and the admin `POST /reload` re-read the configuration file.
//
// A valid file is put in force for requests that start from now on: the token service keeps
// every identity whose settings did not change (its token stays; no token request is made),
// and the workers take the new routes at their next request head. Requests under way finish
// with what they began with, and no connection closes. A file that does not load, or that
// changes what only a restart can (the listen addresses, the admin address, the worker
// count, metrics on or off), changes nothing: each error is logged with its JSON path.

import AdminAPI
import Config
import Logging
import OAuth2
import Proxy
import RelayMetrics
import SafeText
import Tokens
import HTTPFields

final class Reloader {
    private let configPath: String?
    /// The configuration in force.
    private var config: RelayConfig
    private let server: RelayServer
    private let tokens: TokenService
    private let metrics: RelayMetrics?
    private let logger: Logger

    init(configPath: String?, config: RelayConfig, server: RelayServer, tokens: TokenService, metrics: RelayMetrics?,
         logger: Logger) {
        self.configPath = configPath
        self.config = config
        self.server = server
        self.tokens = tokens
        self.metrics = metrics
        self.logger = logger
    }

    /// Reloads now (on the main thread). `trigger` names the cause in the log.
    func reload(trigger: String) -> ReloadOutcome {
        guard let configPath else {
            return reject(["the demo's configuration is built in; there is no file to reload"], trigger: trigger)
        }
        let loaded: LoadedConfig
        switch validateConfig(path: configPath) {
        case .failure(let errors): return reject(errors.lines, trigger: trigger)
        case .success(let valid): loaded = valid
        }
        let restartOnly = config.restartOnlyChanges(to: loaded.config)
        if !restartOnly.isEmpty { return reject(restartOnly, trigger: trigger) }

        let change = tokens.replace(identities: loaded.config.identities, tls: loaded.tls.identities,
                                    limits: tokenClientLimits(loaded.config))
        server.reload(ProxySettings(config: loaded.config, tokens: tokens, identities: change.set, tls: loaded.tls))
        config = loaded.config
        metrics?.reloadEnded(applied: true)
        logger.info("configuration reloaded", metadata: [
            "trigger": .string(trigger),
            "routes": .array(config.routes.map { .string(Self.describe($0)) }),
            "identities_kept": .array(change.kept.map { .string($0) }),
            "identities_started": .array(change.started.map { .string($0) }),
            "identities_removed": .array(change.removed.map { .string($0) }),
        ])
        func names(_ list: [String]) -> String { "[" + list.map(JSONText.quote).joined(separator: ",") + "]" }
        return .applied(summary: "{\"status\":\"applied\",\"routes\":\(config.routes.count),\"identities\":{"
                        + "\"kept\":\(names(change.kept)),\"started\":\(names(change.started)),\"removed\":\(names(change.removed))}}")
    }

    private func reject(_ errors: [String], trigger: String) -> ReloadOutcome {
        metrics?.reloadEnded(applied: false)
        logger.error("configuration not reloaded; nothing changed", metadata: [
            "trigger": .string(trigger),
            "file": .string(configPath ?? "-"),
            "errors": .array(errors.map { .string($0) }),
        ])
        return .rejected(errors: errors)
    }

    /// A route as the start-up and reload log lines list it.
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
