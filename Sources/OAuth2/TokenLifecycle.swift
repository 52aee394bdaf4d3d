// The OAuth2 module: everything about access tokens that needs no socket, no file and no
// clock, so all of it is tested without a network.
//
// - `TokenRequest` builds a request to an identity's token endpoint (every grant, client
//   authentication, form encoding) as plain values the relay's HTTP client sends, and reads
//   the answer into a `TokenResponse` or a `TokenEndpointError` (RFC 6749 §5.2 errors and
//   what real IdPs send instead: HTML pages, bare statuses, `Retry-After`).
// - `TokenEndpointSecurity` decides whether a token URL may be plain `http://`.
// - `TokenLifecycle` (this file) is the state machine of one identity's token: when to fetch,
//   which grant to use, what a request gets meanwhile, how failures back off.
// - Every token or secret appears in a description as SafeText's `redacted(_:)` shows it: `…`
//   and at most its last four characters. No description, debug description or mirror of a
//   type here shows more.
//
// How the relay drives a lifecycle: one per identity, behind a lock (`Locked`, Locking/Locked.swift), shared by all loops.
// Times are seconds in one monotonic clock the relay reads and passes in (`now`); the
// wall-clock time goes only to `TokenRequest.parseResponse` (JWT `exp`, HTTP dates).
//
// 1. After every event below, and when the timer it asked for fires, call `nextAction(at:)`:
//    send the request of a `.fetch`, arm a timer for a `.sleep`, do nothing for `.idle`. At
//    most one request is ever in flight, so any number of waiting requests cause exactly one.
// 2. Report the outcome: `fetchSucceeded(_:at:)` with the parsed response, or
//    `fetchFailed(_:at:)` with the parse error or the HTTP client's `unreachable`/`timedOut`.
//    Then wake the requests that were told to `.wait`; they ask again. After a logout
//    (`forget()`) the fetch in flight is still reported, and dropped: `isFetchAbandoned` says so
//    beforehand, so that the token thread stores nothing of it.
// 3. A request asks `decision(at:)`: `.inject` a valid token, `.wait`, or `.fail` with the
//    problem to answer (502 refused, 503 + Retry-After unavailable, 401 needs login). The
//    hot path may skip the lock while its snapshot's token is before `refreshAt`.
// 4. When an upstream rejects a token (a `retryOnStatus` status), `refused(token:at:minimumAge:)`;
//    it drops the token only if it is still the current one, so a burst of 401s for one token
//    causes one new fetch, and it keeps a token that was itself fetched after a refusal until
//    that token is `minimumAge` old, so an upstream that refuses for other reasons (a missing
//    permission) cannot turn its 401s into a stream of token requests.

import HTTPFields
import SafeText

/// The state machine of one identity's access token.
///
/// Rules: a token is refreshed at `refreshAt` (`RefreshSchedule`), in the background while it
/// stays valid, and an expired token is never handed out. A fetch uses the refresh token when
/// there is one and the identity's own grant otherwise; a refresh token the endpoint rejects
/// with `invalid_grant` is dropped and the own grant is used at once (or, for an interactive
/// identity, a login is needed). A refresh response without a refresh token keeps the old
/// one. Failures back off (`BackoffPolicy`, honouring `Retry-After`); while they last a valid
/// token is still used, and without one requests fail fast.
///
/// Its sub-states are types of their own, each an enum (or holding one) whose transitions are
/// its methods, so no impossible combination can be written: what is under way at the IdP
/// (`TokenActivity`, a fetch being a `FetchInFlight`), a person's logins (`LoginState`, with its
/// `DeviceLogin`), the tokens held (`HeldCredentials`, with its `RefusalMemory`) and the failures
/// in a row (`FetchFailures`). This type says how events move them together.
public struct TokenLifecycle: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The identity as configured; an `auto` one as learnt once `resolved`.
    public internal(set) var identity: Identity
    public var backoff: BackoffPolicy {
        get { failures.policy }
        set { failures.policy = newValue }
    }
    /// The latest token, valid or not (nil before the first, after a refusal or a logout).
    public var token: AccessToken? { held.token }
    /// The last failure, kept after a recovery for the `/identities` view.
    public var lastError: TokenEndpointError? { failures.last }
    public var consecutiveFailures: Int { failures.consecutive }
    /// Failures in a row and the backoff they cause, and the last failure.
    var failures: FetchFailures
    /// The tokens held, and what an upstream's refusal left to remember.
    var held = HeldCredentials()
    /// What is under way at the IdP: discovery, a fetch, or a fetch a logout abandoned.
    var activity = TokenActivity.idle
    /// Before this time no fetch starts (backoff).
    var retryAt: Double? { failures.retryAt }
    /// An operator asked for a new token now (`refreshNow`); the next fetch started takes it.
    private var refreshRequested = false
    /// The IdP endpoints in use: as configured, or nil until discovery has completed them.
    public internal(set) var endpoints: IdentityEndpoints?
    /// A person's logins: a code waiting for its exchange, a device login, who logged in.
    var login = LoginState()
    /// An `auto` identity's learning: not yet, only configuration can help, or learnt.
    var autoProgress = AutoProgress.unresolved
    /// The scopes an upstream's step-up may ask for (nil: any): an `auto` identity's
    /// `auto.scope`, else its resource's `scopes_supported`, once resolved.
    var stepUpScopeBound: Set<String>?
    /// Who logged in, as the ID token names them (`preferred_username`, `email` or `sub`).
    public var loggedInAs: String? { login.loggedInAs }
    /// Why the last login ended without a token (for the login pages); nil after a success.
    public var lastLoginFailure: String? { login.lastFailure }

    public init(identity: Identity, backoff: BackoffPolicy = BackoffPolicy(),
                random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()) {
        self.identity = identity
        failures = FetchFailures(policy: backoff, random: random)
        // The `refresh_token` grant's seed is part of its own grant request; an interactive
        // identity's seed stands in for a first login.
        held.refreshToken = identity.grant.interactiveSeed
        endpoints = identity.configuredEndpoints
    }

    // MARK: - Questions

    /// What the next fetch would be: a refresh while a refresh token is held, else the
    /// identity's own grant; nil when only a person logging in can help.
    var nextPurpose: TokenRequest.Purpose? {
        if login.waitingCode != nil { return .grant(.authorizationCode) }
        // A device login for a step-up polls the token endpoint: no refresh meanwhile. One that
        // replaces the person leaves the tokens held in use until its token comes, so they are
        // refreshed meanwhile (one fetch at a time: refreshes and polls take turns).
        if held.refreshToken != nil && (login.device == nil || login.deviceReplacesPerson) { return .refresh }
        // A grant on behalf of the caller fetches only for a caller (`TokenRequest.exchange`).
        return identity.grant.isInteractive || identity.grant.callerGrant != nil ? nil : .grant(identity.grant.type)
    }

    public var isFetching: Bool { activity.fetch != nil }

    /// A logout came while the fetch in flight was under way: its answer will be dropped (a
    /// refresh token it brings is the token thread's to revoke).
    public var isFetchAbandoned: Bool { activity.isFetchAbandoned }

    /// The nonce the ID token of the code exchange in flight must carry.
    public var expectedNonce: Secret? { activity.fetch?.nonce }

    /// The `max_age` the login of the code exchange in flight asked for (a step-up's): its ID
    /// token's `auth_time` must be no older.
    public var expectedMaxAge: Int? { activity.fetch?.stepUp?.maxAge }

    /// A callback's code waits for (or is in) its exchange: a login is finishing, and requests
    /// wait for its token rather than carry an earlier one.
    var loginFinishing: Bool {
        login.waitingCode != nil || (activity.isFetchTaken && activity.fetch?.purpose == .grant(.authorizationCode))
    }

    /// What the fetch in flight is for.
    public var fetchPurpose: TokenRequest.Purpose? { activity.fetch?.purpose }

    public func hasValidToken(at now: Double) -> Bool {
        token?.isValid(at: now) ?? false
    }

    /// When the next fetch is due (`now` when it already is); nil while one is in flight or
    /// when a login is needed. Arm a timer for it.
    public func nextFetchAt(after now: Double) -> Double? {
        guard activity.fetch == nil, nextPurpose != nil, endpoints != nil else { return nil }
        // A person waits on a login's code exchange, and the code is single-use: no backoff.
        if refreshRequested || login.waitingCode != nil { return now }
        return max(now, token?.refreshAt ?? now, retryAt ?? now)
    }

    public func shouldStartFetch(at now: Double) -> Bool {
        nextFetchAt(after: now) == now
    }

    /// What a request does about its token now.
    public func decision(at now: Double) -> TokenDecision {
        if let grant = identity.grant.callerGrant {
            return .fail(TokenUnavailable(identity: identity.name, reason: .refused,
                                          detail: "identity \(identity.name) has no token of its own: it exchanges each caller's "
                                              + "token (\(grant.configKey): \"caller\"), one token per caller"))
        }
        if let answer = resolutionDecision(at: now) { return answer }
        if let stepUp = login.stepUps.pending(at: now) {
            // The token held does not do: requests wait for a login finishing, or are told to log in.
            if loginFinishing || login.awaitingStoredLogin { return .wait }
            if let device = login.device?.decision(identity: identity, holdsRefreshToken: false, at: now) { return device }
            return .fail(stepUpProblem(stepUp))
        }
        if let token, token.isValid(at: now) {
            // A person just logged in again (another tab, maybe as someone else): requests wait
            // for that login's token rather than carry the previous one.
            return loginFinishing ? .wait : .inject(token)
        }
        if login.awaitingStoredLogin { return .wait }
        if let waiting = login.device?.decision(identity: identity, holdsRefreshToken: held.refreshToken != nil, at: now) {
            return waiting
        }
        if !activity.isFetchTaken, nextPurpose == nil, !discoveryFailing {
            if case .deviceCode = identity.grant, let seconds = login.deviceBackoff.retryAfterSeconds(at: now) {
                return .fail(TokenUnavailable(identity: identity.name, reason: .needsLogin, retryAfterSeconds: seconds,
                                              detail: "identity \(identity.name) needs an interactive login (\(identity.grant) grant); "
                                                  + "the last device login ended without a token, so a request starts the next one in "
                                                  + "\(seconds) s (`oauth-relay login` starts one now)"))
            }
            return .fail(TokenUnavailable(identity: identity.name, reason: .needsLogin,
                                          detail: "identity \(identity.name) needs an interactive login (\(identity.grant) grant)"))
        }
        return failures.problem(identity: identity.name, discoveryFailing: discoveryFailing, at: now).map { .fail($0) } ?? .wait
    }

    /// The identity's state for `/identities` and `/readyz`.
    public func status(at now: Double) -> IdentityStatus {
        IdentityStatus(self, at: now)
    }

    // MARK: - Events

    /// What to do now: start the fetch that is due (marked in flight), or sleep until the next
    /// one is, or nothing until an event.
    public mutating func nextAction(at now: Double) -> TokenAction {
        if needsResolution { return nextResolutionAction(at: now) }
        if endpoints == nil { return nextDiscoveryAction(at: now) }
        if let device = nextDeviceAction(at: now) { return device }
        if let request = startFetchIfDue(at: now) { return .fetch(request) }
        guard let due = nextFetchAt(after: now) else { return .idle }
        return .sleep(until: due)
    }

    /// Starts the fetch that is due now, if one is: marks it in flight and returns the request
    /// to send. Nil while another is in flight, during backoff, while the token does not need
    /// a refresh yet, and when a login is needed.
    public mutating func startFetchIfDue(at now: Double) -> TokenRequest? {
        guard shouldStartFetch(at: now), let purpose = nextPurpose,
              let request = prepareFetch(purpose, startedAt: now, requested: refreshRequested) else { return nil }
        refreshRequested = false
        return request
    }

    /// Puts a fetch for `purpose` in flight and returns its request (nil, and nothing changed,
    /// when there is none): a code exchange takes the waiting code (and its nonce) into the
    /// fetch, so a callback arriving meanwhile cannot change it.
    mutating func prepareFetch(_ purpose: TokenRequest.Purpose, startedAt: Double, requested: Bool) -> TokenRequest? {
        guard let request = request(for: purpose) else { return nil }
        if purpose == .grant(.authorizationCode), let exchange = login.waitingCode {
            activity = .fetching(FetchInFlight(startedAt: startedAt, kind: .codeExchange(exchange, subject: nil)))
            login.waitingCode = nil
        } else {
            activity = .fetching(FetchInFlight(startedAt: startedAt, kind: .rebuildable(purpose, requested: requested)))
        }
        return request
    }

    /// The fetch in flight produced a token (dropped when a logout abandoned the fetch). Also how
    /// an interactive login's token arrives (with no fetch in flight, its lifetime counts from
    /// `now`).
    public mutating func fetchSucceeded(_ response: TokenResponse, at now: Double) {
        let ended = activity.endFetch()
        if ended?.abandoned == true { return }
        let fetch = ended?.fetch
        let issuedAt = fetch?.startedAt ?? now
        let expiresAt = issuedAt + response.expiresIn
        guard expiresAt > now else {
            // Refetching at once would loop as fast as the endpoint answers.
            failures.record(.invalidTokenResponse(status: 200, contentType: nil, reason: "the token expired before it arrived"), at: now)
            return
        }
        held.take(response, issuedAt: issuedAt, expiresAt: expiresAt, identity: identity, replacesPerson: login.replacesPerson(by: fetch))
        autoClientProven()
        stepUpAnswered(by: fetch, response: response, at: now)
        login.tokenArrived(from: fetch)
        failures.streakEnded()
    }

    /// The fetch in flight failed.
    public mutating func fetchFailed(_ error: TokenEndpointError, at now: Double) {
        let ended = activity.endFetch()
        if ended?.abandoned == true { return }
        let purpose = ended?.fetch.purpose
        if purpose == .grant(.authorizationCode) {
            // The code was used (or refused): the person must log in again (a code another
            // callback brought meanwhile goes next). Not a backoff.
            failures.last = error
            login.exchangeFailed(error)
            // A step-up login refused for good (its ID token too old for the max_age asked): asking
            // again would send the person round the same login.
            if let stepUp = ended?.fetch.stepUp, !error.isTemporary { stepUpDeclined(also: stepUp) }
            return
        }
        if purpose == .grant(.deviceCode) {
            // `authorization_pending` and `slow_down` go on; the rest may end the login.
            if login.devicePollFailed(error, at: now) { failures.last = error }
            return
        }
        if purpose == .refresh, error.oauthError?.code == .invalidGrant {
            // The refresh token is dead: never send it again, fall back to the grant now (an
            // interactive identity needs a login again).
            held.refreshToken = nil
            failures.last = error
            // (Not while a login replaces the person: its own end is what the operator watches.)
            if identity.grant.isInteractive && !login.deviceReplacesPerson {
                login.lastFailure = "the login has ended: the IdP refused the refresh token (\(error.code))"
            }
            return
        }
        failures.record(error, at: now)
    }

    /// The request of a fetch for `purpose`, at the token endpoint in use (nil without one, or
    /// without the refresh token a refresh needs).
    func request(for purpose: TokenRequest.Purpose) -> TokenRequest? {
        guard let tokenEndpoint = endpoints?.token else { return nil }
        switch purpose {
        case .refresh: return held.refreshToken.map { TokenRequest.refresh(for: identity, refreshToken: $0, at: tokenEndpoint) }
        case .grant(.authorizationCode): return login.waitingCode?.request
        case .grant: return TokenRequest.grant(for: identity, at: tokenEndpoint)
        case .deviceAuthorization, .revocation, .introspection: return nil  // Not fetches of a lifecycle.
        }
    }

    /// An operator asked for a new token (`POST /identities/NAME/refresh`): the next fetch is
    /// due at once, backoff or not; the current token stays in use until the new one arrives.
    public mutating func refreshNow() {
        refreshRequested = true
    }

    /// Forgets the token and the refresh token (`DELETE /identities/NAME/token`, the seeds'
    /// logout): the next request waits for a fetch with the identity's own grant (an
    /// interactive identity needs a login again). A fetch under way is abandoned: its answer
    /// would bring the forgotten login back. A code waiting for its exchange is dropped, and the
    /// step-ups pending and declined are forgotten.
    public mutating func forget() {
        held.forget()
        login.forgotten()
        activity.abandonFetch()
    }

    // MARK: - Descriptions (never a token)

    public var description: String {
        "TokenLifecycle(\(identity.name): token \(token?.description ?? "none"), refresh token \(held.refreshToken?.description ?? "none"), "
            + "\(activity.fetch.map { "fetching (\($0.purpose))" } ?? "idle"), \(consecutiveFailures) failures"
            + (lastError.map { ", last error \($0.code)" } ?? "") + ")"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["lifecycle": description], displayStyle: .struct)
    }
}
