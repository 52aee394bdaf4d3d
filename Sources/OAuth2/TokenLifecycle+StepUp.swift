// A step-up in the token lifecycle (RFC 6750 §3.1 `insufficient_scope`, RFC 9470
// `insufficient_user_authentication`): an upstream answered a person's token with a challenge
// asking for more scope or a stronger (or fresher) authentication. Not a refused token: the
// identity's next login asks for the identity's scope joined with the challenge's (and its
// `acr_values`/`max_age`), and until a login answers it requests get the login problem, as for
// a first login; the token held stays. The login's success makes the joined scope the
// identity's; a person declining it (or letting it time out) ends it, and the same challenge
// then goes to the client as the upstream sent it (`StepUpMemory`: no login loop).

extension TokenLifecycle {
    /// An upstream answered this identity's token (`token`, when known) with a challenge asking
    /// for `stepUp`. A token no longer the current one (a login replaced it meanwhile) counts as
    /// granted: the request is handled as a refused token, and goes again with the new one.
    public mutating func stepUp(_ stepUp: StepUp, token value: String? = nil, at now: Double) -> StepUpOutcome {
        guard identity.grant.isInteractive else { return .alreadyGranted }
        if let value, let held = token, held.value != value { return .alreadyGranted }
        // Not for an upstream to ask: the challenge goes to the client as it came.
        guard let stepUp = stepUp.admissible(within: stepUpScopeBound) else { return .declined }
        login.stepUps.expire(at: now)
        if login.stepUps.isDeclined(stepUp) { return .declined }
        // The token a step-up login brought, refused for what that login asked: another login
        // would bring the same token (an IdP that grants no more, an upstream that wants more).
        if login.stepUps.answers(stepUp, at: now) { return .declined }
        if stepUp.acrValues.isEmpty, stepUp.maxAge == nil {
            // RFC 6749 §5.1: a token answer without `scope` was granted the scope asked for.
            let granted = Set((token?.scope ?? identity.scope ?? "").split(separator: " ").map(String.init))
            if granted.isSuperset(of: stepUp.scope) { return .alreadyGranted }
        }
        guard login.stepUps.ask(stepUp, at: now, timeoutSeconds: identity.loginTimeoutSeconds) else { return .declined }
        return .loginNeeded(stepUpProblem(login.stepUps.pending(at: now) ?? stepUp))
    }

    /// The step-up an upstream asked for and no login has answered yet (nil: none).
    public func pendingStepUp(at now: Double) -> StepUp? {
        login.stepUps.pending(at: now)
    }

    /// The identity as its next login asks for it: with the pending step-up's scope joined to
    /// its own. The step-up itself (for `acr_values`/`max_age`) comes with it.
    public func loginIdentity(at now: Double) -> (identity: Identity, stepUp: StepUp?) {
        guard let stepUp = login.stepUps.pending(at: now) else { return (identity, nil) }
        var widened = identity
        widened.scope = stepUp.widening(identity.scope)
        return (widened, stepUp)
    }

    /// A browser login starts now: a pending step-up waits for it (its timeout counts from
    /// now). Returns the identity and step-up it asks for (`loginIdentity`).
    public mutating func browserLoginStarts(at now: Double) -> (identity: Identity, stepUp: StepUp?) {
        login.stepUps.expire(at: now)
        login.stepUps.loginStarted(at: now, timeoutSeconds: identity.loginTimeoutSeconds)
        return loginIdentity(at: now)
    }

    /// A login ended without a token because the person declined it, the IdP refused it or it
    /// timed out: the pending step-up (and `stepUp`, the one that login carried) is declined.
    /// Returns whether one was.
    @discardableResult
    public mutating func stepUpDeclined(also stepUp: StepUp? = nil) -> Bool {
        guard login.stepUps.pending != nil || stepUp != nil else { return false }
        login.stepUps.decline(also: stepUp)
        return true
    }

    /// A login's fetch brought `response`'s token at `now`. A browser or device login that
    /// carried a step-up (its authorization asked for it) is judged against it
    /// (`StepUpVerdict`): the identity's scope widens by the asked scopes the token was granted
    /// (and for an auto identity is kept with its registration); a step-up the token meets is
    /// over, one it does not meet is declined (the same challenge then goes to the client).
    mutating func stepUpAnswered(by fetch: FetchInFlight?, response: TokenResponse, at now: Double) {
        guard let carried = fetch?.stepUp else { return }
        let verdict = StepUpVerdict(asked: carried, grantedScope: response.scope, authentication: fetch?.authentication)
        identity.scope = verdict.granted.widening(identity.scope)
        if verdict.unmet == nil {
            login.stepUps.met(carried, at: now)
        } else {
            login.stepUps.unmet(carried)
        }
    }

    /// The login problem while `stepUp` is pending.
    func stepUpProblem(_ stepUp: StepUp) -> TokenUnavailable {
        TokenUnavailable(identity: identity.name, reason: .needsLogin,
                         detail: "identity \(identity.name): the upstream asked for \(stepUp): log in again to grant it")
    }
}

extension StepUp {
    /// Scopes no upstream's challenge adds to a login: whether the login is an OpenID one and
    /// whether it brings a refresh token are the identity's choices, not an upstream's.
    static let identityOwnScopes: Set<String> = ["openid", "offline_access"]

    /// This step-up as an upstream may ask it of an identity whose step-ups are bounded by
    /// `bound` (nil: any scope): without `identityOwnScopes`; nil when it then asks for nothing,
    /// or asks for a scope outside `bound` (no login: the challenge goes to the client).
    func admissible(within bound: Set<String>?) -> StepUp? {
        var kept = self
        kept.scope = scope.filter { !Self.identityOwnScopes.contains($0) }
        if kept.scope.isEmpty, kept.acrValues.isEmpty, kept.maxAge == nil { return nil }
        if let bound, !bound.isSuperset(of: kept.scope) { return nil }
        return kept
    }

    /// The bound of an `auto` identity's step-up scopes: its configured `auto.scope` when set,
    /// else the resource metadata's `scopes_supported` when it lists any, wherever the scope of
    /// the first login came from (a challenge's scope bounds nothing: the next challenge could
    /// name any other). Nil: neither known, no bound.
    static func scopeBound(autoScope: String?, facts: AutoFacts) -> Set<String>? {
        if let autoScope { return Set(autoScope.split(separator: " ").map(String.init)) }
        return facts.scopesSupported.isEmpty ? nil : Set(facts.scopesSupported)
    }
}
