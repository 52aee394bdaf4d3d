// The seam through which per-caller tokens reach the fleet's store (SharedCallerTokens.swift):
// what an ask carries, and SharedTokens' entry point for it. Token loop only.

import OAuth2
import SafeText

/// An exchange's outcome, and what hears it.
typealias CallerTokenOutcome = Result<TokenResponse, TokenEndpointError>
typealias CallerTokenCompletion = (CallerTokenOutcome) -> Void
/// Exchanges the caller's token at the IdP, once, and calls its argument with the outcome, on the
/// token loop.
typealias CallerTokenExchange = (@escaping CallerTokenCompletion) -> Void

/// One ask for a caller's token.
struct CallerTokenAsk {
    let tokens: IdentityTokens
    let caller: Secret
    /// When the caller's token expires (Unix seconds, its `exp`), if known.
    let callerExpiresAt: Double?
    /// The token an upstream refused that this exchange replaces: an entry holding it is no
    /// answer (the flight takes the lease, exchanges and overwrites it).
    let refused: Secret?
    let leaseMilliseconds: Int64
    /// The identity is in force (false: a reload retired it while this exchange was asked for).
    let inForce: Bool
    let exchange: CallerTokenExchange
    let completion: CallerTokenCompletion
}

extension SharedTokens {
    /// For a per-caller identity: the fleet's token for `caller` when a replica already holds one
    /// still reusable for it (CallerEntryLife), else `exchange` runs — under the fleet's single
    /// flight for this caller — and its token is shared; `completion` gets the outcome, on the
    /// token loop. Degraded (Redis down or slow): `exchange` runs alone, as every shared fetch does.
    /// `callerExpiresAt`: the caller's token's expiry (Unix seconds), when known; `leaseMilliseconds`:
    /// how long this replica's lease lasts while it exchanges (LeaseDuration); `refused`: the
    /// token an upstream refused for this caller, never an answer however fresh its entry;
    /// `inForce`: false for an identity a reload retired (its exchange runs alone).
    ///
    /// A token read from the store comes as a `TokenResponse` whose `expiresIn` counts from now.
    func callerToken(for tokens: IdentityTokens, caller: Secret, callerExpiresAt: Double?, refused: Secret? = nil,
                     leaseMilliseconds: Int64, inForce: Bool = true, exchange: @escaping CallerTokenExchange, completion: @escaping CallerTokenCompletion) {
        callers.token(CallerTokenAsk(tokens: tokens, caller: caller, callerExpiresAt: callerExpiresAt, refused: refused,
                                     leaseMilliseconds: leaseMilliseconds, inForce: inForce, exchange: exchange, completion: completion))
    }
}
