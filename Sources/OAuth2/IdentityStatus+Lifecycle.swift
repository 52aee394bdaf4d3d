// How a token lifecycle shows in `/identities` and `/readyz`: which `State` its sub-states
// mean, in order of what a person most needs to know, and the token's times (never the token).

extension IdentityStatus {
    /// `lifecycle`'s state at `now`.
    init(_ lifecycle: TokenLifecycle, at now: Double) {
        let valid = lifecycle.hasValidToken(at: now)
        let token = lifecycle.token
        let stepUp = lifecycle.pendingStepUp(at: now)
        self.init(identity: lifecycle.identity.name, state: Self.state(of: lifecycle, tokenValid: valid, steppingUp: stepUp != nil),
                  hasValidToken: valid,
                  expiresAt: token?.expiresAt, expiresInSeconds: token.map { max(0, $0.expiresAt - now) },
                  refreshAt: token?.refreshAt, tokenType: token?.type, scope: token?.scope,
                  hasRefreshToken: lifecycle.held.refreshToken != nil, nextFetchAt: lifecycle.nextFetchAt(after: now),
                  consecutiveFailures: lifecycle.consecutiveFailures, lastErrorCode: lifecycle.lastError?.code,
                  lastErrorDescription: lifecycle.lastError?.description, loggedInAs: lifecycle.loggedInAs,
                  deviceLogin: lifecycle.login.device?.activeFlow?.prompt(at: now), lastLoginFailure: lifecycle.lastLoginFailure,
                  pendingStepUp: stepUp)
        auto = lifecycle.autoFacts
    }

    private static func state(of lifecycle: TokenLifecycle, tokenValid valid: Bool, steppingUp: Bool) -> State {
        let fetchTaken = lifecycle.activity.isFetchTaken
        // An `auto` identity that has not learnt its server and client can do nothing else yet.
        if let state = lifecycle.resolutionState { return state }
        // Its tokens are its callers': only discovery is the identity's own, and can fail.
        if lifecycle.identity.grant.callerGrant != nil { return lifecycle.discoveryFailing ? .failing : .perCaller }
        // A callback's code waiting for (or in) its exchange is a login finishing, even while an
        // earlier login's token is valid: requests wait for the new one.
        if lifecycle.loginFinishing || ((!valid || steppingUp) && lifecycle.login.device?.isUnderWay == true) { return .loginPending }
        // An upstream asked for more than the token held carries: a person must log in again.
        if steppingUp { return .needsLogin }
        // Discovery is under way: nothing can start yet, not even a login.
        if !valid && lifecycle.endpoints == nil && lifecycle.consecutiveFailures == 0 { return .pending }
        if !valid && !fetchTaken && lifecycle.nextPurpose == nil && !lifecycle.discoveryFailing { return .needsLogin }
        if lifecycle.consecutiveFailures > 0 { return .failing }
        if fetchTaken { return .refreshing }
        return valid ? .valid : .pending
    }
}
