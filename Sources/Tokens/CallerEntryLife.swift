import OAuth2

/// How long a token exchanged for a caller lives in the shared store and is used from it. Times
/// are Unix seconds, as in every shared entry; pure, no I/O.
///
/// A caller's token is of no use past the caller's own token (`callerExpiresAt`, its `exp`): the
/// exchanged token serves that caller until the earlier of the two expiries, and is reused until
/// shortly before it — the margin is the one a refresh keeps (RefreshSchedule, with the identity's
/// `refreshSkewSeconds`), so a replica reading an entry and the replica that wrote it stop using it
/// at the same moment, and the next request for that caller exchanges again.
enum CallerEntryLife {
    /// When the token stops serving the caller: the earlier of its expiry and the caller's.
    static func expiresAt(tokenExpiresAt: Double, callerExpiresAt: Double?) -> Double {
        min(tokenExpiresAt, callerExpiresAt ?? tokenExpiresAt)
    }

    /// Until when the token is reused for the caller: the refresh time of a token living from
    /// `issuedAt` to `expiresAt(…)`, and never past that expiry.
    static func reusableUntil(issuedAt: Double, tokenExpiresAt: Double, callerExpiresAt: Double?, skew: Double) -> Double {
        let end = expiresAt(tokenExpiresAt: tokenExpiresAt, callerExpiresAt: callerExpiresAt)
        return min(end, RefreshSchedule.refreshAt(issuedAt: issuedAt, lifetime: end - issuedAt, skew: skew))
    }

    /// Whether an entry's token still serves the caller at `now`.
    static func isReusable(issuedAt: Double, tokenExpiresAt: Double, callerExpiresAt: Double?, skew: Double, now: Double) -> Bool {
        now < reusableUntil(issuedAt: issuedAt, tokenExpiresAt: tokenExpiresAt, callerExpiresAt: callerExpiresAt, skew: skew)
    }

    /// The entry's TTL in Redis: the token's remaining life at `now`, cut at the caller's expiry;
    /// nil when nothing is left (nothing is written then). At least a millisecond.
    static func ttlMilliseconds(tokenExpiresAt: Double, callerExpiresAt: Double?, now: Double) -> Int64? {
        let remaining = expiresAt(tokenExpiresAt: tokenExpiresAt, callerExpiresAt: callerExpiresAt) - now
        guard remaining > 0 else { return nil }
        return max(1, Int64((remaining * 1000).rounded(.down)))
    }
}
