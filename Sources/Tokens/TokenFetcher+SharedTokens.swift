// How the shared store (SharedTokens.swift) drives the token loop's fetches.

import OAuth2
import SafeText

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

    /// Another replica logged the person out: the login goes here too (its memory and this
    /// machine's store entry; the replica that logged out revoked the refresh token), and the
    /// next request finds the identity logged out.
    func sharedLoginRemoved(_ tokens: IdentityTokens) {
        guard !stopping else { return }
        tokens.publish { lifecycle in
            lifecycle.forget()
            return true
        }
        persistence?.remove(tokens)
        observer?.tokenExpiryChanged(identity: tokens.identity.name, unixTime: nil)
        logger.info("logged out through another replica", metadata: ["identity": .string(tokens.identity.name)])
        runNextAction(tokens)
    }
}
