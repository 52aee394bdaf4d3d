// An `auto` identity in the token lifecycle: before discovery, it learns its authorization
// server and client (`AutoResolution`, driven by the token thread). The lookup is driven like
// discovery (`nextAction` answers `.resolve`, the token thread reports `resolved` or
// `resolutionFailed`), fails like it (backoff; a failure only configuration can fix is
// `needsConfiguration`, answered with the `needs-configuration` problem), and happens again when
// the server no longer knows the client (`clientUnknown`).
//
// Requests wait while the first resolution is under way (and while one runs again after
// `clientUnknown`); during a temporary failure's backoff they get 503 with `Retry-After`, during
// another failure's (a resource mismatch, a refused registration: the servers may be fixed) 502,
// and once only configuration can help, 502 `needs-configuration`; the chain then runs again on
// a long backoff (`ResolutionRetry`), and at once on a reload or a logout (`retryResolutionNow`).

extension TokenLifecycle {
    /// An `auto` identity that has not learnt its server and client yet.
    public var needsResolution: Bool {
        guard identity.auto != nil else { return false }
        if case .resolved = autoProgress { return false }
        return true
    }

    /// What it learnt (nil before, and for any other identity).
    public var autoFacts: AutoFacts? {
        if case .resolved(let resolved, _) = autoProgress { return resolved.facts }
        return nil
    }

    /// The chain completed: the identity as learnt and its endpoints are in force.
    public mutating func resolved(_ resolved: AutoResolved) {
        activity.endResolution()
        let configured = if case .resolved(_, let configured) = autoProgress { configured } else { identity }
        autoProgress = .resolved(resolved, configured: configured)
        identity = resolved.identity
        endpoints = resolved.endpoints
        stepUpScopeBound = StepUp.scopeBound(autoScope: configured.auto?.scope, facts: resolved.facts)
        failures.streakEnded()
        failures.last = nil
    }

    /// The chain failed: back off (a temporary failure), or a long while when only
    /// configuration can help.
    public mutating func resolutionFailed(_ error: AutoSetupError, at now: Double) {
        activity.endResolution()
        let inARow = if case .needsConfiguration(_, let retry) = autoProgress { retry.failures + 1 } else { 1 }
        if error.needsConfiguration {
            autoProgress = .needsConfiguration(error, retry: ResolutionRetry(failures: inARow, at: now))
            failures.last = .autoSetup(error)
            return
        }
        autoProgress = .unresolved
        failures.record(.autoSetup(error), at: now)
    }

    /// An operator reloaded the configuration (changed or not) or logged the identity out
    /// (`DELETE /identities/NAME/token`): an identity that only configuration could help runs
    /// its chain again at its next action, without waiting for its retry.
    public mutating func retryResolutionNow() {
        guard case .needsConfiguration(let error, var retry) = autoProgress else { return }
        retry.dueNow()
        autoProgress = .needsConfiguration(error, retry: retry)
    }

    /// The token endpoint answered `invalid_client` (`refusal`: what it said) to the registered
    /// client: the registration is dropped (the token thread removes it from the store), tokens
    /// and refresh token too, and the chain runs again (a person logs in again). A client
    /// registered by this process that never got a token is not registered again (that would
    /// loop): the identity needs configuration (`registeredClientRefused`). Returns the key of the
    /// registration dropped (nil when the identity is not `auto` or has none).
    public mutating func clientUnknown(at now: Double, because refusal: String = "invalid_client") -> RegistrationKey? {
        guard case .resolved(let resolved, _) = autoProgress else { return nil }
        let key = clientForgotten()
        if resolved.newlyRegistered {
            let error = AutoSetupError.registeredClientRefused(issuer: resolved.key.issuer, reason: refusal)
            autoProgress = .needsConfiguration(error, retry: ResolutionRetry(failures: 1, at: now))
            failures.last = .autoSetup(error)
        }
        return key
    }

    /// The registered client is dropped (`--forget-client`, or the server no longer knows it):
    /// tokens and refresh token too, and the chain runs again at the next need. Returns the key
    /// of the registration dropped (nil when none was in use).
    public mutating func clientForgotten() -> RegistrationKey? {
        guard case .resolved(let resolved, let configured) = autoProgress else { return nil }
        forget()
        autoProgress = .unresolved
        identity = configured
        endpoints = nil
        // The refusal that brought this here is no reason to wait: the chain runs at once.
        failures.streakEnded()
        return resolved.key
    }

    /// The resolution under way was overtaken (its client forgotten meanwhile, or its slot
    /// retired): its outcome is not taken, and the chain runs again at the next action.
    public mutating func resolutionDropped() {
        activity.endResolution()
    }

    /// A token arrived: the client in use has proven itself, so a later `invalid_client` means
    /// the server forgot it (registering again may help), not that it refused it from the start.
    mutating func autoClientProven() {
        guard case .resolved(var resolved, let configured) = autoProgress, resolved.newlyRegistered else { return }
        resolved.newlyRegistered = false
        autoProgress = .resolved(resolved, configured: configured)
    }

    // MARK: - Driven by nextAction, decision and status

    /// `.resolve` when a resolution is due (after a temporary failure's backoff, or the long
    /// retry when only configuration could help); nothing while one is under way or another
    /// request is (a fetch a logout abandoned).
    mutating func nextResolutionAction(at now: Double) -> TokenAction {
        guard activity.isIdle else { return .idle }
        switch autoProgress {
        case .unresolved:
            if let retryAt, retryAt > now { return .sleep(until: retryAt) }
        case .needsConfiguration(_, let retry):
            if retry.due > now { return .sleep(until: retry.due) }
        case .resolved:
            return .idle
        }
        activity = .resolving
        return .resolve
    }

    /// What a request is answered before the identity has learnt its server and client (nil
    /// once it has, and for any other identity).
    func resolutionDecision(at now: Double) -> TokenDecision? {
        guard needsResolution else { return nil }
        if case .needsConfiguration(let error, _) = autoProgress {
            return .fail(TokenUnavailable(identity: identity.name, reason: .needsConfiguration, detail: error.description))
        }
        return failures.problem(identity: identity.name, discoveryFailing: false, at: now).map { .fail($0) } ?? .wait
    }

    /// The `/identities` state before the identity has learnt its server and client.
    var resolutionState: IdentityStatus.State? {
        guard needsResolution else { return nil }
        if case .needsConfiguration = autoProgress { return .needsConfiguration }
        return consecutiveFailures > 0 ? .failing : .resolving
    }
}
