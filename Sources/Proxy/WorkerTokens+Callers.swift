// One worker's side of the tokens of an identity that exchanges its callers' tokens
// (`Grant.caller`): the per-caller cache (Tokens' `CallerTokens`) looked up with the caller's
// token, and the answer in the form the rest of the request path knows (`WorkerTokens.Lookup`).
//
// A hit costs the SHA-256 of the caller's token (made once per request, when the head is read) and
// one dictionary lookup under the cache's lock; the token is handed on as a `CachedToken`, so its
// header is written, and an upstream's refusal replays the request, as for any token. A miss
// parks the request like any token wait (this worker's wake-up registered in the same step) and,
// for the lookup that began it, has the token thread send the exchange.

import OAuth2
import SafeText
import Tokens

extension WorkerTokens {
    /// The token of `caller` for `tokens`, an identity with per-caller tokens. `firstLookup`: not
    /// a parked request asking again (which the cache's counts leave out).
    func lookup(_ callers: CallerTokens, of tokens: IdentityTokens, caller: CallerToken?, firstLookup: Bool) -> Lookup {
        guard let caller, let key = caller.key else { return .fail(Self.noCallerToken(identity: tokens.identity.name)) }
        guard let wakeup else { return .wait }
        switch callers.lookup(key, at: Double(loop.nowMilliseconds) / 1000, wakingOnResult: wakeup, counted: firstLookup) {
        case .hit(let token):
            return .inject(CachedToken(value: token.value, bytes: token.bytes, slot: tokens.slot, generation: 0,
                                       expiresAtMilliseconds: UInt64(max(0, token.reuseUntil * 1000))))
        case .wait(let exchange):
            if exchange {
                service.exchangeForCaller(tokens, CallerExchange(key: key, token: Secret(caller.value), expiresAt: caller.expiresAt))
            }
            return .wait
        case .fail(let problem):
            return .fail(problem)
        }
    }

    /// An upstream refused `token`, the one `caller` carried: that caller's entry is dropped
    /// (its next request exchanges again) unless it is kept (see `CallerCache.refused`).
    func refused(_ tokens: IdentityTokens, token: CachedToken, caller: CallerToken, minimumAge: Double) -> TokenLifecycle.Refusal {
        guard let key = caller.key else { return .superseded }
        return service.refusedCallerToken(tokens, key: key, token: token.value, at: Double(loop.nowMilliseconds) / 1000,
                                          minimumAge: minimumAge)
    }

    /// A request without the caller's token reached the lookup (the head's placement answers it
    /// first: RequestLeg+CallerToken.swift).
    static func noCallerToken(identity: String) -> TokenUnavailable {
        TokenUnavailable(identity: identity, reason: .callerUnauthorized,
                         detail: "the request has no bearer token for identity \(identity) to exchange")
    }
}
