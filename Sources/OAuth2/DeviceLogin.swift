/// One identity's device login (RFC 8628) from the moment it is asked for until it ends: the
/// device authorization is a step of its own, then the `DeviceFlow` polls. The lifecycle holds
/// none while no device login is asked for, and drops it when the login ends, so a flow that
/// is over is never held.
///
/// Transitions: `.requested` → (`nextStep` sends the authorization) `.authorizing` →
/// (`authorized`) `.polling`; a failed authorization, a flow that ends, a token or a logout
/// end the login (the lifecycle sets it to nil).
enum DeviceLogin: Sendable {
    /// Asked for: the device authorization request is due once no fetch is under way.
    case requested
    /// The device authorization request is under way, for `stepUp` (nil: a plain login).
    case authorizing(stepUp: StepUp?)
    /// The person has the code to enter; the flow polls the token endpoint. `stepUp`: what its
    /// authorization asked for, which its token answers (not a step-up asked after it was sent).
    case polling(DeviceFlow, stepUp: StepUp?)

    /// The step-up the device authorization asked for (nil: a plain login, or none sent yet).
    var stepUp: StepUp? {
        switch self {
        case .requested: nil
        case .authorizing(let stepUp), .polling(_, let stepUp): stepUp
        }
    }

    /// What the device login does next, as `nextStep` answers it.
    enum Step: Sendable {
        /// Send this device authorization request.
        case authorize(TokenRequest)
        /// Send this poll (a fetch, purpose `.grant(.deviceCode)`).
        case poll(TokenRequest)
        /// The next poll is due at `until`.
        case sleep(until: Double)
        /// A poll is in flight.
        case idle
        /// The login is over: why, when it did not end with a token.
        case ended(failure: String?)
    }

    /// The flow polling for the person's approval, while it is not over.
    var activeFlow: DeviceFlow? {
        if case .polling(let flow, _) = self, !flow.isOver { return flow }
        return nil
    }

    /// The authorization or the polls are under way (not merely asked for).
    var isUnderWay: Bool {
        if case .authorizing = self { return true }
        return activeFlow != nil
    }

    /// The device login's next step; nil when it has none now (its authorization is under way,
    /// or a fetch is, which the authorization waits for).
    mutating func nextStep(identity: Identity, stepUp: StepUp? = nil, endpoints: IdentityEndpoints, fetchUnderWay: Bool, at now: Double) -> Step? {
        if case .polling(var flow, let carried) = self, !flow.isOver {
            let action = flow.nextAction(at: now)
            self = .polling(flow, stepUp: carried)
            switch action {
            case .poll(let request): return .poll(request)
            case .sleep(let until): return .sleep(until: until)
            case .idle: return .idle
            case .ended(let end): return .ended(failure: end.map { "the device login ended: \($0)" })
            }
        }
        if case .authorizing = self { return nil }
        guard !fetchUnderWay else { return nil }
        guard let device = endpoints.deviceAuthorization else {
            return .ended(failure: "the IdP has no device authorization endpoint")
        }
        self = .authorizing(stepUp: stepUp)
        return .authorize(TokenRequest.deviceAuthorization(for: identity, at: device, tokenEndpoint: endpoints.token, stepUp: stepUp))
    }

    /// A poll did not produce a token: the flow's outcome (nil when no flow polls).
    /// `authorization_pending` and `slow_down` go on; the rest may end the login.
    mutating func pollFailed(_ error: TokenEndpointError, at now: Double) -> DevicePollOutcome? {
        guard case .polling(var flow, let carried) = self else { return nil }
        let outcome = flow.pollFailed(error, at: now)
        self = .polling(flow, stepUp: carried)
        return outcome
    }

    /// What a request without a valid token gets: the code to enter (401), or, while the login
    /// is asked for and no refresh token is held, a wait for the device authorization's answer.
    func decision(identity: Identity, holdsRefreshToken: Bool, at now: Double) -> TokenDecision? {
        if let flow = activeFlow {
            return .fail(TokenUnavailable(identity: identity.name, reason: .needsLogin,
                                          detail: "identity \(identity.name) waits for a person to enter the code \(flow.authorization.userCode) "
                                              + "at \(flow.authorization.verificationUri)",
                                          deviceLogin: flow.prompt(at: now)))
        }
        return holdsRefreshToken ? nil : .wait
    }
}
