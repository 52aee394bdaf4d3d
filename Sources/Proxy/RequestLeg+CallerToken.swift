// The caller's token on a route whose identity exchanges it (`Grant.caller`) and that has no
// `inbound` check: the request's one `Authorization: Bearer` token (read as a route with `inbound`
// reads it, InboundCredential.swift), taken as it is for the token endpoint to judge when it is
// exchanged. Its digest is the per-caller cache's key; its `exp`, read unverified from a JWT before
// its exchange, only shortens how long the exchanged token is reused (`CallerExchanges`).

import Crypto
import HTTP1
import Tokens

extension RequestLeg {
    /// Takes the head's bearer token as the caller's for `plan`'s route; returns the answer when
    /// there is none (401 with the challenge, as a route with `inbound` answers) or it is not one
    /// token68 (400), nil when taken.
    func takeCallerToken(_ head: HTTPHead, plan: RoutePlan) -> Exchange.HeadAction? {
        let connection = self.connection
        let credential = InboundCredential.read(head)
        guard case .bearer(let token) = credential else {
            return connection.exchange.callerRefused(.inbound(credential.refusal ?? .noToken, route: plan.route.name), on: plan)
        }
        connection.exchange.current.uncheckedCaller = CallerToken(value: String(decoding: token, as: UTF8.self),
                                                                  digest: SHA256.hash(token), expiresAt: nil)
        return nil
    }
}
