// TokenRequests: a fetch's token request on the token loop — sent through IdPClient (a login's
// ID token checked before its tokens are taken), and its outcome recorded in the lifecycle
// (waking the requests waiting for it), kept by the identity's fetch strategy (its stores),
// logged and counted; or, when a logout came while the request was under way, dropped; or, once
// stopping, kept for the next process. What a store's entry brings is taken here too.

import FoundationEssentials
import Logging
import OAuth2
import SafeText

/// Runs on the token loop only.
final class TokenRequests {
    private let idp: IdPClient
    private let idTokens: IDTokenChecks
    private let logouts: Logouts
    private let logger: Logger
    private let observer: (any TokenObserver)?
    private unowned let schedule: any FetchSchedule
    private var lifetimeWarnings = LifetimeWarningMemory()
    /// An `auto` identity's registered client was refused with `invalid_client` (AutoResolver.clientUnknown).
    private let clientUnknown: (IdentityTokens, TokenEndpointError) -> Void
    /// An `auto` identity's login is about to widen its scope (AutoResolver.scopeLearnt).
    private let scopeLearnt: (IdentityTokens, Identity) -> Void

    init(idp: IdPClient, idTokens: IDTokenChecks, logouts: Logouts, logger: Logger, observer: (any TokenObserver)?,
         schedule: any FetchSchedule, clientUnknown: @escaping (IdentityTokens, TokenEndpointError) -> Void = { _, _ in },
         scopeLearnt: @escaping (IdentityTokens, Identity) -> Void = { _, _ in }) {
        self.idp = idp
        self.clientUnknown = clientUnknown
        self.scopeLearnt = scopeLearnt
        self.idTokens = idTokens
        self.logouts = logouts
        self.logger = logger
        self.observer = observer
        self.schedule = schedule
    }

    /// A reload retired the slot.
    func forget(slot: Int) {
        lifetimeWarnings.forget(slot: slot)
    }

    /// Sends a fetch's token request; its outcome is recorded (or, once stopping, kept).
    func send(_ request: TokenRequest, for tokens: IdentityTokens) {
        idp.requestToken(request, for: tokens) { [self] outcome in
            if case .success(let response) = outcome, request.purpose == .grant(.authorizationCode) {
                // A login's tokens are taken only once its ID token has passed its checks.
                idTokens.check(of: response, for: tokens) { [self] checked in fetchEnded(checked, for: tokens) }
            } else {
                fetchEnded(outcome, for: tokens)
            }
        }
    }

    /// A fetch's token request (and, for a login, its ID token check) ended: recorded, or once
    /// stopping, kept for the next process, so its store lock and shared lease are released
    /// either way.
    private func fetchEnded(_ outcome: Result<TokenResponse, TokenEndpointError>, for tokens: IdentityTokens) {
        if idp.isStopped {
            keepWhileStopping(outcome, for: tokens)
        } else {
            record(outcome, for: tokens)
        }
    }

    /// A request let finish while stopping: its token, and above all the refresh token a rotating
    /// IdP may have just replaced (revoking the one sent), go to the store for the next process.
    /// A failure (a cancelled ID token check among them) keeps nothing, but the lock and the
    /// lease go all the same: the loop cannot end while the shared lease is held.
    private func keepWhileStopping(_ outcome: Result<TokenResponse, TokenEndpointError>, for tokens: IdentityTokens) {
        let strategy = schedule.strategy(for: tokens)
        var kept: HeldTokens?
        if case .success(let response) = outcome {
            let now = monotonicSeconds()
            kept = tokens.update { lifecycle -> HeldTokens? in
                // A logout came meanwhile: nothing of this answer is kept.
                let abandoned = lifecycle.isFetchAbandoned
                lifecycle.fetchSucceeded(response, at: now)
                return abandoned ? nil : HeldTokens(lifecycle)
            }
            if let kept, strategy.keepsTokens { strategy.keep(kept, for: tokens) }
        }
        strategy.fetchEnded(tokens, obtained: kept != nil, refreshTokenDropped: false, held: kept ?? HeldTokens())
    }

    /// A token request ended: record its outcome and wake the requests waiting for it.
    func record(_ outcome: Result<TokenResponse, TokenEndpointError>, for tokens: IdentityTokens) {
        let now = monotonicSeconds()
        let name = tokens.identity.name
        let strategy = schedule.strategy(for: tokens)
        if tokens.configured.auto != nil, case .success(let response) = outcome {
            // A step-up login's answer widens the scope: kept with the registration, and the
            // tokens go to the entry of the widened settings.
            let widened = tokens.update { lifecycle -> Identity? in
                guard !lifecycle.isFetchAbandoned else { return nil }
                var after = lifecycle
                after.fetchSucceeded(response, at: now)
                return after.identity.scope != lifecycle.identity.scope ? after.identity : nil
            }
            if let widened { scopeLearnt(tokens, widened) }
        }
        if strategy.keepsTokens, case .success(let response) = outcome {
            // Kept before any request gets it: what the lifecycle will hold once it has the answer
            // (nothing, when a logout abandoned the fetch).
            let kept = tokens.update { lifecycle -> HeldTokens? in
                guard !lifecycle.isFetchAbandoned else { return nil }
                var after = lifecycle
                after.fetchSucceeded(response, at: now)
                return HeldTokens(after)
            }
            if let kept { strategy.keep(kept, for: tokens) }
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
        var obtained = false
        if case .success = outcome { obtained = true }
        // A refresh token the IdP refused is dropped from the stores too, so no process sends it again.
        strategy.fetchEnded(tokens, obtained: obtained, refreshTokenDropped: refreshTokenDropped, held: held)
        switch outcome {
        case .success(let response):
            warnAboutLifetime(response.lifetimeWarnings, of: tokens)
            logger.info("token obtained", metadata: ["identity": .string(name),
                                                     "expires_in": .stringConvertible(Int(response.expiresIn)),
                                                     "expiry_from": .string(response.expirySource.rawValue)])
            observer?.tokenRequestEnded(identity: name, outcome: .success)
            if schedule.isInForce(tokens) {
                observer?.tokenExpiryChanged(identity: name, unixTime: Date().timeIntervalSince1970 + response.expiresIn)
            }
        case .failure(let error) where DeviceFlow.isWaitingForThePerson(error):
            // A device poll before the person acted: the normal answer, not a failure.
            logger.debug("device login pending", metadata: ["identity": .string(name), "answer": .string(error.code)])
        case .failure(let error):
            logger.warning("token request failed", metadata: ["identity": .string(name),
                                                              "error": .string("\(error)")])
            observer?.tokenRequestEnded(identity: name, outcome: TokenRequestOutcome(error))
            // A registered client the server no longer knows: dropped, and registered again.
            if tokens.configured.auto != nil, error.oauthError?.code == .invalidClient { clientUnknown(tokens, error) }
        }
        schedule.runNextAction(tokens)
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
        schedule.strategy(for: tokens).fetchEnded(tokens, obtained: false, refreshTokenDropped: false, held: HeldTokens())
        switch outcome {
        case .success(let response):
            logger.info("token dropped: the identity was logged out while it was fetched", metadata: ["identity": .string(name)])
            observer?.tokenRequestEnded(identity: name, outcome: .success)
            if let refreshToken = response.refreshToken { logouts.revokeAfterLogout(refreshToken, of: tokens) }
        case .failure(let error) where DeviceFlow.isWaitingForThePerson(error):
            break  // A device poll before the person acted: no token request failed.
        case .failure(let error):
            observer?.tokenRequestEnded(identity: name, outcome: TokenRequestOutcome(error))
        }
        schedule.runNextAction(tokens)
    }

    /// A login's last step ended (a code exchange, or a device poll that ended the flow).
    private func countLogin(_ purpose: TokenRequest.Purpose?, _ outcome: Result<TokenResponse, TokenEndpointError>, failure: String?,
                            of name: String) {
        let kind: LoginKind
        switch purpose {
        case .grant(.authorizationCode)?: kind = .browser
        case .grant(.deviceCode)?: kind = .device
        default: return
        }
        switch outcome {
        case .success:
            observer?.loginEnded(identity: name, kind: kind, outcome: .completed)
        case .failure(let error) where kind == .browser:
            observer?.loginEnded(identity: name, kind: kind, outcome: .failed(error.metricLabel))
        case .failure(let error):
            // A device poll: only an answer that ends the flow ends the login.
            guard !DeviceFlow.isWaitingForThePerson(error), !error.isTemporary, failure != nil else { return }
            observer?.loginEnded(identity: name, kind: kind, outcome: .failed(error.metricLabel))
        }
    }

    /// Lets the lifecycle of `tokens` take what an entry read from `source` holds (its newer
    /// token, its refresh token); returns what is left to do and the token taken, if any.
    func adoptStoredEntry(_ token: AccessToken?, refreshToken: Secret?, for tokens: IdentityTokens,
                          from source: String) -> (outcome: TokenLifecycle.StoredEntryOutcome, adopted: AccessToken?) {
        let now = monotonicSeconds()
        var outcome = TokenLifecycle.StoredEntryOutcome.satisfied
        var adopted: AccessToken?
        tokens.publish { lifecycle in
            let before = lifecycle.token?.serial
            outcome = lifecycle.storedEntryRead(token, refreshToken: refreshToken, at: now)
            adopted = lifecycle.token?.serial != before ? lifecycle.token : nil
            return adopted != nil
        }
        if let adopted {
            logger.info("token read from \(source)", metadata: ["identity": .string(tokens.identity.name),
                                                               "expires_in": .stringConvertible(Int(adopted.expiresAt - now))])
            if schedule.isInForce(tokens) {
                observer?.tokenExpiryChanged(identity: tokens.identity.name,
                                             unixTime: Date().timeIntervalSince1970 + adopted.expiresAt - now)
            }
        }
        return (outcome, adopted)
    }
}
