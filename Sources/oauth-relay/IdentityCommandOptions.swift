import ArgumentParser
import Config
import OAuth2

/// What `token`, `login` and `logout` take: the configuration file and an identity of it.
struct IdentityCommandOptions: ParsableArguments {
    @Option(name: .long, help: "The JSON configuration file.")
    var config: String

    @Argument(help: "The identity's name (a key of `identities`).")
    var name: String

    @OptionGroup var common: CommonOptions

    /// Starts logging, loads and checks the configuration, and finds the identity; on failure
    /// prints why (naming the identities there are) and exits 1. `command` names the command in
    /// the message.
    func load(command: String) throws -> (LoadedConfig, Identity) {
        common.bootstrapLogging()
        let loaded = try loadConfig(path: config)
        guard let identity = loaded.config.identities[name] else {
            let known = loaded.config.identities.keys.sorted().joined(separator: ", ")
            FileHandleOutput.standardError("oauth-relay \(command): no identity \"\(name)\" in \(config) (known: \(known))\n")
            throw ExitCode(1)
        }
        return (loaded, identity)
    }
}
