// Discovery in the token lifecycle: an identity configured with an `issuer` and without an
// endpoint its grant needs learns its endpoints from the IdP's metadata before any fetch. The
// lookup is driven like a fetch (`nextAction` answers `.discover`, the token thread reports
// `discovered` or `discoveryFailed`), fails like one (backoff, the identity is `failing` with
// the reason, requests get 503 meanwhile) and happens again only for a new configuration.

extension TokenLifecycle {
    /// Discovery failed and is waiting to be tried again: the identity is `failing` (even one a
    /// person logs in to: no login can start without the IdP's endpoints).
    var discoveryFailing: Bool {
        endpoints == nil && consecutiveFailures > 0
    }

    /// While discovery fails: what a request is answered (503 with `Retry-After`); nil once the
    /// endpoints are known or while discovery is still under way for the first time.
    public func discoveryProblem(at now: Double) -> TokenUnavailable? {
        guard discoveryFailing else { return nil }
        return failures.problem(identity: identity.name, discoveryFailing: true, at: now)
    }

    /// The discovery request is under way.
    public var isDiscovering: Bool { activity.isDiscovering }

    mutating func nextDiscoveryAction(at now: Double) -> TokenAction {
        if activity.isDiscovering { return .idle }
        if let retryAt, retryAt > now { return .sleep(until: retryAt) }
        activity = .discovering
        return .discover
    }

    /// The IdP's metadata gave the endpoints (already merged with the configured ones).
    public mutating func discovered(_ endpoints: IdentityEndpoints) {
        activity.endDiscovery()
        self.endpoints = endpoints
        failures.streakEnded()
        failures.last = nil
    }

    /// The metadata could not be read or was not acceptable: back off and try again.
    public mutating func discoveryFailed(_ error: TokenEndpointError, at now: Double) {
        activity.endDiscovery()
        failures.record(error, at: now)
    }
}
