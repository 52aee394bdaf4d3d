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
        let loaded = try loadConfig(path: config)
        try serve(loaded.config, tls: loaded.tls, logger: Logger(label: "oauth-relay"))
    }
}

/// A validated config and the TLS configurations it needs (certificates and keys loaded).
struct LoadedConfig {
    var config: RelayConfig
    var tls: ClientTLS
}

/// Loads and validates a config file; on errors prints each with its JSON path and fails.
func loadConfig(path: String) throws -> LoadedConfig {
    let config: RelayConfig
    do {
        config = try ConfigLoader.load(path: path, environment: ProcessInfo.processInfo.environment)
    } catch {
        FileHandleOutput.standardError("oauth-relay: invalid configuration \(path):\n\(error.description)\n")
        throw ExitCode(1)
    }
    var errors: [String] = []
    // Plain-http token endpoints: loopback only, unless the identity says otherwise.
    for name in config.identities.keys.sorted() {
        do throws(InsecureTokenURL) {
            if case .insecureHTTPAllowed = try TokenEndpointSecurity.check(config.identities[name]!) {
                Logger(label: "oauth-relay").warning("plain-http token endpoint allowed by allowInsecureTokenUrl",
                                                     metadata: ["identity": .string(name)])
            }
        } catch {
            errors.append("\(error.path): \(error)")
        }
    }
    let (tls, tlsErrors, tlsWarnings) = ClientTLS.build(for: config)
    errors += tlsErrors
    for warning in tlsWarnings {
        FileHandleOutput.standardError("oauth-relay: WARNING: \(warning)\n")
        Logger(label: "oauth-relay").warning("TLS verification disabled", metadata: ["setting": .string(warning)])
    }
    if !errors.isEmpty {
        FileHandleOutput.standardError("oauth-relay: invalid configuration \(path):\n" + errors.map { "\($0)\n" }.joined())
        throw ExitCode(1)
    }
    return LoadedConfig(config: config, tls: tls)
}

/// Starts the token thread when the config has identities.
func startTokenService(_ config: RelayConfig, tls: ClientTLS, logger: Logger) throws -> TokenService? {
    guard !config.identities.isEmpty else { return nil }
    let limits = HTTPClientLimits(
        connectTimeoutMilliseconds: UInt64(config.limits.upstreamConnectTimeoutSeconds * 1000),
        responseTimeoutMilliseconds: UInt64(min(config.limits.upstreamResponseTimeoutSeconds, 30) * 1000))
    return try TokenService.start(identities: config.identities, tls: tls.identities, limits: limits, logger: logger)
}

/// Runs the relay until SIGTERM or SIGINT, then drains and returns.
/// `whileServing` runs once the listeners are bound (the demo prints its instructions there).
func serve(_ config: RelayConfig, tls: ClientTLS = ClientTLS(), logger: Logger,
           whileServing: (RelayServer) -> Void = { _ in }) throws {
    SignalWatcher.ignoreBrokenPipe()
    // The signal watchers exist before any worker binds: a SIGTERM that arrives while the
    // listeners start is queued by libuv and handled once the loop runs, instead of killing
    // a process that already accepts connections.
    let loop = try EventLoop()
    final class Running {
        var server: RelayServer?
        var stopSignal: Int32?
        var watchers: [SignalWatcher] = []
        var admin: AdminServer?
    }
    let running = Running()
    let stop: (Int32) -> Void = { signal in
        logger.info("shutting down", metadata: ["signal": .stringConvertible(signal)])
        running.stopSignal = signal
        running.server?.stop()
        running.admin?.close()
        // With the watchers gone a second signal has its default effect: it ends the process.
        for watcher in running.watchers { watcher.close() }
    }
    running.watchers.append(SignalWatcher(loop: loop, signal: SignalWatcher.terminate, callback: stop))
    running.watchers.append(SignalWatcher(loop: loop, signal: SignalWatcher.interrupt, callback: stop))
    running.watchers.append(SignalWatcher(loop: loop, signal: SignalWatcher.hangUp) { _ in
        logger.warning("SIGHUP received: this version does not reload its configuration; nothing changed")
    })

    let tokens = try startTokenService(config, tls: tls, logger: logger)
    defer { tokens?.stop() }
    let settings = ProxySettings(config: config, tokens: tokens, tls: tls)
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
        "listen_tls": .string(server.boundTLSAddress ?? "-"),
        "workers": .stringConvertible(workers),
        "routes": .array(config.routes.map { .string("\($0.name) \($0.match.host.map { "\($0)" } ?? "*")\($0.match.pathPrefix) -> \($0.upstream)") }),
    ])
    // The admin listener, on this thread's loop (issue 5): health, readiness, identities.
    var admin: AdminServer?
    if let adminAddress = config.admin {
        guard let address = SocketAddress(binding: adminAddress) else {
            logger.critical("cannot start", metadata: ["error": "admin address \(adminAddress) is not an IP address"])
            server.stop()
            server.wait()
            throw ExitCode(1)
        }
        do {
            admin = try AdminServer(loop: loop, address: address, config: config, tokens: tokens)
        } catch {
            logger.critical("cannot start", metadata: ["error": "cannot listen on \(adminAddress) (admin): \(error.message)"])
            server.stop()
            server.wait()
            throw ExitCode(1)
        }
        running.admin = admin
        logger.info("admin listening", metadata: ["admin": .string(admin?.boundAddress?.description ?? adminAddress.description)])
    }
    whileServing(server)
    loop.run()
    server.wait()
    try? loop.close()
    logger.info("stopped")
}
