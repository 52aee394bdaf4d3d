// DPoP on a client connection's exchanges (RFC 9449): the proof each forwarded request with a
// `DPoP` token carries (signed for the target the upstream receives), the nonces upstream
// responses bring, and the replay after a `use_dpop_nonce` answer, which keeps the token.

import HTTP1
import HTTPClient
import JOSE

extension ClientConnection {
    /// Writes the head for `target` (as the upstream receives it, chosen by
    /// `writeUpstreamRequestHead`) with the token; for a `DPoP` token with a fresh proof whose
    /// `htu` is the upstream's origin and `target`'s path. Returns the signing failure, if any
    /// (nothing is written then).
    func writeHeadWithTokenAndProof(_ head: HTTPHead, plan: RoutePlan, target: UnsafeRawBufferPointer,
                                    requestTarget: RequestTarget, token: UnsafeRawBufferPointer?) -> JOSEError? {
        let clientHost = requestTarget.authority ?? head.host
        // Routes without DPoP do not look at the token (a copy of it) at all.
        guard plan.usesDPoP, let dpop = exchange.token?.dpop, let proofs = worker.tokens?.proofs else {
            ForwardedHead.writeRequest(head, target: target, plan: plan, framing: exchange.current.request.framing,
                                       forwarding: forwarding, clientHost: clientHost, token: token,
                                       upgrade: exchange.current.request.upgrade, into: &work.scratch)
            return nil
        }
        // The asterisk-form's target URI has no path (RFC 9110 §7.1).
        let path = requestTarget.isAsterisk ? UnsafeRawBufferPointer(start: nil, count: 0) : target
        do throws(JOSEError) {
            try proofs.withProof(dpop, method: head.methodName, plan: plan, target: path) { proof in
                ForwardedHead.writeRequest(head, target: target, plan: plan, framing: exchange.current.request.framing,
                                           forwarding: forwarding, clientHost: clientHost, token: token, proof: proof,
                                           upgrade: exchange.current.request.upgrade, into: &work.scratch)
            }
            return nil
        } catch {
            return error
        }
    }

    /// A request sent again on a fresh connection (the reused one turned out closed) gets a new
    /// proof: the old one may have reached the upstream, which would take its `jti` for a
    /// replayed proof. False when the proof could not be signed (answered locally).
    func renewProofForRetry(_ plan: RoutePlan) -> Bool {
        guard plan.usesDPoP, exchange.token?.dpop != nil else { return true }
        guard writeUpstreamRequestHead(for: plan) else { return false }
        work.replayableHead.clear()
        work.replayableHead.append(work.scratch.readableBytes)
        return true
    }

    /// A proof could not be signed (OpenSSL failed): 502, and the request goes nowhere.
    func proofFailed(_ error: JOSEError, plan: RoutePlan) {
        worker.logger.error("DPoP proof could not be signed", metadata: ["route": .string(plan.route.name), "error": .string("\(error)")])
        answerLocally(exchange.answeringLocally(.badGateway("the DPoP proof for the upstream could not be signed: \(error)",
                                                            route: plan.route.name)))
    }

    /// Keeps the nonce an upstream response brings for the next proofs to its route's upstream
    /// (only responses to requests with a `DPoP` token are looked at).
    func learnDPoPNonce(from head: HTTPHead) {
        guard let plan = exchange.current.plan, plan.usesDPoP, exchange.token?.dpop != nil, let proofs = worker.tokens?.proofs,
              let nonce = DPoPChallenge.nonce(in: head) else { return }
        proofs.remember(nonce, for: plan)
    }

    /// The upstream's `use_dpop_nonce` answer drained: its connection goes back, and the request
    /// goes again at once with the same token and a proof carrying the new nonce.
    func replayWithNonce(after upstream: UpstreamConnection) {
        upstream.finishExchange()
        self.upstream = nil
        guard let plan = exchange.current.plan else { return }
        worker.logger.debug("upstream asked for a DPoP nonce; sending the request again with it",
                            metadata: ["route": .string(plan.route.name)])
        if let identity = plan.identity { worker.tokens?.service.upstreamAskedForDPoPNonce(identity) }
        forwardRequestHead()
        finishExchangeIfDone()
        drive()
    }
}
