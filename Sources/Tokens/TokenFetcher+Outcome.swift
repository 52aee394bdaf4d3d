// What a token request's outcome does on the token loop: recorded in the lifecycle (waking the
// requests waiting for it), kept in the token stores, logged and counted; or, when a logout came
// while the request was under way, dropped.

import FoundationEssentials
import OAuth2

extension TokenFetcher {
    /// A token request ended: record its outcome and wake the requests waiting for it.
    func record(_ outcome: Result<TokenResponse, TokenEndpointError>, for tokens: IdentityTokens) {
        let now = monotonicSeconds()
        let name = tokens.identity.name
        if let persistence, case .success(let response) = outcome {
            // Kept before any request gets it: what the lifecycle will hold once it has the answer
            // (nothing, when a logout abandoned the fetch).
            let kept = tokens.update { lifecycle -> HeldTokens? in
                guard !lifecycle.isFetchAbandoned else { return nil }
                var after = lifecycle
                after.fetchSucceeded(response, at: now)
                return HeldTokens(after)
            }
            if let kept { persistence.write(kept, for: tokens) }
        }
        let purpose = tokens.update { $0.fetchPurpose }
        // The result and the wake-up of the requests waiting for it, in one step.
        var refreshTokenDropped = false
        var abandoned = false
        var loginFailure: String?
        var held = HeldTokens()
        tokens.publish { lifecycle in
            let refreshTokenBefore = lifecycle.heldRefreshToken
            abandoned = lifecycle.isFetchAbandoned
            switch outcome {
            case .success(let response): lifecycle.fetchSucceeded(response, at: now)
            case .failure(let error): lifecycle.fetchFailed(error, at: now)
            }
            refreshTokenDropped = refreshTokenBefore != nil && lifecycle.heldRefreshToken == nil
            held = HeldTokens(lifecycle)
            loginFailure = lifecycle.lastLoginFailure
            return true
        }
        if abandoned { return fetchAbandoned(outcome, for: tokens) }
        countLogin(purpose, outcome, failure: loginFailure, of: name)
        if let persistence {
            // A refresh token the IdP refused is dropped from the store too, so no process sends it again.
            if refreshTokenDropped { persistence.write(held, for: tokens) }
            persistence.unlock(tokens)
        }
        var obtained = false
        if case .success = outcome { obtained = true }
        shared?.fetchEnded(tokens, obtained: obtained, refreshTokenDropped: refreshTokenDropped, held: held)
        switch outcome {
        case .success(let response):
            warnAboutLifetime(response.lifetimeWarnings, of: tokens)
            logger.info("token obtained", metadata: ["identity": .string(name),
                                                     "expires_in": .stringConvertible(Int(response.expiresIn)),
                                                     "expiry_from": .string(response.expirySource.rawValue)])
            observer?.tokenRequestEnded(identity: name, outcome: .success)
            if isInForce(tokens) {
                observer?.tokenExpiryChanged(identity: name, unixTime: Date().timeIntervalSince1970 + response.expiresIn)
            }
        case .failure(let error) where DeviceFlow.isWaitingForThePerson(error):
            // A device poll before the person acted: the normal answer, not a failure.
            logger.debug("device login pending", metadata: ["identity": .string(name), "answer": .string(error.code)])
        case .failure(let error):
            logger.warning("token request failed", metadata: ["identity": .string(name),
                                                              "error": .string("\(error)")])
            observer?.tokenRequestEnded(identity: name, outcome: TokenRequestOutcome(error))
        }
        runNextAction(tokens)
    }

    /// One warning line naming the identity and the fields whose lifetime was adjusted (never a
    /// value: a hostile answer may put anything there).
    private func warnAboutLifetime(_ warnings: [LifetimeWarning], of tokens: IdentityTokens) {
        let news = lifetimeWarnings.toLog(warnings, slot: tokens.slot)
        guard !news.isEmpty else { return }
        var fields: [String] = []
        for field in news.map(\.field) where !fields.contains(field) { fields.append(field) }
        logger.warning("token lifetime adjusted", metadata: [
            "identity": .string(tokens.identity.name),
            "field": .string(fields.joined(separator: ", ")),
            "detail": .string(news.map(\.description).joined(separator: "; ")),
        ])
    }

    /// A logout came while the fetch was under way: its answer was dropped. The store lock and
    /// the shared lease go, and a refresh token the answer brought is revoked too (best effort), so
    /// the logout leaves no login alive at the IdP.
    private func fetchAbandoned(_ outcome: Result<TokenResponse, TokenEndpointError>, for tokens: IdentityTokens) {
        let name = tokens.identity.name
        persistence?.unlock(tokens)
        shared?.fetchEnded(tokens, obtained: false, refreshTokenDropped: false, held: HeldTokens())
        switch outcome {
        case .success(let response):
            logger.info("token dropped: the identity was logged out while it was fetched", metadata: ["identity": .string(name)])
            observer?.tokenRequestEnded(identity: name, outcome: .success)
            if let refreshToken = response.refreshToken { revokeAfterLogout(refreshToken, of: tokens) }
        case .failure(let error) where DeviceFlow.isWaitingForThePerson(error):
            break  // A device poll before the person acted: no token request failed.
        case .failure(let error):
            observer?.tokenRequestEnded(identity: name, outcome: TokenRequestOutcome(error))
        }
        runNextAction(tokens)
    }
}
