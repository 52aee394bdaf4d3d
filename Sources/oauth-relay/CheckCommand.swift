import ArgumentParser
import Config

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a configuration file: exit 0, or print every error with its JSON path and exit 1.")

    @Option(name: .long, help: "The JSON configuration file.")
    var config: String

    func run() throws {
        let relayConfig = try loadConfig(path: config).config
        let identities = relayConfig.identities.count
        var listeners = "listen \(relayConfig.listen)"
        if let forward = relayConfig.forward {
            let hosts = relayConfig.interceptedHosts.count
            listeners += ", forward \(forward.address) intercepting \(hosts) \(hosts == 1 ? "host" : "hosts")"
        }
        FileHandleOutput.standardOutput("\(config): ok (\(relayConfig.routes.count) routes, \(identities) identities, \(listeners))\n")
    }
}
