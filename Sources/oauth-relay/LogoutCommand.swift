import ArgumentParser
import Config
import Dispatch
import Locking
import Logging
import OAuth2
import Tokens

/// `oauth-relay logout --config FILE NAME`: forgets an identity's tokens, in the running relay
/// (through its admin listener) and in the token store, and revokes the refresh token at the
/// IdP when it has a revocation endpoint (RFC 7009). Without a running relay it does the same
/// from the store itself.
struct LogoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Forget an identity's tokens (memory and store) and revoke its refresh token at the IdP.")

    @OptionGroup var options: IdentityCommandOptions

    func run() throws {
        let (loaded, _) = try options.load(command: "logout")
        let name = options.name
        if let admin = loaded.config.admin, let answer = try AdminClient(address: admin).call("DELETE", "/identities/\(name)/token") {
            guard answer.status == 204 else {
                FileHandleOutput.standardError("oauth-relay logout: the relay answered \(answer.status)\n")
                throw ExitCode(1)
            }
            FileHandleOutput.standardError("Logged out of identity \(name).\n")
            return
        }
        let service = try startTokenService(loaded.config, tls: loaded.tls, logger: Logger(label: "oauth-relay"))
        defer { service.stop() }
        guard let tokens = service.tokenSet[name] else { throw ExitCode(1) }
        // The token thread reads the store entry, revokes, and reports: wait for it.
        let done = DispatchSemaphore(value: 0)
        let reported = Locked<LogoutOutcome?>(nil)
        service.forget(tokens) { result in
            reported.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        let outcome = reported.withLock { $0 }
        switch outcome {
        case .revoked?, .nothingToRevoke?:
            FileHandleOutput.standardError("Logged out of identity \(name)" + (outcome == .revoked ? " (refresh token revoked)" : "") + ".\n")
        case .revocationFailed(let reason)?:
            FileHandleOutput.standardError("Logged out of identity \(name); the IdP did not revoke the refresh token: \(reason)\n")
            throw ExitCode(1)
        case nil:
            throw ExitCode(1)
        }
    }
}
