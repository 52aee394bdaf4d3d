// DPoP on a client connection's exchanges (RFC 9449): a new proof for a request sent again, a
// proof that could not be signed, the nonces upstream responses bring, and the replay after a
// `use_dpop_nonce` answer, which keeps the token. The proof in each head: UpstreamRequestHead.swift.

import HTTP1
import HTTPClient
import JOSE

extension UpstreamLeg {
    /// A request sent again on a fresh connection (the reused one turned out closed) gets a new
    /// proof: the old one may have reached the upstream, which would take its `jti` for a
    /// replayed proof. False when the proof could not be signed (answered locally).
    func renewProofForRetry(_ plan: RoutePlan) -> Bool {
        guard plan.usesDPoP, connection.exchange.token?.dpop != nil else { return true }
        let work = connection.work
        guard writeUpstreamRequestHead(for: plan, in: work) else { return false }
        work.replayableHead.clear()
        work.replayableHead.append(work.scratch.readableBytes)
        return true
    }

    /// A proof could not be signed (OpenSSL failed): 502, and the request goes nowhere.
    func proofFailed(_ error: JOSEError, plan: RoutePlan) {
        connection.worker.logger.error("DPoP proof could not be signed",
                                       metadata: ["route": .string(plan.route.name), "error": .string("\(error)")])
        connection.answerLocally(connection.exchange.answeringLocally(.badGateway("the DPoP proof for the upstream could not be signed: \(error)",
                                                                                  route: plan.route.name)))
    }

    /// Keeps the nonce an upstream response brings for the next proofs to its route's upstream
    /// (only responses to requests with a `DPoP` token are looked at), unless another worker heard
    /// a newer one since this request's proof was made. Inlined: its first check ends it for every
    /// other response, and a call cost 17 instructions per request.
    @inline(__always)
    func learnDPoPNonce(from head: HTTPHead) {
        guard let plan = connection.exchange.current.plan, plan.usesDPoP, connection.exchange.token?.dpop != nil,
              let proofs = connection.worker.tokens?.proofs, let nonce = DPoPChallenge.nonce(in: head) else { return }
        proofs.remember(nonce, for: plan, provedAt: connection.work.dpopNonceVersion)
    }

    /// The upstream's `use_dpop_nonce` answer drained: its connection goes back, and the request
    /// goes again at once with the same token and a proof carrying the nonce that answer asked for
    /// (`ExchangeResponse.dpopChallengeNonce`).
    func replayWithNonce(after upstream: UpstreamConnection) {
        upstream.finishExchange()
        self.upstream = nil
        let connection = self.connection
        guard let plan = connection.exchange.current.plan else { return }
        connection.worker.logger.debug("upstream asked for a DPoP nonce; sending the request again with it",
                                       metadata: ["route": .string(plan.route.name)])
        if let identity = plan.identity { connection.worker.tokens?.service.upstreamAskedForDPoPNonce(identity) }
        forwardRequestHead(in: connection.work)
        connection.finishExchangeIfDone()
        connection.drive()
    }
}
