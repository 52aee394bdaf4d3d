// FileLockedFetch: the fetches of a relay with a token store (`store.path`) and no shared one —
// or with one that cannot answer. Holding the identity's entry lock (TokenPersistence.swift), the
// fetch reads the entry and sends a token request only if what it holds does not do (another
// process may have just refreshed); the result is written before any request gets it, then the
// lock goes.

import OAuth2

/// Runs on the token loop only.
final class FileLockedFetch: TokenFetchStrategy {
    let persistence: TokenPersistence
    private let idp: IdPClient
    private let requests: TokenRequests
    private unowned let schedule: any FetchSchedule

    init(persistence: TokenPersistence, idp: IdPClient, requests: TokenRequests, schedule: any FetchSchedule) {
        self.persistence = persistence
        self.idp = idp
        self.requests = requests
        self.schedule = schedule
    }

    /// The entry's lock first (waiting at most as long as a token request may take), then the
    /// entry, then maybe the request. Once stopping, no lock is awaited any more (`stop`), so
    /// nothing starts after it.
    func begin(_ request: TokenRequest, for tokens: IdentityTokens, retired: Bool) {
        let wait = TokenPersistence.lockWait(idp.limits)
        persistence.withLock(tokens, until: monotonicSeconds() + wait, locked: { [unowned self] in
            fetchAfterReadingStore(tokens)
        }, timedOut: { [unowned self] in
            requests.record(.failure(.unreachable(
                reason: "the token store entry stayed locked by another process for \(Int(wait.rounded())) s")), for: tokens)
        })
    }

    /// Holding the entry's lock: reads the entry, and sends a token request only if what it holds
    /// does not do.
    private func fetchAfterReadingStore(_ tokens: IdentityTokens) {
        let stored = persistence.read(tokens)
        switch requests.adoptStoredEntry(stored.token, refreshToken: stored.refreshToken, for: tokens, from: "store").outcome {
        case .fetch(let request):
            requests.send(request, for: tokens)
        case .satisfied:
            fetchSatisfied(tokens)
        }
    }

    func fetchSatisfied(_ tokens: IdentityTokens) {
        persistence.unlock(tokens)
        schedule.runNextAction(tokens)
    }

    var keepsTokens: Bool { true }

    func keep(_ held: HeldTokens, for tokens: IdentityTokens) {
        persistence.write(held, for: tokens)
    }

    /// A refresh token the IdP refused is dropped from the store too, so no process sends it again.
    func fetchEnded(_ tokens: IdentityTokens, obtained: Bool, refreshTokenDropped: Bool, held: HeldTokens) {
        if refreshTokenDropped { persistence.write(held, for: tokens) }
        persistence.unlock(tokens)
    }

    func holdsLockOrLease(slot: Int) -> Bool {
        persistence.holdsLock(slot: slot)
    }

    func forget(slot: Int) {
        persistence.forget(slot: slot)
    }

    func stop() {
        persistence.stop()
    }
}
