import ArgumentParser
import Config
import EventLoop
import Logging
import LoginPages
import OAuth2
import Proxy
import Tokens

/// `oauth-relay token --config FILE NAME`: a valid access token for identity NAME on stdout,
/// for scripts (`curl -H "Authorization: Bearer $(oauth-relay token …)"`), like `oauth2l fetch`.
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a valid access token for an identity to stdout.")

    @OptionGroup var options: IdentityCommandOptions

    func run() throws {
        let (loaded, _) = try options.load(command: "token")
        let (name, config) = (options.name, options.config)
        let relayConfig = loaded.config
        if let grant = relayConfig.identities[name]?.grant.callerGrant {
            // Asked for nothing: the token endpoint would want a caller's token.
            FileHandleOutput.standardError("oauth-relay token: identity \(name) has no token of its own: it exchanges each "
                                           + "caller's token (\(grant.configKey): \"caller\") for a token of that caller, "
                                           + "when the caller's request arrives on one of its routes\n")
            throw ExitCode(1)
        }
        let logger = Logger(label: "oauth-relay")
        let service = try startTokenService(relayConfig, tls: loaded.tls, logger: logger)
        defer { service.stop() }
        guard let tokens = service.tokenSet[name] else { throw ExitCode(1) }
        let loop = try EventLoop()
        var outcome: TokenDecision = .wait
        var wakeup: LoopWakeup?
        // Ask, and ask again each time the identity's fetch ends, until there is an answer.
        let ask = {
            outcome = tokens.decide(at: monotonicSeconds(), wakingOnResult: wakeup, startsDeviceLogin: false)
            if case .wait = outcome {
                service.needToken(tokens)
            } else {
                wakeup?.close()
            }
        }
        wakeup = LoopWakeup(loop: loop) { ask() }
        ask()
        loop.run()
        try? loop.close()
        switch outcome {
        case .inject(let token):
            if token.type == "DPoP" {
                // Printed anyway (a script may hold the key file), but a DPoP token alone is refused.
                let key = if case .generatedKey = tokens.identity.dpop { "a key this command generated and has now forgotten" }
                          else { "the identity's dpop.keyFile" }
                FileHandleOutput.standardError("oauth-relay token: note: this token is DPoP-bound (token_type DPoP); each request "
                                               + "using it needs a DPoP proof signed with \(key)\n")
            }
            FileHandleOutput.standardOutput(token.value + "\n")
        case .fail(let problem) where problem.reason == .needsLogin:
            var text = "oauth-relay token: identity \(name) needs a person to log in: run oauth-relay login --config \(config) \(name)"
            if let url = LoginPaths.loginURL(for: tokens.identity) {
                text += ", or open \(url) with the relay running"
            }
            FileHandleOutput.standardError(text + "\n")
            throw ExitCode(1)
        case .fail(let problem):
            FileHandleOutput.standardError("oauth-relay token: \(problem)\n")
            throw ExitCode(1)
        case .wait:
            throw ExitCode(1)
        }
    }
}
