import ArgumentParser
import Config
import EventLoop
import Foundation
import Logging
import HTTPClient
import OAuth2
import Proxy
import Tokens

struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Serve with the given configuration file.")

    @Option(name: .long, help: "The JSON configuration file.")
    var config: String

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        let relayConfig = try loadConfig(path: config)
        try serve(relayConfig, logger: Logger(label: "oauth-relay"))
    }
}

/// Loads and validates a config file; on errors prints each with its JSON path and fails.
func loadConfig(path: String) throws -> RelayConfig {
    let config: RelayConfig
    do {
        config = try ConfigLoader.load(path: path, environment: ProcessInfo.processInfo.environment)
    } catch {
        FileHandleOutput.standardError("oauth-relay: invalid configuration \(path):\n\(error.description)\n")
        throw ExitCode(1)
    }
    // Plain-http token endpoints: loopback only, unless the identity says otherwise.
    var insecure: [String] = []
    for name in config.identities.keys.sorted() {
        do throws(InsecureTokenURL) {
            if case .insecureHTTPAllowed = try TokenEndpointSecurity.check(config.identities[name]!) {
                Logger(label: "oauth-relay").warning("plain-http token endpoint allowed by allowInsecureTokenUrl",
                                                     metadata: ["identity": .string(name)])
            }
        } catch {
            insecure.append("\(error.path): \(error)")
        }
    }
    if !insecure.isEmpty {
        FileHandleOutput.standardError("oauth-relay: invalid configuration \(path):\n" + insecure.map { "\($0)\n" }.joined())
        throw ExitCode(1)
    }
    let unsupported = unsupportedByThisVersion(config)
    if !unsupported.isEmpty {
        FileHandleOutput.standardError("oauth-relay: configuration \(path) needs what this version cannot do yet:\n"
                                       + unsupported.map { "\($0)\n" }.joined())
        throw ExitCode(1)
    }
    return config
}

/// Valid settings this version cannot honour, refused rather than half-served (an https
/// upstream sent plaintext would be worse than no answer).
func unsupportedByThisVersion(_ config: RelayConfig) -> [String] {
    let tokenEndpoints = config.identities.keys.sorted().compactMap { name in
        config.identities[name]!.tokenUrl.scheme == .https
            ? "$.identities.\(name).tokenUrl: https token endpoints need TLS, which this version does not have yet"
            : nil
    }
    let upstreams = config.routes.compactMap { route in
        route.upstream.scheme == .https
            ? "$.routes[\(route.index)].upstream: https upstreams need TLS, which this version does not have yet"
            : nil
    }
    return tokenEndpoints + upstreams
}

/// Starts the token thread when the config has identities.
func startTokenService(_ config: RelayConfig, logger: Logger) throws -> TokenService? {
    guard !config.identities.isEmpty else { return nil }
    let limits = HTTPClientLimits(
        connectTimeoutMilliseconds: UInt64(config.limits.upstreamConnectTimeoutSeconds * 1000),
        responseTimeoutMilliseconds: UInt64(min(config.limits.upstreamResponseTimeoutSeconds, 30) * 1000))
    return try TokenService.start(identities: config.identities, limits: limits, logger: logger)
}

/// Runs the relay until SIGTERM or SIGINT, then drains and returns.
/// `whileServing` runs once the listeners are bound (the demo prints its instructions there).
func serve(_ config: RelayConfig, logger: Logger, whileServing: (RelayServer) -> Void = { _ in }) throws {
    SignalWatcher.ignoreBrokenPipe()
    // The signal watchers exist before any worker binds: a SIGTERM that arrives while the
    // listeners start is queued by libuv and handled once the loop runs, instead of killing
    // a process that already accepts connections.
    let loop = try EventLoop()
    final class Running {
        var server: RelayServer?
        var stopSignal: Int32?
        var watchers: [SignalWatcher] = []
    }
    let running = Running()
    let stop: (Int32) -> Void = { signal in
        logger.info("shutting down", metadata: ["signal": .stringConvertible(signal)])
        running.stopSignal = signal
        running.server?.stop()
        // With the watchers gone a second signal has its default effect: it ends the process.
        for watcher in running.watchers { watcher.close() }
    }
    running.watchers.append(SignalWatcher(loop: loop, signal: SignalWatcher.terminate, callback: stop))
    running.watchers.append(SignalWatcher(loop: loop, signal: SignalWatcher.interrupt, callback: stop))
    running.watchers.append(SignalWatcher(loop: loop, signal: SignalWatcher.hangUp) { _ in
        logger.warning("SIGHUP received: this version does not reload its configuration; nothing changed")
    })

    let tokens = try startTokenService(config, logger: logger)
    defer { tokens?.stop() }
    let settings = ProxySettings(config: config, tokens: tokens)
    let workers = config.workers == 0 ? WorkerThread.processorCount : config.workers
    do {
        running.server = try RelayServer.start(settings: settings, workers: workers, logger: logger)
    } catch {
        logger.critical("cannot start", metadata: ["error": "\(error)"])
        for watcher in running.watchers { watcher.close() }
        try? loop.close()
        throw ExitCode(1)
    }
    let server = running.server!
    logger.info("listening", metadata: [
        "listen": .string(server.boundAddress),
        "workers": .stringConvertible(workers),
        "routes": .array(config.routes.map { .string("\($0.name) \($0.match.host.map { "\($0)" } ?? "*")\($0.match.pathPrefix) -> \($0.upstream)") }),
    ])
    whileServing(server)
    loop.run()
    server.wait()
    try? loop.close()
    logger.info("stopped")
}
