// The caller's token on a route with `inbound`: read from the head, checked by the route's
// InboundGate, and the request admitted, refused, or parked until the issuer's keys are read (in
// WorkerTokens, woken like a token wait); a parked one is checked again when the keys come.

import HTTP1
import Tokens

extension RequestLeg {
    /// Checks the head's caller for `plan`'s route; nil: admitted, the identity's token comes next.
    func checkCaller(_ head: HTTPHead, at gate: InboundGate, plan: RoutePlan, upgrade: [UInt8]?) -> Exchange.HeadAction? {
        let connection = self.connection
        let credential = InboundCredential.read(head)
        guard case .bearer(let token) = credential else {
            let refusal = credential.refusal ?? .noToken
            connection.worker.countInbound(refusal.metricOutcome, route: plan)
            return connection.exchange.callerRefused(.inbound(refusal, route: plan.route.name), on: plan)
        }
        switch connection.worker.checkCaller(token, at: gate, route: plan) {
        case .admitted(let caller, _, _):
            connection.exchange.callerAdmitted(caller)
            return nil
        case .wait:
            // The head's bytes may be gone when the keys come: the parked request keeps a copy.
            return connection.exchange.callerWaitsForKeys(String(decoding: token, as: UTF8.self), on: plan, upgrade: upgrade)
        case .refused(let refusal):
            return connection.exchange.callerRefused(.inbound(refusal, route: plan.route.name), on: plan)
        }
    }

    /// The issuer's keys this parked request waited for may be in: check its caller again, then
    /// look the identity's token up.
    func callerKeysMayBeReady(_ token: String) {
        let connection = self.connection
        guard let plan = connection.exchange.current.plan, let gate = plan.inbound else { return }
        var token = token
        let outcome = token.withUTF8 { connection.worker.checkCaller(UnsafeRawBufferPointer($0), at: gate, route: plan) }
        switch outcome {
        case .wait:
            connection.worker.tokens?.park(self)
        case .refused(let refusal):
            endTokenWait(connection.exchange.callerRefusedAfterWait(.inbound(refusal, route: plan.route.name)))
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
