// How a fetch the lifecycle started reaches the IdP, one way per identity, chosen from the
// configuration's stores and the identity alone (`FetchRoute.choose`):
//
//   direct        no store: the token request is sent (DirectFetch.swift)
//   fileLocked    `store.path`: the entry's lock, the entry, maybe the request, the write, the
//                 unlock (FileLockedFetch.swift, TokenPersistence.swift)
//   shared        `store.redis`: the fleet's single flight through Redis, going on as `fileLocked`
//                 or `direct` whenever Redis cannot answer (SharedStoreFetch.swift, SharedTokens.swift)
//   selfSigned    an identity whose own key signs its token (a self-signed Google service account):
//                 no request, no store, whatever the configuration has (SelfSignedFetch.swift)
//
// Tokens bound to a DPoP key this process generated are of no use to another replica: they never
// go to the shared store (nor to the file store, which TokenPersistence itself refuses them).

import OAuth2

/// The way an identity's fetches go.
enum FetchRoute: Equatable {
    case direct
    case fileLocked
    case shared
    case selfSigned

    /// The route of an identity whose tokens may be stored (`isStored`) or which signs its own
    /// (`isSelfSigned`), for a configuration with or without a file store and a shared store.
    static func choose(hasFileStore: Bool, hasSharedStore: Bool, isStored: Bool, isSelfSigned: Bool) -> FetchRoute {
        if isSelfSigned { return .selfSigned }
        if hasSharedStore && isStored { return .shared }
        return hasFileStore ? .fileLocked : .direct
    }
}

/// One route's side of a fetch. Runs on the token loop only.
protocol TokenFetchStrategy: AnyObject {
    /// The lifecycle of `tokens` started a fetch that would send `request`. `retired`: a reload
    /// retired the identity (it fetches for the requests still waiting for it).
    func begin(_ request: TokenRequest, for tokens: IdentityTokens, retired: Bool)
    /// The fetch ended without a token request: what was stored did.
    func fetchSatisfied(_ tokens: IdentityTokens)
    /// Whether a token obtained is kept (`keep`) before any request gets it.
    var keepsTokens: Bool { get }
    /// Keeps what the lifecycle holds once it has taken a token request's answer.
    func keep(_ held: HeldTokens, for tokens: IdentityTokens)
    /// The token request ended, recorded or not: gives back the lock or lease it held, and keeps
    /// what the fleet should know (`held`: what the lifecycle holds now).
    func fetchEnded(_ tokens: IdentityTokens, obtained: Bool, refreshTokenDropped: Bool, held: HeldTokens)
    /// A token request of `slot` holds its store lock or shared lease: stopping lets it finish.
    func holdsLockOrLease(slot: Int) -> Bool
    /// A reload retired the slot.
    func forget(slot: Int)
    /// The token loop stops: no more waiting for locks or Redis.
    func stop()
}

/// What the fetch strategies and the token request's recording need of the scheduler
/// (TokenFetcher). Token loop only.
protocol FetchSchedule: AnyObject {
    /// The identity is in force (not retired by a reload).
    func isInForce(_ tokens: IdentityTokens) -> Bool
    /// Asks the identity's lifecycle what to do now, and does it.
    func runNextAction(_ tokens: IdentityTokens)
    /// The way the fetches of `tokens` go.
    func strategy(for tokens: IdentityTokens) -> any TokenFetchStrategy
    /// The replicas' shared store, for an identity whose tokens go there (its logins, its logouts).
    func sharedStore(for tokens: IdentityTokens) -> SharedTokens?
}
