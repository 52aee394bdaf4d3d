// A device login (RFC 8628) in the token lifecycle. It starts when a request finds no token
// and no refresh token (or when a person asks: `requestDeviceLogin`): the device authorization
// is a step of its own (`.authorizeDevice`), then the `DeviceFlow` polls, each poll a fetch
// like any other (`.fetch`, purpose `.grant(.deviceCode)`), until the person approves, refuses
// or the code expires. Meanwhile requests are answered at once with the code to enter, not
// parked: a person has to act first. One login per identity (`DeviceLogin`), shared by every
// request and worker.

extension TokenLifecycle {
    /// A person (or the first request) asks for a device login: true when one must start
    /// (none is under way, no valid token or refresh token is held, no backoff is running).
    /// `byOperator`: `oauth-relay login` or the admin API, not a request — it ends the wait that
    /// logins ended without a token put on requests (`DeviceLoginBackoff`). `replacingLogin`: the
    /// operator switches the person (`oauth-relay login --force`), so a login starts whatever is
    /// held, and whatever backoff the IdP's failures put on fetches (an operator asked); the
    /// tokens held stay in use (and are refreshed) until its token replaces them, and stay when
    /// it fails. False for it only while another device login is under way. A login that starts
    /// clears the last login's failure: any failure from then on is its own.
    public mutating func requestDeviceLogin(at now: Double, byOperator: Bool = false, replacingLogin: Bool = false) -> Bool {
        let replacing = byOperator && replacingLogin
        guard case .deviceCode = identity.grant, login.device == nil, replacing || (retryAt ?? now) <= now else { return false }
        if byOperator {
            login.deviceBackoff.reset()
        } else if !login.deviceBackoff.allowsStart(at: now) {
            return false
        }
        // A step-up, or a person switched, needs a login whatever token is held.
        guard replacing || login.stepUps.pending(at: now) != nil
                || (!hasValidToken(at: now) && held.refreshToken == nil) else { return false }
        login.device = .requested
        login.deviceReplacesPerson = replacing
        login.lastFailure = nil
        return true
    }

    /// The device login's next step, when it has one.
    mutating func nextDeviceAction(at now: Double) -> TokenAction? {
        guard case .deviceCode = identity.grant, let endpoints else { return nil }
        let asked = loginIdentity(at: now)
        guard let step = login.nextDeviceStep(identity: asked.identity, stepUp: asked.stepUp, endpoints: endpoints,
                                              fetchUnderWay: activity.fetch != nil, at: now) else { return nil }
        switch step {
        case .authorize(let request):
            return .authorizeDevice(request)
        case .poll(let request):
            activity = .fetching(FetchInFlight(startedAt: now, kind: .devicePoll(request, stepUp: login.device?.stepUp)))
            return .fetch(request)
        case .sleep(let until):
            // A refresh of the tokens a login replacing the person leaves in use may be due first.
            if shouldStartFetch(at: now) { return nil }
            return .sleep(until: min(until, nextFetchAt(after: now) ?? until))
        case .idle:
            return .idle
        case .ended:
            return nil  // `nextDeviceStep` answers none.
        }
    }

    /// The device authorization endpoint answered: the person can now enter the code.
    public mutating func deviceAuthorized(_ authorization: DeviceAuthorization, at now: Double) {
        login.deviceAuthorized(authorization, identity: identity, tokenEndpoint: endpoints?.token, at: now)
    }

    /// The device authorization failed: the login ends, and the next one waits for the backoff.
    public mutating func deviceAuthorizationFailed(_ error: TokenEndpointError, at now: Double) {
        login.deviceEnded(failure: "the IdP did not start a device login: \(error)")
        // The IdP will not start a login for this step-up (`invalid_scope`): asking again would loop.
        if !error.isTemporary { stepUpDeclined() }
        failures.record(error, at: now)
    }
}
