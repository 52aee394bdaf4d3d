import AdminAPI
import ArgumentParser
import BrowserSafety
import Config
import EventLoop
import FoundationEssentials
import Logging
import HTTPClient
import OAuth2
import Proxy
import RelayMetrics
import TLS
import Tokens
import TokenStore

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Serve with the given configuration file.")

    @Option(name: .long, help: "The JSON configuration file.")
    var config: String

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        let loaded = try loadConfig(path: config)
        try serve(loaded.config, tls: loaded.tls, source: ConfigSource(path: config, text: loaded.text),
                  logger: Logger(label: "oauth-relay"))
    }
}

/// A validated config, the TLS configurations it needs (certificates and keys loaded), and the
/// text it was decoded from.
struct LoadedConfig {
    var config: RelayConfig
    var tls: ClientTLS
    var text: ConfigText
}

/// Where the configuration in force came from: the file a reload reads, and the text the files
/// it names are re-read with when one of them rotates.
struct ConfigSource {
    var path: String
    var text: ConfigText
}

/// Loads and validates a config file: the config, or every error with its JSON path. Warnings
/// (verification switched off, plain-http token endpoints allowed, credential files holding an
/// expired JWT, routes the forward proxy does not intercept) are logged and printed.
func validateConfig(path: String) -> Result<LoadedConfig, ConfigErrorLines> {
    do {
        return validateConfig(try ConfigLoader.read(path: path))
    } catch {
        return .failure(ConfigErrorLines(lines: error.errors.map(\.description)))
    }
}

/// Validates a config's text, reading the files it names. `storeKeys`: the keys a running
/// relay's token store reads with (a reload's), which its entries may have been written with.
/// `warnings`: whether to tell the warnings (not for a re-apply of the text in force after a file
/// changed: start-up, or the reload that put it in force, told them, and a poll must not repeat them).
func validateConfig(_ text: ConfigText, storeKeys: StoreKeyRing? = nil,
                    warnings: ConfigWarnings = .told) -> Result<LoadedConfig, ConfigErrorLines> {
    let told = warnings == .told
    let config: RelayConfig
    do {
        config = try ConfigLoader.decode(text, environment: ProcessInfo.processInfo.environment)
    } catch {
        return .failure(ConfigErrorLines(lines: error.errors.map(\.description)))
    }
    var errors: [String] = []
    // Plain-http token endpoints: loopback only, unless the identity says otherwise.
    for name in config.identities.keys.sorted() {
        do throws(InsecureTokenURL) {
            if case .insecureHTTPAllowed = try TokenEndpointSecurity.check(config.identities[name]!), told {
                Logger(label: "oauth-relay").warning("plain-http token endpoint allowed by allowInsecureTokenUrl",
                                                     metadata: ["identity": .string(name)])
            }
        } catch {
            errors.append("\(error)")  // Its description starts with its path.
        }
    }
    if let store = config.store, let path = store.path {
        do throws(StoreError) {
            try TokenStore.check(path: path, key: TokenStore.key(base64: store.key.value), previousKeys: storeKeys?.all ?? [])
        } catch {
            errors.append("$.store: \(error)")
        }
    }
    let (tls, tlsErrors, tlsWarnings) = ClientTLS.build(for: config)
    errors += tlsErrors
    for warning in tlsWarnings where told {
        FileHandleOutput.standardError("oauth-relay: WARNING: \(warning)\n")
        Logger(label: "oauth-relay").warning("TLS verification disabled", metadata: ["setting": .string(warning)])
    }
    for warning in config.hostCheckWarnings where told {
        FileHandleOutput.standardError("oauth-relay: WARNING: \(warning)\n")
        Logger(label: "oauth-relay").warning("listener serves any Host name", metadata: ["setting": .string(warning)])
    }
    for warning in config.expiredCredentialWarnings(at: Date().timeIntervalSince1970) where told {
        FileHandleOutput.standardError("oauth-relay: WARNING: \(warning)\n")
        Logger(label: "oauth-relay").warning("credential file holds an expired JWT", metadata: ["setting": .string(warning)])
    }
    for warning in config.assertionWithoutClientIdWarnings where told {
        FileHandleOutput.standardError("oauth-relay: WARNING: \(warning)\n")
        Logger(label: "oauth-relay").warning("client assertion sent without client_id", metadata: ["setting": .string(warning)])
    }
    for warning in config.forwardProxyWarnings where told {
        FileHandleOutput.standardError("oauth-relay: WARNING: \(warning)\n")
        Logger(label: "oauth-relay").warning("forward proxy leaves routes out", metadata: ["setting": .string(warning)])
    }
    for warning in config.unusedAutoWarnings where told {
        FileHandleOutput.standardError("oauth-relay: WARNING: \(warning)\n")
        Logger(label: "oauth-relay").warning("auto settings unused", metadata: ["setting": .string(warning)])
    }
    if !errors.isEmpty { return .failure(ConfigErrorLines(lines: errors)) }
    return .success(LoadedConfig(config: config, tls: tls, text: text))
}

/// Whether `validateConfig` tells the configuration's warnings (stderr and the log).
enum ConfigWarnings {
    /// At start-up, SIGHUP and `POST /reload`: the operator loads a configuration.
    case told
    /// A re-apply after a watched file changed: the text in force, whose warnings were told.
    case silent
}

/// Why a config file did not load: one line per error, each starting with its JSON path.
struct ConfigErrorLines: Error {
    var lines: [String]
}

/// Loads and validates a config file; on errors prints each with its JSON path and fails.
func loadConfig(path: String) throws -> LoadedConfig {
    switch validateConfig(path: path) {
    case .success(let loaded):
        return loaded
    case .failure(let errors):
        FileHandleOutput.standardError("oauth-relay: invalid configuration \(path):\n" + errors.lines.map { "\($0)\n" }.joined())
        throw ExitCode(1)
    }
}

/// Starts the token thread (also without identities: a reload may add some) on `storage`
/// (by default what `config` names).
/// `registersClients`: false for a command that must not register an `auto` identity's client
/// (an offline logout): its resolution stops where it would register.
func startTokenService(_ config: RelayConfig, tls: ClientTLS, logger: Logger, observer: (any TokenObserver)? = nil,
                       storage: TokenStorage? = nil, registersClients: Bool = true) throws -> TokenService {
    var storage = try storage ?? TokenStorage.open(config, logger: logger)
    if storage.shared != nil {
        // The connections write with write(2): a Redis closing its side must not end the process.
        SignalWatcher.ignoreBrokenPipe()
        storage.shared?.tls = tls.redis
    }
    return try TokenService.start(identities: config.identities, tls: tls.identities, resourceTLS: resourceTLS(config, tls),
                                  limits: tokenClientLimits(config), logger: logger, observer: observer, store: storage.store,
                                  sharedStore: storage.shared, registersClients: registersClients)
}

/// The TLS configuration each `auto` identity's requests to its https resource use (its
/// metadata, its challenge): that of the route whose upstream it is, built with the route's `tls`.
func resourceTLS(_ config: RelayConfig, _ tls: ClientTLS) -> [String: TLSConfiguration] {
    var byName: [String: TLSConfiguration] = [:]
    for (name, identity) in config.identities {
        guard let resource = identity.auto?.resource, resource.scheme == .https else { continue }
        let serving = config.routes.indices.filter { position in
            let upstream = config.routes[position].upstream
            return upstream.scheme == resource.scheme && upstream.host == resource.host
                && upstream.port == resource.port
        }
        let position = serving.first { config.routes[$0].identity == name } ?? serving.first
        byName[name] = position.flatMap { tls.routes[$0] }
    }
    return byName
}

/// Token requests time out like upstream exchanges, but after 30 s at most, and as total
/// deadlines: connecting within `upstreamConnectTimeoutSeconds`, then the whole answer within
/// `min(upstreamResponseTimeoutSeconds, 30)` however it trickles in.
func tokenClientLimits(_ config: RelayConfig) -> HTTPClientLimits {
    HTTPClientLimits(connectTimeoutMilliseconds: UInt64(config.limits.upstreamConnectTimeoutSeconds * 1000),
                     responseTimeoutMilliseconds: UInt64(min(config.limits.upstreamResponseTimeoutSeconds, 30) * 1000))
}

/// Runs the relay until SIGTERM or SIGINT, then drains and returns. SIGHUP and the admin
/// `POST /reload` re-read `source`'s file (the demo has none: its config is built in), and a
/// change to a certificate, key or CA file the configuration in force names re-applies its text
/// (CredentialFileWatcher).
/// `whileServing` runs once the listeners are bound (the demo prints its instructions there).
/// `until`, asked four times a second, stops the relay like a SIGTERM once it says so (`login`
/// without a running relay serves until the person has logged in).
func serve(_ loadedConfig: RelayConfig, tls: ClientTLS = ClientTLS(), source: ConfigSource? = nil, logger: Logger,
           whileServing: (RelayServer) -> Void = { _ in }, until: ((TokenService) -> Bool)? = nil) throws {
    SignalWatcher.ignoreBrokenPipe()
    // The forward proxy's CA certificate is polled with the configuration's files (observed
    // before the CA is read).
    let config = ForwardCA.watchingCertificate(of: loadedConfig, environment: ProcessInfo.processInfo.environment)
    // The signal watchers exist before any worker binds: a SIGTERM that arrives while the
    // listeners start is queued by libuv and handled once the loop runs, instead of killing
    // a process that already accepts connections.
    let loop = try EventLoop()
    final class Running {
        var server: RelayServer?
        var reloader: Reloader?
        var watchers: [SignalWatcher] = []
        var admin: AdminServer?
        var untilTimer: LoopTimer?
        var fileWatcher: CredentialFileWatcher?
    }
    let running = Running()
    let stop: (Int32) -> Void = { signal in
        logger.info("shutting down", metadata: ["signal": .stringConvertible(signal)])
        running.server?.stop()
        running.admin?.close()
        running.untilTimer?.close()
        running.untilTimer = nil
        running.fileWatcher?.close()
        running.fileWatcher = nil
        // With the watchers gone a second signal has its default effect: it ends the process.
        for watcher in running.watchers { watcher.close() }
    }
    running.watchers.append(SignalWatcher(loop: loop, signal: SignalWatcher.terminate, callback: stop))
    running.watchers.append(SignalWatcher(loop: loop, signal: SignalWatcher.interrupt, callback: stop))
    running.watchers.append(SignalWatcher(loop: loop, signal: SignalWatcher.hangUp) { _ in
        _ = running.reloader?.reload(trigger: "SIGHUP")
    })

    // The forward listener's CA (loaded, or made for the routes' hosts) and its leaves, before
    // the token service starts: a CA that cannot be opened stops the relay at once.
    var leaves: CALeaves?
    if config.forward != nil {
        do throws(ForwardCA.Failure) {
            leaves = try ForwardCA.open(config: config, environment: ProcessInfo.processInfo.environment, logger: logger).map(CALeaves.init)
        } catch {
            logger.critical("cannot open the forward proxy CA", metadata: ["error": "\(error)"])
            for watcher in running.watchers { watcher.close() }
            try? loop.close()
            throw ExitCode(1)
        }
    }
    // Metrics exist with the admin listener that serves them; without it nothing is counted.
    let metrics = config.admin != nil && config.metrics ? RelayMetrics() : nil
    let storage = try TokenStorage.open(config, logger: logger)
    let tokens = try startTokenService(config, tls: tls, logger: logger, observer: metrics.map(TokenMetrics.init), storage: storage)
    defer { tokens.stop() }
    let settings = ProxySettings(config: config, tokens: tokens, tls: tls, interceptionLeaves: leaves)
    logSharedStepUpIdentities(config, logger: logger)
    let workers = config.workers == 0 ? WorkerThread.processorCount : config.workers
    do {
        running.server = try RelayServer.start(settings: settings, workers: workers, logger: logger, metrics: metrics)
    } catch {
        logger.critical("cannot start", metadata: ["error": "\(error)"])
        for watcher in running.watchers { watcher.close() }
        try? loop.close()
        throw ExitCode(1)
    }
    let server = running.server!
    let reloader = Reloader(source: source, config: config, server: server, tokens: tokens, storage: storage, metrics: metrics,
                            logger: logger)
    running.reloader = reloader
    if source != nil {
        let watcher = CredentialFileWatcher(loop: loop, config: config, logger: logger) { trigger in
            reloader.reapply(trigger: trigger)
        }
        running.fileWatcher = watcher
        reloader.onApplied = { [weak watcher] in watcher?.follow($0) }
    }
    logger.info("listening", metadata: [
        "version": .string(RelayBuild.current.version),
        "commit": .string(RelayBuild.current.commit),
        "listen": .string(server.boundAddress),
        "listen_tls": .string(server.boundTLSAddress ?? "-"),
        "forward": .string(server.boundForwardAddress ?? "-"),
        "workers": .stringConvertible(workers),
        "routes": LoggedList.metadata(config.routes, describe: Reloader.describe),
        "identities": LoggedList.metadata(config.identities.keys.sorted()) { Reloader.describe(config.identities[$0]!) },
    ])
    // The admin listener, on this thread's loop: health, readiness, metrics, identities, reload.
    if let adminAddress = config.admin {
        do throws(StartFailure) {
            let admin = try startAdmin(on: loop, at: adminAddress, tokens: tokens, metrics: metrics,
                                       storeTimeoutMilliseconds: config.store?.redis?.timeoutMilliseconds, hosts: { server.settings.adminHosts }) {
                reloader.reload(trigger: "POST /reload")
            }
            running.admin = admin
            logger.info("admin listening", metadata: ["admin": .string(admin.boundAddress?.description ?? adminAddress.description)])
        } catch {
            logger.critical("cannot start", metadata: ["error": .string(error.reason)])
            server.stop()
            server.wait()
            throw ExitCode(1)
        }
    }
    if let until {
        running.untilTimer = LoopTimer(loop: loop) { if until(tokens) { stop(0) } }
        running.untilTimer?.start(afterMilliseconds: 250, repeatMilliseconds: 250)
    }
    whileServing(server)
    loop.run()
    server.wait()
    try? loop.close()
    logger.info("stopped")
}

/// Why the relay could not start, as logged.
private struct StartFailure: Error {
    let reason: String
}

private func startAdmin(on loop: EventLoop, at hostPort: HostPort, tokens: TokenService, metrics: RelayMetrics?,
                        storeTimeoutMilliseconds: Int?, hosts: @escaping () -> ListenerHosts, reload: @escaping () -> ReloadOutcome) throws(StartFailure) -> AdminServer {
    guard let address = SocketAddress(binding: hostPort) else {
        throw StartFailure(reason: "admin address \(hostPort) is not an IP address")
    }
    do {
        return try AdminServer(loop: loop, address: address, tokens: tokens, metrics: metrics, build: .current,
                               storeTimeoutMilliseconds: storeTimeoutMilliseconds, hosts: hosts, reload: reload)
    } catch {
        throw StartFailure(reason: "cannot listen on \(hostPort) (admin): \(error.message)")
    }
}

/// Counts token requests and exports token expiry (the token service's observer).
struct TokenMetrics: TokenObserver {
    let metrics: RelayMetrics

    init(_ metrics: RelayMetrics) { self.metrics = metrics }

    func tokenRequestEnded(identity: String, outcome: TokenRequestOutcome) {
        metrics.tokenRequestEnded(identity: identity, outcome: outcome.rawValue)
    }

    func tokenExpiryChanged(identity: String, unixTime: Double?) {
        metrics.tokenExpiryChanged(identity: identity, unixTime: unixTime)
    }

    func identityRemoved(_ name: String) {
        metrics.identityRemoved(name)
    }

    func upstreamRefusedToken(identity: String, refetch: Bool) {
        metrics.upstreamRefusedToken(identity: identity, refetch: refetch)
    }

    func upstreamAskedForStepUp(identity: String, outcome: StepUpOutcome) {
        metrics.stepUp(identity: identity, outcome: outcome.code)
    }

    func tokenStoreOperation(identity: String, operation: String, outcome: String) {
        metrics.tokenStoreOperation(identity: identity, operation: operation, outcome: outcome)
    }

    func loginEnded(identity: String, kind: LoginKind, outcome: LoginOutcome) {
        metrics.loginEnded(identity: identity, kind: kind.rawValue, outcome: outcome.label)
    }

    func dpopNonceRetried(identity: String, server: String) {
        metrics.dpopNonceRetried(identity: identity, server: server)
    }

    func storeOperation(backend: String, outcome: String) {
        metrics.storeOperation(backend: backend, outcome: outcome)
    }

    func jwksFetched(issuer: String, outcome: String) {
        metrics.jwksFetched(issuer: issuer, outcome: outcome)
    }

    func callerExchangeEnded(identity: String, outcome: CallerExchangeOutcome) {
        metrics.callerExchangeEnded(identity: identity, outcome: outcome.rawValue)
    }

    func introspectionEnded(identity: String, outcome: String) {
        metrics.introspectionEnded(identity: identity, outcome: outcome)
    }

    func tokenInboxDepthChanged(_ depth: Int) {
        metrics.tokenInboxDepthChanged(depth)
    }
}

/// Names, once per configuration loaded, the interactive identities whose upstreams' step-up
/// challenges go to the client as they came (`StepUpRoutes`: routes to several upstreams).
func logSharedStepUpIdentities(_ config: RelayConfig, logger: Logger) {
    for name in StepUpRoutes.sharedAcrossOrigins(config.routes) where config.identities[name]?.grant.isInteractive == true {
        logger.info("identity's routes go to several upstreams: their step-up challenges go to the client as they came",
                    metadata: ["identity": .string(name)])
    }
}
