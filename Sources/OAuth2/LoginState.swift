import Endpoints

/// A person's logins to one interactive identity, as its `TokenLifecycle` tracks them: a
/// browser login's code waiting for its exchange, a device login, the wait for a stored login
/// at startup, and what the login pages show (who logged in, why the last login failed).
struct LoginState: Sendable {
    /// A browser login's code exchange, due at once; it moves into the `FetchInFlight` when it is
    /// sent, so a later callback's code waits here for its turn without touching the one under way.
    var waitingCode: CodeExchange?
    /// The device login asked for or under way (nil: none).
    var device: DeviceLogin? {
        didSet { if device == nil { deviceReplacesPerson = false } }
    }
    /// The device login under way replaces the person logged in (`oauth-relay login --force`):
    /// the tokens held stay in use, and are refreshed, until its token replaces them. False
    /// whenever no device login is.
    var deviceReplacesPerson = false
    /// A token store entry is still to be read (`awaitStoredLogin`): a wait at startup only.
    var awaitingStoredLogin = false
    /// Who logged in, as the ID token names them (`preferred_username`, `email` or `sub`).
    private(set) var loggedInAs: String?
    /// Why the last login ended without a token (for the login pages); nil after a success.
    var lastFailure: String?
    /// The step-up an upstream asked for, and those declined.
    var stepUps = StepUpMemory()
    /// The wait before a request may start another device login, after some ended without a token.
    var deviceBackoff = DeviceLoginBackoff()

    /// A login's token from `fetch` is another person's than the one logged in: a device login
    /// that replaces the person, or a code exchange whose checked ID token names someone else
    /// than `loggedInAs` (nobody known on either side: the same person, as far as anyone can tell).
    func replacesPerson(by fetch: FetchInFlight?) -> Bool {
        switch fetch?.kind {
        case .devicePoll?:
            return deviceReplacesPerson
        case .codeExchange(_, let subject)?:
            guard let who = subject?.displayName, let loggedInAs else { return false }
            return who != loggedInAs
        case .rebuildable?, nil:
            return false
        }
    }

    /// A fetch brought a token: a code exchange's names who logged in (nil when no ID token
    /// said so), not the previous person, and a device login's poll ends it, approved (a refresh
    /// of the tokens held while a login replacing the person goes on does not).
    mutating func tokenArrived(from fetch: FetchInFlight?) {
        if fetch?.purpose == .grant(.authorizationCode) {
            loggedInAs = fetch?.subject
            lastFailure = nil
        }
        if fetch?.purpose != .refresh, case .polling? = device {
            deviceEnded(failure: nil)
            deviceBackoff.reset()
        }
    }

    /// A token store's entry gave the login: `subject` logged in.
    mutating func restored(subject: String?) {
        loggedInAs = subject
    }

    /// The code exchange in flight failed: the code was used (or refused), the person must log
    /// in again.
    mutating func exchangeFailed(_ error: TokenEndpointError) {
        if case .idToken = error {
            lastFailure = error.description
        } else {
            lastFailure = "the IdP did not exchange the login's code for a token: \(error)"
        }
    }

    /// The device login's next step (see `DeviceLogin.nextStep`); nil when it has none, or when
    /// it has just ended (why is then the last failure).
    mutating func nextDeviceStep(identity: Identity, stepUp: StepUp?, endpoints: IdentityEndpoints, fetchUnderWay: Bool,
                                 at now: Double) -> DeviceLogin.Step? {
        let step = device?.nextStep(identity: identity, stepUp: stepUp, endpoints: endpoints, fetchUnderWay: fetchUnderWay, at: now)
        guard case .ended(let failure)? = step else { return step }
        deviceEnded(failure: failure)
        // The code expired unused: a step-up it was for counts as declined, and the next login waits.
        if failure != nil {
            stepUps.decline()
            deviceBackoff.loginEndedWithoutToken(at: now)
        }
        return nil
    }

    /// The device authorization endpoint answered: the person can now enter the code (the flow
    /// polls the token endpoint `tokenEndpoint`). Ignored when no device login is asked for.
    mutating func deviceAuthorized(_ authorization: DeviceAuthorization, identity: Identity, tokenEndpoint: HTTPURL?, at now: Double) {
        guard let device else { return }
        guard let tokenEndpoint else {
            if case .authorizing = device { self.device = .requested }
            return
        }
        self.device = .polling(DeviceFlow(identity: identity, tokenEndpoint: tokenEndpoint, authorization: authorization, startedAt: now),
                               stepUp: device.stepUp)
        lastFailure = nil
    }

    /// A device poll did not produce a token: true when that ended the login
    /// (`authorization_pending` and `slow_down` go on).
    mutating func devicePollFailed(_ error: TokenEndpointError, at now: Double) -> Bool {
        guard case .ended(let end)? = device?.pollFailed(error, at: now) else { return false }
        deviceEnded(failure: end.map { "the device login ended: \($0)" })
        // Declined, expired or refused: a step-up it was for is not asked again, and the next
        // login waits.
        if end != nil, end != .cancelled {
            stepUps.decline()
            deviceBackoff.loginEndedWithoutToken(at: now)
        }
        return true
    }

    /// The device login is over (approved when `failure` is nil).
    mutating func deviceEnded(failure: String?) {
        device = nil
        if let failure { lastFailure = failure }
    }

    /// A logout: nobody is logged in, a waiting code is dropped, a device login cancelled.
    mutating func forgotten() {
        loggedInAs = nil
        waitingCode = nil
        device = nil
        deviceBackoff.reset()
        stepUps.forget()
    }
}
