/// What one identity holds: its latest access token (valid or not), the refresh token the
/// endpoint issued (or an interactive identity's seed), how many tokens it has taken (each
/// token's serial), and what an upstream's refusal left to remember. No description shows any
/// of it: `TokenLifecycle`'s own names no token.

import SafeText

struct HeldCredentials: Sendable {
    /// The latest token, valid or not (nil before the first, after a refusal or a logout).
    private(set) var token: AccessToken?
    var refreshToken: Secret?
    /// Tokens taken so far: the last one's serial.
    private(set) var tokenCount: UInt64 = 0
    private(set) var refusal = RefusalMemory.none

    /// A fetch asked for at `issuedAt` brought `response`, which expires at `expiresAt` (checked
    /// by the caller to be after now). A response without a refresh token keeps the one held (an
    /// IdP sends none to the same person consenting again, or stepping up), unless it ends a
    /// login that replaces the person (`replacesPerson`: `oauth-relay login --force`, or an ID
    /// token naming someone else), whose tokens must not be refreshed with the previous person's.
    mutating func take(_ response: TokenResponse, issuedAt: Double, expiresAt: Double, identity: Identity, replacesPerson: Bool = false) {
        tokenCount += 1
        token = AccessToken(value: response.accessToken.value, type: response.tokenType, issuedAt: issuedAt, expiresAt: expiresAt,
                            refreshAt: RefreshSchedule.refreshAt(issuedAt: issuedAt, lifetime: response.expiresIn,
                                                                 skew: identity.refreshSkewSeconds),
                            scope: response.scope ?? token?.scope ?? identity.scope, serial: tokenCount)
        if let rotated = response.refreshToken {
            refreshToken = rotated
        } else if replacesPerson {
            refreshToken = nil
        }
        refusal.tokenFetched()
    }

    /// Takes a token from a store (valid, checked by the caller) as the current one, with the
    /// next serial.
    mutating func adopt(_ stored: AccessToken) {
        tokenCount += 1
        token = AccessToken(value: stored.value, type: stored.type, issuedAt: stored.issuedAt, expiresAt: stored.expiresAt,
                            refreshAt: stored.refreshAt, scope: stored.scope, serial: tokenCount)
    }

    /// A token store's entry, read under its lock once a fetch has started: its refresh token
    /// replaces the one held (every process writes the latest it got under the lock, so it is
    /// the newest: a rotating IdP has revoked older ones), and its access token is adopted when
    /// it is valid, neither the one held nor one an upstream refused, and lasts longer. Returns
    /// whether it was adopted. An adopted entry's missing refresh token is taken too: entries are
    /// written whole (`HeldTokens`), so the process that got that newer token held none — a
    /// login that replaced the person without one (`oauth-relay login --force`) — and keeping
    /// the one held would refresh the new person's login as the previous one.
    mutating func takeNewer(_ stored: AccessToken?, refreshToken storedRefreshToken: Secret?, at now: Double) -> Bool {
        if let storedRefreshToken { refreshToken = storedRefreshToken }
        guard let stored, stored.isValid(at: now), stored.value != token?.value, stored.value != refusal.refusedToken,
              stored.expiresAt > (token?.expiresAt ?? -Double.infinity) else { return false }
        adopt(stored)
        refreshToken = storedRefreshToken
        return true
    }

    /// A person's login kept by a token store, read at startup: its refresh token, and its
    /// access token while valid. Returns whether anything was taken.
    mutating func restore(_ stored: AccessToken?, refreshToken storedRefreshToken: Secret?, at now: Double) -> Bool {
        var taken = false
        if let storedRefreshToken {
            refreshToken = storedRefreshToken
            taken = true
        }
        if let stored, stored.isValid(at: now) {
            adopt(stored)
            taken = true
        }
        return taken
    }

    /// An upstream refused the token `value` at `now`: see `TokenLifecycle.refused(token:at:minimumAge:)`.
    mutating func refused(_ value: String, at now: Double, minimumAge: Double) -> TokenLifecycle.Refusal {
        guard let current = token, current.value == value else { return .superseded }
        if refusal.holdsReplacement && now - current.issuedAt < minimumAge { return .kept }
        refusal.tokenRefused(current.value)
        token = nil
        return .dropped
    }

    /// A logout: both tokens are forgotten, and the next token follows no refusal.
    mutating func forget() {
        token = nil
        refreshToken = nil
        refusal.forgotten()
    }
}
