// The exchange's decisions on the caller's token of a route with `inbound` (CallerCheck.swift):
// the head's check admitted it, refused it, or parked the request for the issuer's keys or the
// token's introspection; a parked request's check ends later, and an admitted one goes on to the identity's token.

import OAuth2
import Tokens

extension Exchange {
    /// The caller the route admitted: its token (what a lookup on the caller's behalf keys on) and
    /// the claim header lines for the upstream. Nil when the route requires none.
    var caller: CheckedCaller? { current.caller.caller }

    /// What a lookup made on the caller's behalf needs: the token, its digest and its `exp`; the
    /// bearer token taken as it is on a route without `inbound` (`uncheckedCaller`).
    var callerToken: CallerToken? { current.caller.caller?.token ?? current.uncheckedCaller }

    /// The head's check admitted the caller; the identity's token comes next (`routed`).
    mutating func callerAdmitted(_ caller: CheckedCaller) {
        current.caller = .admitted(caller)
    }

    /// The head's check refused the caller: answered here, nothing forwarded.
    mutating func callerRefused(_ problem: Problem, on plan: RoutePlan) -> HeadAction {
        current.plan = plan
        return .answer(answeringLocally(problem))
    }

    /// The head's check waits for the issuer's keys or an introspection: the request is parked,
    /// and with a body its parser stops after the head (as for a token wait).
    mutating func callerWaits(_ parked: ParkedCaller, on plan: RoutePlan, upgrade: consuming [UInt8]?) -> HeadAction {
        current.plan = plan
        current.request.upgrade = upgrade
        current.caller = .waitingForCheck(parked, parserPausedAtHead: current.request.hasBody)
        return .waitForToken(pauseParser: current.request.hasBody)
    }

    /// A parked request's check admitted the caller; `token`: the identity's token looked up (nil:
    /// the route has no identity). It goes out, waits on for that token, or is answered.
    mutating func callerAdmittedAfterWait(_ caller: CheckedCaller, token: consuming WorkerTokens.Lookup?) -> TokenWaitEnd {
        guard case .waitingForCheck(_, let paused) = current.caller else { return .keepWaiting }
        current.caller = .admitted(caller)
        guard let token, let plan = current.plan else { return .forward(resumeParser: paused) }
        current.request.keepsBodyForReplay(on: plan)
        switch consume token {
        case .inject(let token):
            current.credential = .carried(token)
            return .forward(resumeParser: paused)
        case .wait:
            current.credential = .waiting(.beforeForwarding(parserPausedAtHead: paused))
            return .keepWaiting
        case .fail(let reason):
            return .answer(answeringLocally(.tokenUnavailable(reason, route: plan.route.name)), resumeParser: paused)
        }
    }

    /// A parked request's check refused the caller (`problem`).
    mutating func callerRefusedAfterWait(_ problem: Problem) -> TokenWaitEnd {
        guard case .waitingForCheck(_, let paused) = current.caller else { return .keepWaiting }
        current.caller = .notRequired
        return .answer(answeringLocally(problem), resumeParser: paused)
    }

    /// The request waited `tokenWaitSeconds` for the issuer's keys or the introspection: 503.
    mutating func callerCheckWaitExpired(tokenWaitSeconds: Double) -> TokenWaitEnd {
        let seconds = "within tokenWaitSeconds (\(SecondsText.format(tokenWaitSeconds)) s)"
        let refusal: InboundRefusal = if case .waitingForCheck(let parked, _) = current.caller, parked.introspection != nil {
            .introspectionUnavailable(reason: "the introspection endpoint did not answer \(seconds)", retryAfterSeconds: 1)
        } else {
            .keysUnavailable(reason: "the issuer's keys were not read \(seconds)", retryAfterSeconds: 1)
        }
        return callerRefusedAfterWait(.inbound(refusal, route: current.plan?.route.name))
    }
}
