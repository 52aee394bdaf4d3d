// TokenFetcher: the token thread's scheduler. It runs on the token loop only: it takes the
// inbox's messages, adopts identity sets (keeping retired identities while requests wait for
// them), arms refresh timers, asks each identity's lifecycle what to do next and hands it to the
// part that does it, and stops. The parts:
//
//   IdPClient             every request to an IdP: signed, sent, answered, retried for a DPoP nonce
//   TokenFetchStrategy    one way per identity to run a fetch: direct, file-locked, Redis-shared,
//                         or self-signed (no request at all)
//   TokenRequests         a fetch's token request sent and its outcome recorded
//   IDTokenChecks         a login's ID token checked against the IdP's keys
//   EndpointDiscovery     the provider metadata read
//   DeviceAuthorizations  a device login's first step
//   Logouts               store entries forgotten and refresh tokens revoked
//   InboundKeyFetches     the signing keys of routes' inbound issuers read
//   CallerExchanges       callers' tokens exchanged on their behalf, one token per caller
//   InboundIntrospections callers' opaque tokens asked about (RFC 7662)

import EventLoop
import FoundationEssentials
import HTTPClient
import Logging
import OAuth2
import TokenStore

/// Runs on the token loop only.
final class TokenFetcher: FetchSchedule {
    /// Whether the token loop takes work. Stopping refuses every message and every next action
    /// here; IdPClient refuses new requests and drops the answers of those it cancelled, and each
    /// store stops waiting (its `stop`): no other part tests for it.
    private enum Phase {
        case running
        case stopping
    }

    let loop: EventLoop
    let logger: Logger
    let observer: (any TokenObserver)?
    let inbox: TokenInbox
    private let wakeup: LoopWakeup
    /// The identities in force.
    private var identities: [IdentityTokens] = []
    /// Identities a reload replaced or removed; kept while requests still wait for them.
    private var retired: [IdentityTokens] = []
    /// Refresh timers, by slot, of the identities in force.
    private var timers: [Int: LoopTimer] = [:]
    private var phase = Phase.running
    /// Every request to an IdP goes through it (IdPClient.swift).
    let idp: IdPClient
    /// An `auto` identity may register a client (false: its resolution stops there).
    private let registersClients: Bool
    /// The token store, when the configuration has one (TokenPersistence.swift).
    let persistence: TokenPersistence?
    /// The replicas' shared store's settings, when configured (SharedTokens.swift).
    private let sharedSettings: SharedStoreSettings?
    /// Each identity's IdP keys for ID tokens (IDTokenChecks.swift).
    let idTokens: IDTokenChecks
    private lazy var logouts = Logouts(idp: idp, logger: logger, persistence: persistence, schedule: self)
    private lazy var requests: TokenRequests = TokenRequests(idp: idp, idTokens: idTokens, logouts: logouts, logger: logger, observer: observer,
                                              schedule: self, clientUnknown: { [unowned self] in autoResolver.clientUnknown($0, refusal: $1) },
                                              scopeLearnt: { [unowned self] in autoResolver.scopeLearnt($0, widened: $1) })
    private lazy var devices = DeviceAuthorizations(idp: idp, logger: logger, observer: observer, schedule: self) { [unowned self] in
        autoResolver.clientUnknown($0, refusal: $1)
    }
    private lazy var discovery = EndpointDiscovery(idp: idp, logouts: logouts, logger: logger, schedule: self)
    private(set) lazy var autoResolver: AutoResolver = AutoResolver(idp: idp,
                                                      clients: RegisteredClients(persistence: persistence, shared: { [unowned self] in
                                                          sharedFetch?.shared
                                                      }, logger: logger),
                                                      logouts: logouts, logger: logger, schedule: self,
                                                      registers: registersClients) { [unowned self] in readStoredLogin($0) }
    private lazy var inboundKeys = InboundKeyFetches(idp: idp, logger: logger, observer: observer)
    private lazy var callerExchanges = CallerExchanges(idp: idp, logger: logger, observer: observer)
    private lazy var inboundIntrospections = InboundIntrospections(idp: idp, logger: logger, observer: observer)
    /// The fetch strategies (TokenFetchStrategy.swift): each identity goes one of these ways.
    private lazy var directFetch = DirectFetch(requests: requests, schedule: self)
    private lazy var selfSignedFetch = SelfSignedFetch(requests: requests, idp: idp)
    private lazy var fileLockedFetch = persistence.map { FileLockedFetch(persistence: $0, idp: idp, requests: requests, schedule: self) }
    private(set) lazy var sharedFetch = sharedSettings.map {
        SharedStoreFetch(settings: $0, loop: loop, logger: logger, observer: observer, idp: idp, requests: requests,
                         local: localFetch, persistence: persistence, schedule: self)
    }

    init(loop: EventLoop, limits: HTTPClientLimits, logger: Logger, observer: (any TokenObserver)?, store: TokenStore? = nil,
         sharedStore: SharedStoreSettings? = nil, registersClients: Bool = true) {
        self.registersClients = registersClients
        self.loop = loop
        self.logger = logger
        self.observer = observer
        idp = IdPClient(loop: loop, limits: limits, logger: logger, observer: observer)
        idTokens = IDTokenChecks(idp: idp, logger: logger)
        persistence = store.map { TokenPersistence(store: $0, loop: loop, logger: logger, observer: observer) }
        sharedSettings = sharedStore
        // The wake-up exists before the fetcher does: it reaches it through `delivery`.
        let delivery = InboxDelivery()
        wakeup = LoopWakeup(loop: loop) { delivery.fetcher?.takeInbox() }
        inbox = TokenInbox(wakeup: wakeup, observer: observer)
        delivery.fetcher = self
        // The link to Redis starts connecting now, as the token loop starts.
        _ = sharedFetch
        callerExchanges.throughFleet = { [unowned self] tokens, caller, expiry, refused, exchange, completion in
            callerToken(for: tokens, caller: caller, callerExpiresAt: expiry, refused: refused, exchange: exchange, completion: completion)
        }
        whenSharedCallersForgotten { $0.callers?.removeAll() }
    }

    /// The inbox's messages, handled in order; then the retired identities nothing needs any more.
    private func takeInbox() {
        for message in inbox.takeAll() where phase == .running { handle(message) }
        // A retired identity goes once nothing waits for it and its last request ended.
        retired.removeAll { tokens in
            guard !tokens.hasWaiters, !idp.hasRequest(slot: tokens.slot), !tokens.update({ $0.isFetching }) else { return false }
            idp.retire(slot: tokens.slot)
            idTokens.forget(slot: tokens.slot)
            callerExchanges.forget(slot: tokens.slot)
            return true
        }
    }

    /// The one entry point of the token loop's work (TokenInbox.swift).
    func handle(_ message: TokenMessage) {
        switch message {
        case .adopt(let update):
            adopt(update)
        case .needToken(let tokens):
            keepIfRetired(tokens)
            runNextAction(tokens)
        case .exchangeForCaller(let tokens, let exchange):
            keepIfRetired(tokens)
            callerExchanges.exchange(exchange, for: tokens)
        case .reconsider(let tokens):
            runNextAction(tokens)
        case .fetchEnded(let tokens, let outcome):
            requests.record(outcome, for: tokens)
        case .needKeys(let keys):
            inboundKeys.fetch(keys)
        case .introspect(let question):
            inboundIntrospections.ask(question)
        case .logout(let tokens, let refreshToken, let completion):
            logouts.logout(tokens, refreshToken: refreshToken, completion: completion)
        case .forgetClient(let tokens, let completion):
            // It resolves (and registers) again at its next need, not now.
            autoResolver.forgetClient(tokens, completion: completion)
        case .stop:
            stop()
        }
    }

    /// Requests wait for `tokens`: an identity a reload retired since they began is kept until
    /// nothing waits for it.
    private func keepIfRetired(_ tokens: IdentityTokens) {
        if !isInForce(tokens) && !retired.contains(where: { $0 === tokens }) { retired.append(tokens) }
    }

    /// How a fetch goes without Redis.
    private var localFetch: any TokenFetchStrategy {
        if let fileLockedFetch { return fileLockedFetch }
        return directFetch
    }

    /// Every fetch strategy in use, each once.
    private var strategies: [any TokenFetchStrategy] {
        var strategies: [any TokenFetchStrategy] = [directFetch, selfSignedFetch]
        if let fileLockedFetch { strategies.append(fileLockedFetch) }
        if let sharedFetch { strategies.append(sharedFetch) }
        return strategies
    }

    private func adopt(_ update: FetcherUpdate) {
        let inForce = Set(update.identities.map(\.slot))
        for tokens in identities where !inForce.contains(tokens.slot) {
            timers.removeValue(forKey: tokens.slot)?.close()
            requests.forget(slot: tokens.slot)
            autoResolver.forget(slot: tokens.slot)
            idp.dpopNonces.forget(slot: tokens.slot)
            for strategy in strategies { strategy.forget(slot: tokens.slot) }
            retired.append(tokens)
        }
        // A reload, changed or not, is when an operator may have fixed what an `auto` identity needed.
        for tokens in update.identities where timers[tokens.slot] != nil { tokens.update { $0.retryResolutionNow() } }
        for tokens in update.identities where timers[tokens.slot] == nil {
            timers[tokens.slot] = LoopTimer(loop: loop) { [unowned self] in self.runNextAction(tokens) }
            // An `auto` identity reads its login once resolved (AutoResolver).
            if tokens.configured.grant.isInteractive && tokens.configured.auto == nil { readStoredLogin(tokens) }
        }
        // Retired identities keep the TLS configuration they fetched with, and kept ones their
        // credential files' watch.
        idp.adopt(update.identities, tls: update.tls, resourceTLS: update.resourceTLS, limits: update.limits)
        identities = update.identities
        // New identities fetch at once; kept ones go on as scheduled.
        for tokens in identities { runNextAction(tokens) }
    }

    func isInForce(_ tokens: IdentityTokens) -> Bool { timers[tokens.slot] != nil }

    /// The way the fetches of `tokens` go, from the configuration's stores and the identity.
    func strategy(for tokens: IdentityTokens) -> any TokenFetchStrategy {
        let route = FetchRoute.choose(hasFileStore: persistence != nil, hasSharedStore: sharedSettings != nil,
                                      isStored: TokenPersistence.isStored(tokens),
                                      isSelfSigned: tokens.identity.grant.isSelfSigned)
        if route == .selfSigned { return selfSignedFetch }
        if route == .shared, let sharedFetch { return sharedFetch }
        if route != .direct, let fileLockedFetch { return fileLockedFetch }
        return directFetch
    }

    /// The replicas' shared store, for an identity whose tokens go there: tokens bound to a DPoP
    /// key this process generated are of no use to another replica, so their fetches, their stored
    /// login's reads and their logouts stay on this replica.
    func sharedStore(for tokens: IdentityTokens) -> SharedTokens? {
        strategy(for: tokens) is SharedStoreFetch ? sharedFetch?.shared : nil
    }

    /// Asks the identity's lifecycle what to do now, and does it.
    func runNextAction(_ tokens: IdentityTokens) {
        guard phase == .running else { return }
        // A retired identity fetches only for requests that still wait for it.
        guard isInForce(tokens) || tokens.hasWaiters else { return }
        let now = monotonicSeconds()
        // Discovery may just have ended: callers' exchanges waiting for the token endpoint go.
        defer { callerExchanges.endpointsMayBeKnown(tokens) }
        switch tokens.update({ $0.nextAction(at: now) }) {
        case .fetch(let request):
            timers[tokens.slot]?.stop()
            strategy(for: tokens).begin(request, for: tokens, retired: !isInForce(tokens))
        case .sleep(let due):
            timers[tokens.slot]?.start(afterMilliseconds: UInt64(max(0, (due - now) * 1000).rounded(.up)))
        case .idle:
            timers[tokens.slot]?.stop()
        case .discover:
            timers[tokens.slot]?.stop()
            discovery.discover(tokens)
        case .resolve:
            timers[tokens.slot]?.stop()
            autoResolver.resolve(tokens)
        case .authorizeDevice(let request):
            timers[tokens.slot]?.stop()
            devices.authorize(tokens, request)
        }
    }

    /// A person's login kept in the store (an interactive identity asks nothing of the IdP
    /// before it has a refresh token, so the fetch path would never read it).
    /// With replicas sharing tokens the shared entry is read first (a person logged in through
    /// another replica), then the file store's; the shared one again whenever another replica
    /// writes it.
    func readStoredLogin(_ tokens: IdentityTokens) {
        guard let shared = sharedStore(for: tokens) else {
            return takeStoredLogin(persistence?.read(tokens), for: tokens, from: "store")
        }
        shared.loginReads.watch(tokens) { [unowned self] stored in
            guard phase == .running, isInForce(tokens) else { return }
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

    /// A token request under way when stopping that is let finish: one holding the file store's
    /// lock or the shared store's lease may already have made the IdP rotate the refresh token.
    private func finishesWhileStopping(slot: Int) -> Bool {
        strategies.contains { $0.holdsLockOrLease(slot: slot) }
    }

    private func stop() {
        phase = .stopping
        // A token request holding its store lock may already have made the IdP rotate the
        // refresh token: abandoning it would lose the new one for every process on the store. It
        // is let finish (bounded by the token request timeouts) and the loop ends after it.
        // Every other request to an IdP is cancelled; its completion releases what it held.
        idp.stop(lettingFinish: finishesWhileStopping)
        for strategy in strategies { strategy.stop() }
        logouts.abandonRevocationsAwaitingDiscovery()
        for timer in timers.values { timer.close() }
        timers.removeAll()
        wakeup.close()
    }
}

/// Forwards the inbox's wake-ups to the fetcher, which is made after its wake-up.
private final class InboxDelivery {
    weak var fetcher: TokenFetcher?
}
