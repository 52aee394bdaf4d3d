// A token store in the token lifecycle: what a store entry (a file, or the entry replicas share
// through Redis), read under its lock once a fetch has started, leaves to do.

import SafeText


extension TokenLifecycle {
    /// The refresh token held (to be persisted with the token by a token store).
    public var heldRefreshToken: Secret? { held.refreshToken }

    /// What a token store's entry, read under its lock once a fetch has started, leaves to do.
    public enum StoredEntryOutcome: Sendable {
        /// The fetch is still needed: send this request (it may now use a stored refresh token).
        case fetch(TokenRequest)
        /// The stored token is good enough: the fetch ended without a request.
        case satisfied
    }

    /// A fetch has started (`nextAction` said `.fetch`) and the identity's store entry was read
    /// under its lock: `stored` and `storedRefreshToken` are what another process (or this one,
    /// before a restart) wrote last, times already in this lifecycle's clock.
    ///
    /// A stored refresh token replaces the one held: every process writes the latest it got
    /// under the lock, so it is the newest (a rotating IdP has revoked older ones). A stored
    /// access token is taken when it is valid and newer than the one held (and is not one an
    /// upstream refused). The fetch is then still needed unless the token held is not yet due
    /// for a refresh and no operator asked for one.
    public mutating func storedEntryRead(_ stored: AccessToken?, refreshToken storedRefreshToken: Secret?, at now: Double) -> StoredEntryOutcome {
        guard let fetch = activity.fetch, activity.isFetchTaken else {
            // A logout came while the entry's lock was awaited: nothing is sent, nothing taken.
            _ = activity.endFetch()
            return .satisfied
        }
        // A person just logged in (their code is exchanged whatever the store holds), or a device
        // poll goes out as scheduled (only the person's approval gives its token).
        if let request = fetch.fixedRequest { return .fetch(request) }
        if held.takeNewer(stored, refreshToken: storedRefreshToken, at: now) { failures.streakEnded() }
        let stillNeeded = fetch.requested || !(token.map { $0.refreshAt > now } ?? false)
        if stillNeeded, let request = prepareFetch(nextPurpose ?? fetch.purpose, startedAt: fetch.startedAt, requested: fetch.requested) {
            return .fetch(request)
        }
        activity = .idle
        return .satisfied
    }
}
