import ArgumentParser
import Config
import FoundationEssentials
import Proxy
import Tokens
import TokenStore

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a configuration file: exit 0, or print every error with its JSON path and exit 1.")

    @Option(name: .long, help: "The JSON configuration file.")
    var config: String

    @Flag(name: .long, help: "Also run each identity's discovery and the auto chain (no registration) and print what they learn.")
    var resolve = false

    func run() throws {
        let loaded = try loadConfig(path: config)
        let relayConfig = loaded.config
        let identities = relayConfig.identities.count
        var listeners = "listen \(relayConfig.listen)"
        if let forward = relayConfig.forward {
            let hosts = relayConfig.interceptedHosts.count
            listeners += ", forward \(forward.address) intercepting \(hosts) \(hosts == 1 ? "host" : "hosts")"
        }
        FileHandleOutput.standardOutput("\(config): ok (\(relayConfig.routes.count) routes, \(identities) identities, \(listeners))\n")
        guard resolve else { return }
        var check = ResolveCheck(config: relayConfig, tls: loaded.tls, limits: tokenClientLimits(relayConfig), store: existingStore(relayConfig))
        check.shared = sharedStore(relayConfig, tls: loaded.tls)
        var unresolved = 0
        for (name, report) in check.run() {
            var text = "identity \(name):\n" + report.lines.map { "  \($0)\n" }.joined()
            if let failure = report.failure {
                text += "  cannot resolve: \(failure)\n"
                unresolved += 1
            }
            FileHandleOutput.standardOutput(text)
        }
        if unresolved > 0 {
            FileHandleOutput.standardError("oauth-relay check: \(unresolved) \(unresolved == 1 ? "identity" : "identities") cannot resolve\n")
            throw ExitCode(1)
        }
    }

    /// The replicas' Redis of `store.redis`, read (never written) for the registrations kept there.
    private func sharedStore(_ config: RelayConfig, tls: ClientTLS) -> SharedStoreSettings? {
        guard let settings = config.store, let redis = settings.redis, let key = try? TokenStore.key(base64: settings.key.value) else {
            return nil
        }
        return SharedStoreSettings(topology: redis.topology, keyPrefix: redis.keyPrefix, timeoutMilliseconds: UInt64(redis.timeoutMilliseconds),
                                   keys: StoreKeys(key), tls: tls.redis, passwordFile: redis.passwordFile)
    }

    /// The registrations the relay's file store keeps, read only (a check creates, renames and
    /// writes nothing); nil when there is no such store yet.
    private func existingStore(_ config: RelayConfig) -> KeptClients? {
        if let settings = config.store {
            guard let path = settings.path, let key = try? TokenStore.key(base64: settings.key.value) else { return nil }
            return KeptClients(path: path, key: key)
        }
        guard config.defaultStoreAllowed, let directory = DefaultStore.directory(environment: ProcessInfo.processInfo.environment) else {
            return nil
        }
        return KeptClients(defaultStoreIn: directory)
    }
}
