// SharedStoreFetch: the fetches of an identity whose tokens replicas share through Redis
// (`store.redis`). SharedTokens runs the fleet's single flight (SharedFetch.swift) and tells this
// strategy, its driver, what to do; whenever Redis cannot help, the fetch goes on the local way
// (`local`: FileLockedFetch with `store.path`, else DirectFetch). SharedTokens knows nothing of
// the scheduler: it hears of fetches from here and reports back here.

import EventLoop
import Logging
import OAuth2
import SafeText

/// Runs on the token loop only.
final class SharedStoreFetch: TokenFetchStrategy, SharedTokensDriver {
    private let settings: SharedStoreSettings
    private let loop: EventLoop
    private let logger: Logger
    private let observer: (any TokenObserver)?
    private let idp: IdPClient
    private let requests: TokenRequests
    /// How a fetch goes when Redis cannot help.
    private let local: any TokenFetchStrategy
    /// This machine's store, when there is one: a cache of what the fleet shares.
    private let persistence: TokenPersistence?
    private unowned let schedule: any FetchSchedule
    /// Made once this strategy exists (it is SharedTokens' driver), when the token loop starts:
    /// the link to Redis starts connecting then.
    private(set) lazy var shared = SharedTokens(settings: settings, loop: loop, logger: logger, observer: observer, driver: self)

    init(settings: SharedStoreSettings, loop: EventLoop, logger: Logger, observer: (any TokenObserver)?, idp: IdPClient,
         requests: TokenRequests, local: any TokenFetchStrategy, persistence: TokenPersistence?, schedule: any FetchSchedule) {
        self.settings = settings
        self.loop = loop
        self.logger = logger
        self.observer = observer
        self.idp = idp
        self.requests = requests
        self.local = local
        self.persistence = persistence
        self.schedule = schedule
        _ = shared
    }

    // MARK: - TokenFetchStrategy

    func begin(_ request: TokenRequest, for tokens: IdentityTokens, retired: Bool) {
        shared.fetchDue(tokens, request: request, retired: retired,
                        leaseMilliseconds: LeaseDuration.milliseconds(of: tokens.identity, limits: idp.limits))
    }

    var keepsTokens: Bool { local.keepsTokens }

    func keep(_ held: HeldTokens, for tokens: IdentityTokens) {
        local.keep(held, for: tokens)
    }

    /// The local store's lock (a fetch that went alone) goes first, then the fleet hears.
    func fetchEnded(_ tokens: IdentityTokens, obtained: Bool, refreshTokenDropped: Bool, held: HeldTokens) {
        local.fetchEnded(tokens, obtained: obtained, refreshTokenDropped: refreshTokenDropped, held: held)
        shared.fetchEnded(tokens, obtained: obtained, refreshTokenDropped: refreshTokenDropped, held: held)
    }

    func holdsLockOrLease(slot: Int) -> Bool {
        shared.holdsLease(slot: slot)
    }

    func forget(slot: Int) {
        shared.forget(slot: slot)
    }

    func stop() {
        shared.stop()
    }

    // MARK: - SharedTokensDriver

    func fetchLocally(_ request: TokenRequest, for tokens: IdentityTokens) {
        local.begin(request, for: tokens, retired: !schedule.isInForce(tokens))
    }

    func send(_ request: TokenRequest, for tokens: IdentityTokens) {
        requests.send(request, for: tokens)
    }

    /// A shared entry goes to the lifecycle like a file store entry; a token taken from it is
    /// also kept in the file store, when there is one (this machine's cache, used when Redis is
    /// down at the next start).
    func sharedEntryRead(_ token: AccessToken?, refreshToken: Secret?, for tokens: IdentityTokens) -> TokenLifecycle.StoredEntryOutcome {
        let (outcome, adopted) = requests.adoptStoredEntry(token, refreshToken: refreshToken, for: tokens, from: "shared store")
        if local.keepsTokens, adopted != nil {
            local.keep(tokens.update { HeldTokens($0) }, for: tokens)
        }
        return outcome
    }

    func fetchSatisfied(_ tokens: IdentityTokens) {
        local.fetchSatisfied(tokens)
    }

    /// Another replica logged the identity out: its tokens go here too (its memory and this
    /// machine's store entry; the replica that logged out revoked the refresh token), and the
    /// next request finds a person logged out, or waits for a client's new token (the lifecycle
    /// fetches one at once, as on the replica that logged out). (Once stopping, SharedTokens
    /// hears of no removal.)
    func sharedLoginRemoved(_ tokens: IdentityTokens) {
        tokens.publish { lifecycle in
            lifecycle.forget()
            return true
        }
        persistence?.remove(tokens, lockTimeout: TokenPersistence.lockWait(idp.limits))
        observer?.tokenExpiryChanged(identity: tokens.identity.name, unixTime: nil)
        logger.info("logged out through another replica", metadata: ["identity": .string(tokens.identity.name)])
        schedule.runNextAction(tokens)
    }
}
