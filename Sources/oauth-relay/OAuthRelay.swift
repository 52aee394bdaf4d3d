// oauth-relay: the command line. Subcommands share the options in `CommonOptions`; `run` is
// the default, so `oauth-relay --config FILE` serves.

import ArgumentParser
import OAuth2
#if canImport(Glibc)
import Glibc
#endif

@main
struct OAuthRelay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "oauth-relay",
        abstract: "A local HTTP reverse proxy that applies the OAuth2 bearer token of each route's identity.",
        // `oauth-relay --version`: the version and the commit the binary was built from.
        version: RelayBuild.current.versionLine,
        subcommands: [RunCommand.self, CheckCommand.self, TokenCommand.self, LoginCommand.self, LogoutCommand.self, CACommand.self, DemoCommand.self],
        defaultSubcommand: RunCommand.self
    )

    /// Exit codes are part of the contract (CONFIG.md): 0 ok, 1 invalid config or failed
    /// command, 2 usage error (ArgumentParser's own default for usage errors is 64).
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .validationFailure {
                FileHandleOutput.standardError(fullMessage(for: error) + "\n")
                Glibc.exit(2)
            }
            exit(withError: error)
        }
    }
}

struct CommonOptions: ParsableArguments {
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: LogLevelOption = .info

    @Option(name: .long, help: "Log format: json (one object per line) or text. Default: text on a terminal, json otherwise.")
    var logFormat: LogFormat?

    func bootstrapLogging() {
        RelayLogHandler.bootstrap(level: logLevel.level, format: logFormat ?? (isatty(2) != 0 ? .text : .json))
    }
}

/// Writes straight to the standard streams (unbuffered, one call per message).
enum FileHandleOutput {
    static func standardError(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }

    static func standardOutput(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(1, $0.baseAddress, $0.count) }
    }
}
