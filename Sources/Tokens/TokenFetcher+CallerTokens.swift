// The seam between per-caller tokens (an identity with `subjectTokenFrom: "caller"`: the caller
// side keeps the exchanged tokens in memory, bounded, with its single flight across the workers,
// and makes the exchange) and the fleet's store. The caller side calls `callerToken` on the token
// loop whenever its cache has no token for a caller; whatever the configuration, the answer comes
// once, on the token loop: from Redis, or from `exchange` (run at most once per call, and not at
// all when another replica's token serves).

import OAuth2
import SafeText

extension TokenFetcher {
    /// The token for `caller` of the per-caller identity `tokens`: with `store.redis` the fleet's
    /// (SharedTokens.callerToken: a replica's token for this caller, else `exchange` under the
    /// fleet's single flight, shared once obtained); without it, or for an identity whose tokens
    /// stay on this replica (a DPoP key generated here), `exchange` alone.
    /// `callerExpiresAt`: the caller's token's `exp` (Unix seconds), when known; `refused`: the
    /// token an upstream refused that this exchange replaces, if any.
    func callerToken(for tokens: IdentityTokens, caller: Secret, callerExpiresAt: Double?, refused: Secret?,
                     exchange: @escaping CallerTokenExchange, completion: @escaping CallerTokenCompletion) {
        guard let shared = sharedStore(for: tokens) else { return exchange(completion) }
        shared.callerToken(for: tokens, caller: caller, callerExpiresAt: callerExpiresAt, refused: refused,
                           leaseMilliseconds: LeaseDuration.milliseconds(of: tokens.identity, limits: idp.limits), inForce: isInForce(tokens),
                           exchange: exchange, completion: completion)
    }

    /// `forgotten` hears, on the token loop, of each per-caller identity another replica (or
    /// `oauth-relay logout`) logged out: the caller side drops that identity's callers from its
    /// cache, so that the next request of each caller exchanges again. (This replica's own logout
    /// is the caller side's to handle, with or without Redis.)
    func whenSharedCallersForgotten(_ forgotten: @escaping (IdentityTokens) -> Void) {
        sharedFetch?.shared.callers.forgotten = forgotten
    }
}
