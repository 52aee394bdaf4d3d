// The caller's token on a route with `inbound`: read from the head with how it came (Bearer, or
// DPoP with a proof checked here, per request), checked by the route's InboundGate, and the
// request admitted, refused, or parked until the issuer's keys are read or the token's
// introspection lands (in WorkerTokens, woken like a token wait); a parked one is checked again
// when woken. A proof's `jti` is remembered when its request is admitted, not before
// (InboundGate+DPoP.swift): a parked request keeps its proof until then.

import HTTP1
import JOSE
import OAuth2
import Tokens

extension RequestLeg {
    /// Checks the head's caller for `plan`'s route; nil: admitted, the identity's token comes next.
    func checkCaller(_ head: HTTPHead, at gate: InboundGate, plan: RoutePlan, upgrade: [UInt8]?) -> Exchange.HeadAction? {
        let connection = self.connection
        let worker = connection.worker
        let token: UnsafeRawBufferPointer
        let presentation: TokenPresentation
        let proof: DPoPAcceptedProof?
        switch InboundPresentation.read(head, mode: gate.rules.dpop.mode) {
        case .refused(let refusal):
            worker.countInbound(refusal.metricOutcome, route: plan)
            return connection.exchange.callerRefused(.inbound(refusal, route: plan.route.name, challenges: gate.challenges), on: plan)
        case .bearer(let bearer):
            token = bearer
            presentation = .bearer
            proof = nil
        case .dpop(let bound, let proofBytes):
            guard let uri = InboundPresentation.requestURI(head, overTLS: connection.forwarding.overTLS) else {
                let refusal = InboundRefusal.malformedRequest("the request's URI (Host and path) cannot be what a DPoP proof names")
                worker.countInbound(refusal.metricOutcome, route: plan)
                return connection.exchange.callerRefused(.inbound(refusal, route: plan.route.name, challenges: gate.challenges,
                                                                  presentedAsDPoP: true), on: plan)
            }
            let request = DPoPProofRequest(method: String(decoding: head.methodName, as: UTF8.self), uri: uri,
                                           accessToken: String(decoding: bound, as: UTF8.self))
            switch gate.verifyProof(proofBytes, for: request, now: worker.unixTime) {
            case .refused(let refusal):
                worker.countInbound(refusal.metricOutcome, route: plan)
                return connection.exchange.callerRefused(.inbound(refusal, route: plan.route.name, challenges: gate.challenges,
                                                                  presentedAsDPoP: true), on: plan)
            case .verified(let accepted):
                token = bound
                presentation = .dpop(proofKeyThumbprint: accepted.keyThumbprint)
                proof = accepted
            }
        }
        switch worker.checkCaller(token, presentedAs: presentation, proof: proof, at: gate, route: plan) {
        case .admitted(let caller, _, _):
            connection.exchange.callerAdmitted(caller)
            return nil
        case .wait(let introspection):
            // The head's bytes may be gone when woken: the parked request keeps a copy.
            let parked = ParkedCaller(token: String(decoding: token, as: UTF8.self), presentation: presentation, proof: proof,
                                      introspection: introspection)
            return connection.exchange.callerWaits(parked, on: plan, upgrade: upgrade)
        case .refused(let refusal):
            return connection.exchange.callerRefused(.inbound(refusal, route: plan.route.name, challenges: gate.challenges,
                                                              presentedAsDPoP: presentation != .bearer), on: plan)
        }
    }

    /// What this parked request waited for (the issuer's keys, its token's introspection) may be
    /// in: check its caller again, then look the identity's token up.
    func callerCheckMayBeReady(_ parked: ParkedCaller) {
        let connection = self.connection
        guard let plan = connection.exchange.current.plan, let gate = plan.inbound else { return }
        var token = parked.token
        let outcome = token.withUTF8 {
            connection.worker.checkCaller(UnsafeRawBufferPointer($0), presentedAs: parked.presentation, proof: parked.proof, at: gate, route: plan,
                                          parkedOn: parked.introspection, firstAsk: false)
        }
        switch outcome {
        case .wait:
            connection.worker.tokens?.park(self)
        case .refused(let refusal):
            endTokenWait(connection.exchange.callerRefusedAfterWait(.inbound(refusal, route: plan.route.name, challenges: gate.challenges,
                                                                              presentedAsDPoP: parked.presentation != .bearer)))
        case .admitted(let caller, _, _):
            var lookup: WorkerTokens.Lookup?
            if let identity = plan.identity, let tokens = connection.worker.tokens {
                lookup = tokens.lookup(identity, caller: caller.token, startsDeviceLogin: connection.exchange.current.startsLogin)
            }
            let action = connection.exchange.callerAdmittedAfterWait(caller, token: lookup)
            if case .keepWaiting = action {
                connection.worker.tokens?.park(self)
                return
            }
            endTokenWait(action)
        }
    }
}
