import AdminAPI
import ArgumentParser
import Config
import Dispatch
import Locking
import Logging
import OAuth2
import Tokens
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `oauth-relay logout --config FILE NAME`: forgets an identity's tokens, in the running relay
/// (through its admin listener) and in the token store, and revokes the refresh token at the
/// IdP when it has a revocation endpoint (RFC 7009). Without a running relay it does the same
/// from the store itself. With `--forget-client` (an `auto` identity), its registered client is
/// then deleted at its authorization server (RFC 7592) and removed from the store: it registers
/// again at its next need.
struct LogoutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Forget an identity's tokens (memory and store) and revoke its refresh token at the IdP.")

    @OptionGroup var options: IdentityCommandOptions

    @Flag(name: .customLong("forget-client"),
          help: "Also delete the identity's registered client (\"identity\": \"auto\") at its authorization server and in the store.")
    var forgetClient = false

    func run() throws {
        let (loaded, identity) = try options.load(command: "logout")
        let name = options.name
        if forgetClient && identity.auto == nil {
            FileHandleOutput.standardError("oauth-relay logout: identity \(name) registers no client (--forget-client is for identities "
                                           + "made by \"identity\": \"auto\")\n")
            throw ExitCode(1)
        }
        if let admin = loaded.config.admin, let answer = try AdminClient(address: admin).call("DELETE", "/identities/\(name)/token") {
            guard answer.status == 204 else {
                let detail = answer.json["detail"]?.string.map { ": \($0)" } ?? ""
                FileHandleOutput.standardError("oauth-relay logout: the relay answered \(answer.status)\(detail)\n")
                throw ExitCode(1)
            }
            FileHandleOutput.standardError("Logged out of identity \(name).\n")
            guard forgetClient else { return }
            // The relay waits up to AdminServer.forgetClientWaitSeconds for the authorization
            // server's answer to the deletion, then answers: heard, with 5 s to spare.
            let wait = UInt64(AdminServer.forgetClientWaitSeconds * 1000) + 5000
            guard let forgot = try AdminClient(address: admin).call("DELETE", "/identities/\(name)/client", responseTimeoutMilliseconds: wait),
                  forgot.status == 200 else {
                FileHandleOutput.standardError("oauth-relay logout: the relay did not forget the registered client of identity \(name)\n")
                throw ExitCode(1)
            }
            let detail = forgot.json["detail"]?.string ?? ""
            FileHandleOutput.standardError("Registered client of identity \(name): \(detail).\n")
            if forgot.json["client"]?.string == "failed" { throw ExitCode(1) }
            return
        }
        // Read-only as to registration: an `auto` identity with no client kept registers none here
        // (no login can be kept for a client that does not exist: nothing to revoke or delete).
        let service = try startTokenService(loaded.config, tls: loaded.tls, logger: Logger(label: "oauth-relay"), registersClients: false)
        defer { service.stop() }
        guard let tokens = service.tokenSet[name] else { throw ExitCode(1) }
        // An `auto` identity learns its endpoints and client first: its login's entry is the
        // learnt client's, and its refresh token is revoked at the learnt server.
        if identity.auto != nil, let unresolved = awaitResolution(tokens) {
            FileHandleOutput.standardError("oauth-relay logout: identity \(name) \(unresolved); logging out what the store keeps "
                                           + "for it as configured\n")
        }
        try logOut(tokens, named: name, service: service)
        if forgetClient { try forgetRegisteredClient(tokens, named: name, service: service) }
    }

    /// The longest the identity's resolution is waited for: the chain's requests (metadata,
    /// discovery, a registration) each bounded by the token request timeouts.
    static let resolutionWaitSeconds = 60.0

    /// Waits (bounded) until the identity's first resolution, which this process's token thread
    /// started, has ended; nil when it resolved, else why not (it failed, or is still under way
    /// at the deadline).
    private func awaitResolution(_ tokens: IdentityTokens) -> String? {
        let deadline = monotonicSeconds() + Self.resolutionWaitSeconds
        var status = tokens.status(at: monotonicSeconds())
        while status.state == .resolving && monotonicSeconds() < deadline {
            usleep(20_000)
            status = tokens.status(at: monotonicSeconds())
        }
        if status.auto != nil { return nil }
        if status.state == .resolving {
            return "did not resolve within \(SecondsText.format(Self.resolutionWaitSeconds)) s"
        }
        let code = status.lastErrorCode.map { "\($0): " } ?? ""
        return "did not resolve: " + code + (status.lastErrorDescription ?? "no reason given")
    }

    /// Deletes the registered client at its server and in the store, from this process, once the
    /// identity's resolution has ended (`awaitResolution`): the client it loaded (or, with none
    /// kept, registered) is the one deleted, and nothing registers behind the deletion.
    private func forgetRegisteredClient(_ tokens: IdentityTokens, named name: String, service: TokenService) throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<ClientDeletion?>(nil)
        service.forgetClient(tokens) { deletion in
            outcome.withLock { $0 = deletion }
            done.signal()
        }
        done.wait()
        guard let deletion = outcome.withLock({ $0 }) else { throw ExitCode(1) }
        FileHandleOutput.standardError("Registered client of identity \(name): \(deletion).\n")
        if case .failed = deletion { throw ExitCode(1) }
    }

    /// Forgets the tokens from this process (no relay running): store entries removed, refresh token revoked.
    private func logOut(_ tokens: IdentityTokens, named name: String, service: TokenService) throws {
        // The token thread removes the store entries, revokes, and reports each: wait for both.
        let done = DispatchSemaphore(value: 0)
        let reported = Locked<(shared: SharedStoreRemoval?, revocation: LogoutOutcome?)>((nil, nil))
        service.forget(tokens, listener: LogoutListener(sharedStore: { removal in
            reported.withLock { $0.shared = removal }
            done.signal()
        }, revocation: { outcome in
            reported.withLock { $0.revocation = outcome }
            done.signal()
        }))
        done.wait()
        done.wait()
        let (shared, outcome) = reported.withLock { $0 }
        var failed = false
        switch outcome {
        case .revoked?, .nothingToRevoke?:
            FileHandleOutput.standardError("Logged out of identity \(name)" + (outcome == .revoked ? " (refresh token revoked)" : "") + ".\n")
        case .revocationFailed(let reason)?:
            FileHandleOutput.standardError("Logged out of identity \(name); the IdP did not revoke the refresh token: \(reason)\n")
            failed = true
        case nil:
            failed = true
        }
        if let shared, case .failed = shared {
            FileHandleOutput.standardError("oauth-relay logout: identity \(name) is \(shared)\n")
            failed = true
        }
        if failed { throw ExitCode(1) }
    }
}
