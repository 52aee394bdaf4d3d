// One worker's side of the routes' inbound checks: the clocks and the wake-up the gate needs, the
// counts of `oauth_relay_inbound_validations_total`, and the log line for a claim withheld (its
// name, never its value).

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ProxyWorker {
    /// The token `bytes` checked by `gate` for `route`'s request, counted by outcome.
    func checkCaller(_ token: UnsafeRawBufferPointer, at gate: InboundGate, route: RoutePlan) -> InboundGate.Outcome {
        let outcome = gate.admit(token, unixTime: Int64(time(nil)), monotonic: Double(loop.nowMilliseconds) / 1000,
                                 wake: tokens?.parkedRequestsWakeup)
        switch outcome {
        case .admitted(_, let fresh, let withheld):
            countInbound(fresh ? "valid" : "cache_hit", route: route)
            for (claim, why) in withheld {
                logger.warning(why == .controlCharacter ? "claim not passed on: its value holds a control character"
                                   : "claim not passed on: it is not a string, a number, a boolean or an array of strings",
                               metadata: ["route": .string(route.route.name), "claim": .string(claim)])
            }
        case .wait:
            break
        case .refused(let refusal):
            countInbound(refusal.metricOutcome, route: route)
        }
        return outcome
    }

    /// Counts an inbound check's `outcome` on `route`.
    func countInbound(_ outcome: String, route: RoutePlan) {
        metrics?.countInboundValidation(route: route.route.name, outcome: outcome)
    }
}
