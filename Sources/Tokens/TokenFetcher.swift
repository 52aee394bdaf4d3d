// TokenFetcher: the token thread's side of the token service. It runs on the token loop only:
// it adopts identity sets, sends each due token request (through HTTPClient), records results
// (waking the requests that waited for them, see IdentityTokens.swift) and arms refresh timers.

import Endpoints
import EventLoop
import FoundationEssentials
import HTTPClient
import HTTPFields
import JOSE
import Logging
import OAuth2
import SafeText
import TLS
import TokenStore

/// Runs on the token loop only.
final class TokenFetcher {
    let loop: EventLoop
    private var limits: HTTPClientLimits
    let logger: Logger
    let observer: (any TokenObserver)?
    private(set) var inbox: TokenInbox!
    private var wakeup: LoopWakeup!
    /// The identities in force.
    private var identities: [IdentityTokens] = []
    /// Identities a reload replaced or removed; kept while requests still wait for them.
    private var retired: [IdentityTokens] = []
    private var tls: [Int: TLSConfiguration] = [:]
    /// Each identity's IdP keys for ID tokens, once fetched.
    var keySets: [Int: JWKSet] = [:]
    /// Refresh timers, by slot, of the identities in force.
    private var timers: [Int: LoopTimer] = [:]
    /// Every request to an IdP under way, so stopping can cancel them.
    private let calls = IdPCalls()
    var lifetimeWarnings = LifetimeWarningMemory()
    /// Logouts whose revocation waits for the identity's discovery (TokenFetcher+Logout.swift).
    var revocationsAwaitingDiscovery: [Int: [PendingRevocation]] = [:]
    private(set) var stopping = false
    /// The token store, when the configuration has one (TokenPersistence.swift).
    let persistence: TokenPersistence?
    /// The token endpoints' DPoP nonces (TokenFetcher+DPoP.swift).
    let dpopNonces = TokenEndpointNonces()
    /// The store shared by replicas through Redis, when configured (SharedTokens.swift).
    private(set) var shared: SharedTokens?

    init(loop: EventLoop, limits: HTTPClientLimits, logger: Logger, observer: (any TokenObserver)?, store: TokenStore? = nil,
         sharedStore: SharedStoreSettings? = nil) {
        self.loop = loop
        self.limits = limits
        self.logger = logger
        self.observer = observer
        persistence = store.map { TokenPersistence(store: $0, loop: loop, logger: logger, observer: observer) }
        wakeup = LoopWakeup(loop: loop) { [unowned self] in
            for message in inbox.takeAll() where !stopping { handle(message) }
            // A retired identity goes once nothing waits for it and its last request ended.
            retired.removeAll { tokens in
                guard !tokens.hasWaiters, !calls.hasRequest(slot: tokens.slot), !tokens.update({ $0.isFetching }) else { return false }
                tls[tokens.slot] = nil
                keySets[tokens.slot] = nil
                return true
            }
        }
        inbox = TokenInbox(wakeup: wakeup)
        shared = sharedStore.map { SharedTokens(settings: $0, loop: loop, logger: logger, observer: observer, driver: self) }
    }

    /// The one entry point of the token loop's work (TokenInbox.swift).
    func handle(_ message: TokenMessage) {
        switch message {
        case .adopt(let update):
            adopt(update)
        case .needToken(let tokens):
            if !isInForce(tokens) && !retired.contains(where: { $0 === tokens }) { retired.append(tokens) }
            runNextAction(tokens)
        case .reconsider(let tokens):
            runNextAction(tokens)
        case .fetchEnded(let tokens, let outcome):
            record(outcome, for: tokens)
        case .logout(let tokens, let refreshToken, let completion):
            logout(tokens, refreshToken: refreshToken, completion: completion)
        case .stop:
            stop()
        }
    }

    private func adopt(_ update: FetcherUpdate) {
        let inForce = Set(update.identities.map(\.slot))
        for tokens in identities where !inForce.contains(tokens.slot) {
            timers.removeValue(forKey: tokens.slot)?.close()
            lifetimeWarnings.forget(slot: tokens.slot)
            persistence?.forget(slot: tokens.slot)
            dpopNonces.forget(slot: tokens.slot)
            shared?.forget(slot: tokens.slot)
            retired.append(tokens)
        }
        for tokens in update.identities where timers[tokens.slot] == nil {
            timers[tokens.slot] = LoopTimer(loop: loop) { [unowned self] in self.runNextAction(tokens) }
            if tokens.identity.grant.isInteractive { readStoredLogin(tokens) }
        }
        // Retired identities keep the TLS configuration they fetched with.
        for (slot, configuration) in update.tls { tls[slot] = configuration }
        identities = update.identities
        limits = update.limits
        // New identities fetch at once; kept ones go on as scheduled.
        for tokens in identities { runNextAction(tokens) }
    }

    func isInForce(_ tokens: IdentityTokens) -> Bool { timers[tokens.slot] != nil }

    /// The replicas' shared store, for an identity whose tokens go there: tokens bound to a DPoP
    /// key this process generated are of no use to another replica, so their fetches, their stored
    /// login's reads and their logouts stay on this replica.
    func sharedStore(for tokens: IdentityTokens) -> SharedTokens? {
        TokenPersistence.isStored(tokens) ? shared : nil
    }

    /// Asks the identity's lifecycle what to do now, and does it.
    func runNextAction(_ tokens: IdentityTokens) {
        guard !stopping else { return }
        // A retired identity fetches only for requests that still wait for it.
        guard isInForce(tokens) || tokens.hasWaiters else { return }
        let now = monotonicSeconds()
        switch tokens.update({ $0.nextAction(at: now) }) {
        case .fetch(let request):
            timers[tokens.slot]?.stop()
            guard let shared = sharedStore(for: tokens) else { return fetchLocally(request, for: tokens) }
            shared.fetchDue(tokens, request: request, retired: !isInForce(tokens),
                            leaseMilliseconds: LeaseDuration.milliseconds(of: tokens.identity, limits: limits))
        case .sleep(let due):
            timers[tokens.slot]?.start(afterMilliseconds: UInt64(max(0, (due - now) * 1000).rounded(.up)))
        case .idle:
            timers[tokens.slot]?.stop()
        case .discover:
            timers[tokens.slot]?.stop()
            discover(tokens)
        case .authorizeDevice(let request):
            timers[tokens.slot]?.stop()
            authorizeDevice(tokens, request)
        }
    }

    /// A person's login kept in the store (an interactive identity asks nothing of the IdP
    /// before it has a refresh token, so the fetch path would never read it).
    /// With replicas sharing tokens the shared entry is read first (a person logged in through
    /// another replica), then the file store's; the shared one again whenever another replica
    /// writes it.
    private func readStoredLogin(_ tokens: IdentityTokens) {
        guard let shared = sharedStore(for: tokens) else {
            return takeStoredLogin(persistence?.read(tokens), for: tokens, from: "store")
        }
        shared.loginReads.watch(tokens) { [unowned self] stored in
            guard !stopping, isInForce(tokens) else { return }
            if let stored, !stored.isEmpty {
                takeStoredLogin(StoredTokenClock.held(stored, identity: tokens.identity), for: tokens, from: "shared store")
            } else {
                takeStoredLogin(persistence?.read(tokens), for: tokens, from: "store")
            }
            runNextAction(tokens)
        }
    }

    private func takeStoredLogin(_ stored: HeldTokens?, for tokens: IdentityTokens, from source: String) {
        let now = monotonicSeconds()
        tokens.publish { $0.storedLoginRead(stored?.token, refreshToken: stored?.refreshToken, subject: stored?.subject, at: now) }
        if stored?.token != nil || stored?.refreshToken != nil {
            logger.info("login read from \(source)", metadata: ["identity": .string(tokens.identity.name)])
        }
    }

    /// Sends the request of a fetch the way a relay without a shared store does: with a token
    /// store, the entry's lock first, then the entry, then maybe the request.
    func fetchLocally(_ request: TokenRequest, for tokens: IdentityTokens) {
        guard let persistence else { return send(request, for: tokens) }
        let wait = Double(limits.connectTimeoutMilliseconds + limits.responseTimeoutMilliseconds) / 1000
        persistence.withLock(tokens, until: monotonicSeconds() + wait, locked: { [unowned self] in
            fetchAfterReadingStore(tokens)
        }, timedOut: { [unowned self] in
            handle(.fetchEnded(tokens, .failure(.unreachable(
                reason: "the token store entry stayed locked by another process for \(Int(wait.rounded())) s"))))
        })
    }

    /// Holding the entry's lock: reads the entry, and sends a token request only if what it holds
    /// does not do (another process may have just refreshed).
    private func fetchAfterReadingStore(_ tokens: IdentityTokens) {
        guard !stopping, let persistence else { return }
        let stored = persistence.read(tokens)
        switch adoptStoredEntry(stored.token, refreshToken: stored.refreshToken, for: tokens, from: "store").outcome {
        case .fetch(let request):
            send(request, for: tokens)
        case .satisfied:
            fetchSatisfied(tokens)
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
            if isInForce(tokens) {
                observer?.tokenExpiryChanged(identity: tokens.identity.name,
                                             unixTime: Date().timeIntervalSince1970 + adopted.expiresAt - now)
            }
        }
        return (outcome, adopted)
    }

    /// A fetch ended without a token request: what was stored did.
    func fetchSatisfied(_ tokens: IdentityTokens) {
        persistence?.unlock(tokens)
        runNextAction(tokens)
    }

    func send(_ request: TokenRequest, for tokens: IdentityTokens) {
        send(request, for: tokens, retryingForNonce: false)
    }

    /// `retryingForNonce`: this is the one retry after a `use_dpop_nonce` answer.
    private func send(_ unsigned: TokenRequest, for tokens: IdentityTokens, retryingForNonce: Bool) {
        let started = monotonicSeconds()
        logger.debug("token request", metadata: ["identity": .string(tokens.identity.name), "purpose": .string("\(unsigned.purpose)")])
        sendToIdP(unsigned, for: tokens, kind: .tokenRequest) { [self] result, request in
            // Stopping, only a request holding its store lock or lease was let finish (see `stop`).
            guard !stopping || finishesWhileStopping(slot: tokens.slot) else { return }
            let outcome: Result<TokenResponse, TokenEndpointError>
            switch result {
            case .success(let reply):
                do throws(TokenEndpointError) {
                    outcome = .success(try request.parseResponse(reply, unixTime: Date().timeIntervalSince1970))
                } catch {
                    outcome = .failure(error)
                }
                if retriesWithNewNonce(reply, outcome: outcome, for: tokens, alreadyRetried: retryingForNonce || stopping) {
                    return send(unsigned, for: tokens, retryingForNonce: true)
                }
            case .failure(.timedOut):
                outcome = .failure(.timedOut(seconds: monotonicSeconds() - started))
            case .failure(let error):
                outcome = .failure(error)
            }
            if case .success(let response) = outcome, request.purpose == .grant(.authorizationCode) {
                // A login's tokens are taken only once its ID token has passed its checks.
                checkIDToken(of: response, for: tokens) { [self] checked in fetchEnded(checked, for: tokens) }
            } else {
                fetchEnded(outcome, for: tokens)
            }
        }
    }

    /// A fetch's token request (and, for a login, its ID token check) ended: recorded, or once
    /// stopping, kept for the next process, so its store lock and shared lease are released
    /// either way.
    private func fetchEnded(_ outcome: Result<TokenResponse, TokenEndpointError>, for tokens: IdentityTokens) {
        if stopping {
            keepWhileStopping(outcome, for: tokens)
        } else {
            handle(.fetchEnded(tokens, outcome))
        }
    }

    /// Sends a request to one of the identity's IdP endpoints (token, device authorization,
    /// revocation): its client assertion (and, to the token endpoint, its DPoP proof) is signed
    /// here, on the token thread and outside the lifecycle's lock, fresh for every request (their
    /// jti is single-use), and the endpoint's TLS configuration is the identity's. The completion
    /// gets the answer (or the transport's failure) and the request as sent, also when it could
    /// not be sent or stopping cancelled it.
    func sendToIdP(_ unsigned: TokenRequest, for tokens: IdentityTokens, kind: IdPCalls.Kind = .other,
                   completion: @escaping (Result<TokenEndpointReply, TokenEndpointError>, TokenRequest) -> Void) {
        let request: TokenRequest
        do throws(TokenEndpointError) {
            request = try signed(unsigned, for: tokens)
        } catch {
            return completion(.failure(error), unsigned)
        }
        fetch(request.method, request.url, headers: request.headers, body: request.body, for: tokens, kind: kind) { completion($0, request) }
    }

    /// One HTTP request to the identity's IdP (a token request, or a GET of its metadata or
    /// JWKS), with the identity's TLS configuration; transport failures as token endpoint errors.
    /// Tracked until it ends, so stopping can cancel it (`kind`: see `IdPCalls.Kind`).
    func fetch(_ method: String, _ url: HTTPURL, headers: [HTTPField] = [], body: [UInt8] = [], for tokens: IdentityTokens,
               kind: IdPCalls.Kind = .other, completion: @escaping (Result<TokenEndpointReply, TokenEndpointError>) -> Void) {
        let tls = url.scheme == .https ? self.tls[tokens.slot] : nil
        if url.scheme == .https && tls == nil {
            return completion(.failure(.unreachable(reason: "no TLS configuration for the https endpoint \(redactedURL(url))")))
        }
        let request = HTTPClientRequest(method: method, host: url.host, port: url.port, target: url.requestTarget,
                                        headers: headers, body: body, tls: tls)
        let started = monotonicSeconds()
        calls.track(slot: tokens.slot, kind: kind) { id in
            sendHTTPRequest(request, on: loop, limits: limits) { [calls] result in
                calls.ended(id)
                switch result {
                case .success(let response):
                    completion(.success(TokenEndpointReply(status: response.status, headers: response.headers, body: response.body)))
                case .failure(.responseTimeout), .failure(.connectTimeout):
                    completion(.failure(.timedOut(seconds: monotonicSeconds() - started)))
                case .failure(let error):
                    completion(.failure(.unreachable(reason: error.description)))
                }
            }
        }
    }

    /// A request let finish while stopping: its token, and above all the refresh token a rotating
    /// IdP may have just replaced (revoking the one sent), go to the store for the next process.
    /// A failure (a cancelled ID token check among them) keeps nothing, but the lock and the
    /// lease go all the same: the loop cannot end while the shared lease is held.
    private func keepWhileStopping(_ outcome: Result<TokenResponse, TokenEndpointError>, for tokens: IdentityTokens) {
        var kept: HeldTokens?
        if case .success(let response) = outcome {
            let now = monotonicSeconds()
            kept = tokens.update { lifecycle -> HeldTokens? in
                // A logout came meanwhile: nothing of this answer is kept.
                let abandoned = lifecycle.isFetchAbandoned
                lifecycle.fetchSucceeded(response, at: now)
                return abandoned ? nil : HeldTokens(lifecycle)
            }
            if let kept { persistence?.write(kept, for: tokens) }
        }
        persistence?.unlock(tokens)
        shared?.fetchEnded(tokens, obtained: kept != nil, refreshTokenDropped: false, held: kept ?? HeldTokens())
    }

    /// A token request under way when stopping that is let finish: one holding the file store's
    /// lock or the shared store's lease may already have made the IdP rotate the refresh token.
    private func finishesWhileStopping(slot: Int) -> Bool {
        persistence?.holdsLock(slot: slot) == true || shared?.holdsLease(slot: slot) == true
    }

    private func stop() {
        stopping = true
        // A token request holding its store lock may already have made the IdP rotate the
        // refresh token: abandoning it would lose the new one for every process on the store. It
        // is let finish (bounded by the token request timeouts) and the loop ends after it.
        // Every other request to an IdP is cancelled; its completion releases what it held.
        calls.cancel(exceptTokenRequestsOf: finishesWhileStopping)
        persistence?.stop()
        shared?.stop()
        abandonRevocationsAwaitingDiscovery()
        for timer in timers.values { timer.close() }
        timers.removeAll()
        wakeup.close()
    }
}
