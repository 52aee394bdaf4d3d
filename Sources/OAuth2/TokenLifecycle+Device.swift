// A device login (RFC 8628) in the token lifecycle. It starts when a request finds no token
// and no refresh token (or when a person asks: `requestDeviceLogin`): the device authorization
// is a step of its own (`.authorizeDevice`), then the `DeviceFlow` polls, each poll a fetch
// like any other (`.fetch`, purpose `.grant(.deviceCode)`), until the person approves, refuses
// or the code expires. Meanwhile requests are answered at once with the code to enter, not
// parked: a person has to act first. One flow per identity, shared by every request and worker.

extension TokenLifecycle {
    /// A person (or the first request) asks for a device login: true when one must start
    /// (none is under way, no valid token or refresh token is held, no backoff is running).
    public mutating func requestDeviceLogin(at now: Double) -> Bool {
        guard case .deviceCode = identity.grant, !hasValidToken(at: now), refreshToken == nil, !deviceLoginRequested,
              (retryAt ?? now) <= now else { return false }
        deviceLoginRequested = true
        return true
    }

    var deviceLoginUnderWay: Bool {
        deviceAuthorizing || (deviceFlow.map { !$0.isOver } ?? false)
    }

    /// What a request without a valid token gets while a device login is asked for or under
    /// way: the code to enter (401), or a wait for the device authorization's answer.
    func deviceLoginDecision(at now: Double) -> TokenDecision? {
        if let flow = deviceFlow, !flow.isOver {
            return .fail(TokenUnavailable(identity: identity.name, reason: .needsLogin,
                                          detail: "identity \(identity.name) waits for a person to enter the code \(flow.authorization.userCode) "
                                              + "at \(flow.authorization.verificationUri)",
                                          deviceLogin: flow.prompt(at: now)))
        }
        return deviceLoginRequested && refreshToken == nil ? .wait : nil
    }

    /// The device login's next step, when it has one.
    mutating func nextDeviceAction(at now: Double) -> TokenAction? {
        guard case .deviceCode = identity.grant, let endpoints else { return nil }
        if var flow = deviceFlow, !flow.isOver {
            let action = flow.nextAction(at: now)
            deviceFlow = flow
            switch action {
            case .poll(let request):
                inFlight = InFlightFetch(purpose: .grant(.deviceCode), startedAt: now, requested: true, request: request)
                return .fetch(request)
            case .sleep(let until):
                return .sleep(until: min(until, nextFetchAt(after: now) ?? until))
            case .idle:
                return .idle
            case .ended(let end):
                endDeviceLogin(failure: end.map { "the device login ended: \($0)" })
                return nil
            }
        }
        guard deviceLoginRequested, !deviceAuthorizing, inFlight == nil else { return nil }
        guard let device = endpoints.deviceAuthorization else {
            endDeviceLogin(failure: "the IdP has no device authorization endpoint")
            return nil
        }
        deviceAuthorizing = true
        return .authorizeDevice(TokenRequest.deviceAuthorization(for: identity, at: device, tokenEndpoint: endpoints.token))
    }

    /// The device authorization endpoint answered: the person can now enter the code.
    public mutating func deviceAuthorized(_ authorization: DeviceAuthorization, at now: Double) {
        deviceAuthorizing = false
        guard deviceLoginRequested, let tokenEndpoint = endpoints?.token else { return }
        deviceFlow = DeviceFlow(identity: identity, tokenEndpoint: tokenEndpoint, authorization: authorization, startedAt: now)
        lastLoginFailure = nil
    }

    /// The device authorization failed: the login ends, and the next one waits for the backoff.
    public mutating func deviceAuthorizationFailed(_ error: TokenEndpointError, at now: Double) {
        deviceAuthorizing = false
        endDeviceLogin(failure: "the IdP did not start a device login: \(error)")
        recordFailure(error, at: now)
    }

    /// A poll did not produce a token: `authorization_pending` and `slow_down` go on, the rest
    /// may end the login.
    mutating func devicePollFailed(_ error: TokenEndpointError, at now: Double) {
        guard var flow = deviceFlow else { return }
        let outcome = flow.pollFailed(error, at: now)
        deviceFlow = flow
        if case .ended(let end) = outcome {
            lastError = error
            endDeviceLogin(failure: end.map { "the device login ended: \($0)" })
        }
    }

    /// The device login is over (approved when `failure` is nil).
    mutating func endDeviceLogin(failure: String?) {
        deviceLoginRequested = false
        deviceAuthorizing = false
        deviceFlow = nil
        if let failure { lastLoginFailure = failure }
    }
}
