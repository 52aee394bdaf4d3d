// Entries outlive the process that wrote them, so they hold wall-clock times; the lifecycle runs
// on the monotonic clock. These two conversions are shared by the file store
// (TokenPersistence.swift) and the shared Redis store (SharedTokens.swift).

import FoundationEssentials
import OAuth2
import SafeText
import TokenStore

enum StoredTokenClock {
    /// What to keep of what a lifecycle holds (its token, refresh token, and who logged in for
    /// an interactive identity), times turned to wall-clock time.
    static func stored(_ held: HeldTokens) -> StoredToken {
        let offset = Date().timeIntervalSince1970 - monotonicSeconds()
        let access = held.token.map {
            StoredToken.Access(value: Secret($0.value), type: $0.type, issuedAt: $0.issuedAt + offset,
                               expiresAt: $0.expiresAt + offset, scope: $0.scope)
        }
        return StoredToken(access: access, refreshToken: held.refreshToken, subject: held.subject)
    }

    /// A stored access token in the lifecycle's clock, with the refresh time the lifecycle would
    /// have given it (so every process reading one entry refreshes it at the same moment).
    /// What an entry holds, in the lifecycle's clock: the reverse of `stored(_:)`.
    static func held(_ stored: StoredToken, identity: Identity) -> HeldTokens {
        HeldTokens(token: stored.access.map { accessToken($0, identity: identity) }, refreshToken: stored.refreshToken,
                   subject: stored.subject)
    }

    static func accessToken(_ stored: StoredToken.Access, identity: Identity) -> AccessToken {
        let offset = Date().timeIntervalSince1970 - monotonicSeconds()
        let issuedAt = stored.issuedAt - offset
        let lifetime = stored.expiresAt - stored.issuedAt
        return AccessToken(value: stored.value.value, type: stored.type, issuedAt: issuedAt, expiresAt: stored.expiresAt - offset,
                           refreshAt: RefreshSchedule.refreshAt(issuedAt: issuedAt, lifetime: lifetime, skew: identity.refreshSkewSeconds),
                           scope: stored.scope, serial: 0)
    }
}
