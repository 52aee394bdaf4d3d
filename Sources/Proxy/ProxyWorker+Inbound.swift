// One worker's side of the routes' inbound checks: the clocks and the wake-up the gate needs, the
// counts of `oauth_relay_inbound_validations_total`, and the log line for a claim withheld (its
// name, never its value).

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import JOSE
import OAuth2

extension ProxyWorker {
    /// The token `bytes`, presented as `presentation`, checked by `gate` for `route`'s request,
    /// counted by outcome; `proof`: the verified DPoP proof it came with, remembered if the token
    /// is admitted (a replay is refused then); `parkedOn`: the introspection a woken request waited for; `firstAsk`:
    /// false for a woken request (`InboundGate.admit`).
    func checkCaller(_ token: UnsafeRawBufferPointer, presentedAs presentation: TokenPresentation, proof: DPoPAcceptedProof? = nil,
                     at gate: InboundGate, route: RoutePlan, parkedOn parked: PendingIntrospection? = nil, firstAsk: Bool = true) -> InboundGate.Outcome {
        let now = unixTime
        let checked = gate.admit(token, presentedAs: presentation, unixTime: now, monotonic: Double(loop.nowMilliseconds) / 1000,
                                 wake: tokens?.wakeup, parkedOn: parked, firstAsk: firstAsk)
        let outcome = gate.recordingProof(proof, of: checked, now: now)
        switch outcome {
        case .admitted(_, let how, let withheld):
            countInbound(how == .checked ? "valid" : how == .introspected ? "introspected" : "cache_hit", route: route)
            for (claim, why) in withheld {
                logger.warning("claim not passed on: \(why.description)", metadata: ["route": .string(route.route.name), "claim": .string(claim)])
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

    /// Unix seconds now, for a DPoP proof's `iat`.
    var unixTime: Int64 { Int64(time(nil)) }
}
