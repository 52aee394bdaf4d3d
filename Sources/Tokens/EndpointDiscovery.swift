// EndpointDiscovery: reads each identity's provider metadata through IdPClient; the endpoints
// found go to the lifecycle, the logouts waiting for them revoke, and the identity's next action
// follows.

import FoundationEssentials
import Logging
import OAuth2

/// Runs on the token loop only.
final class EndpointDiscovery {
    private let idp: IdPClient
    private let logouts: Logouts
    private let logger: Logger
    private unowned let schedule: any FetchSchedule

    init(idp: IdPClient, logouts: Logouts, logger: Logger, schedule: any FetchSchedule) {
        self.idp = idp
        self.logouts = logouts
        self.logger = logger
        self.schedule = schedule
    }

    /// Reads the identity's provider metadata (`issuer`): the OpenID Connect document, else the
    /// RFC 8414 one. The endpoints it names complete the configured ones; a failure backs off
    /// like a token request's, and the identity shows it as `failing` with the reason.
    func discover(_ tokens: IdentityTokens) {
        guard let issuer = tokens.identity.issuer else { return }
        do throws(DiscoveryError) {
            let discovery = try ProviderDiscovery(issuer: issuer, allowInsecureHTTP: tokens.identity.allowInsecureTokenUrl)
            step(.fetch(discovery.firstURL), of: discovery, for: tokens)
        } catch {
            discoveryEnded(.failure(.discovery(error)), for: tokens)
        }
    }

    private func step(_ step: ProviderDiscovery.Step, of discovery: ProviderDiscovery, for tokens: IdentityTokens) {
        switch step {
        case .fetch(let url):
            // Once stopping, no answer comes: the request is cancelled (IdPClient).
            idp.getJSON(url, for: tokens) { [self] result in
                var discovery = discovery
                switch result {
                case .success(let reply): self.step(discovery.received(reply, unixTime: Date().timeIntervalSince1970), of: discovery, for: tokens)
                case .failure(let error): self.step(discovery.failed(error), of: discovery, for: tokens)
                }
            }
        case .found(let metadata):
            // A document without an endpoint the identity needs fails like any bad document.
            let endpoints = Result { () throws(DiscoveryError) in
                try IdentityEndpoints(identity: tokens.identity, metadata: metadata, documentURL: discovery.currentURL.description)
            }
            discoveryEnded(endpoints.mapError(TokenEndpointError.discovery), for: tokens)
        case .failed(let error):
            discoveryEnded(.failure(.discovery(error)), for: tokens)
        }
    }

    private func discoveryEnded(_ outcome: Result<IdentityEndpoints, TokenEndpointError>, for tokens: IdentityTokens) {
        let now = monotonicSeconds()
        let name = tokens.identity.name
        tokens.publish { lifecycle in
            switch outcome {
            case .success(let endpoints): lifecycle.discovered(endpoints)
            case .failure(let error): lifecycle.discoveryFailed(error, at: now)
            }
            return true
        }
        switch outcome {
        case .success(let endpoints):
            logger.info("endpoints discovered", metadata: ["identity": .string(name), "token_endpoint": .string(redactedURL(endpoints.token))])
        case .failure(let error):
            logger.warning("discovery failed", metadata: ["identity": .string(name), "error": .string("\(error)")])
        }
        logouts.revokeAfterDiscovery(tokens)
        schedule.runNextAction(tokens)
    }
}
