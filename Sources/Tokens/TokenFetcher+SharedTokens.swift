// How the shared store (SharedTokens.swift) drives the token loop's fetches.

import OAuth2

extension TokenFetcher: SharedTokensDriver {
    /// A shared entry goes to the lifecycle like a file store entry; a token taken from it is
    /// also kept in the file store, when there is one (this machine's cache, used when Redis is
    /// down at the next start).
    func sharedEntryRead(_ token: AccessToken?, refreshToken: Secret?, for tokens: IdentityTokens) -> TokenLifecycle.StoredEntryOutcome {
        let (outcome, adopted) = adoptStoredEntry(token, refreshToken: refreshToken, for: tokens, from: "shared store")
        if let persistence, adopted != nil {
            persistence.write(tokens.update { HeldTokens($0) }, for: tokens)
        }
        return outcome
    }
}
