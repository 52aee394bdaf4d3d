// A route's opaque tokens (RFC 7662): a token the gate has not kept is asked about once, however
// many requests carry it meanwhile (the first registers the question in `pending` and posts it;
// the others park on the same `PendingIntrospection`). The answer lands on the token loop: it is
// judged for the route (`landing`, pure), kept among the checked tokens for as long as it may be
// reused, and handed to every parked request.

import Config
import EventLoop
import JOSE
import OAuth2
import SafeText
import Tokens

extension InboundGate {
    /// Different tokens asked about at once, at most, per route: past that a new one is answered
    /// 503 (a flood of made-up tokens holds no more).
    static let maximumPendingIntrospections = 1024
    /// What a caller is told when the introspection endpoint gave no usable answer.
    static let introspectionFailed = "the introspection endpoint gave no usable answer"

    func introspect(_ bytes: UnsafeRawBufferPointer, digest: [UInt8], key: TokenDigest, at source: IntrospectionSource,
                    presentedAs presentation: TokenPresentation, wake: LoopWakeup?) -> Outcome {
        guard let wake else { return .refused(Self.noWakeup) }
        let (question, first) = pending.withLock { pending -> (PendingIntrospection?, Bool) in
            if let known = pending[key] { return (known, false) }
            guard pending.count < Self.maximumPendingIntrospections else { return (nil, false) }
            let question = PendingIntrospection()
            pending[key] = question
            return (question, true)
        }
        guard let question else {
            return .refused(.introspectionUnavailable(reason: "too many tokens are being introspected", retryAfterSeconds: 1))
        }
        // Registered before the question is posted: its answer cannot land unseen.
        if let landing = question.landing(orWake: wake) { return landed(landing, presentedAs: presentation) }
        if first {
            let token = String(decoding: bytes, as: UTF8.self)
            let rules = rules, introspectionRules = source.rules
            source.ask(Secret(token)) { [self] outcome in
                let now = unixClock()
                let landing = Self.landing(of: outcome, token: token, digest: digest, rules: rules, introspectionRules: introspectionRules, now: now)
                if case .caller(let caller, _) = landing, caller.validUntil > now { callers.remember(caller, under: key) }
                pending.withLock { _ = $0.removeValue(forKey: key) }
                question.land(landing)
            }
        }
        return .wait(introspection: question)
    }

    /// A landed answer as this request presents the token.
    func landed(_ landing: PendingIntrospection.Landing, presentedAs presentation: TokenPresentation) -> Outcome {
        switch landing {
        case .caller(let caller, let withheld): judged(caller, presentedAs: presentation, how: .introspected, withheld: withheld)
        case .refused(let refusal): .refused(refusal)
        }
    }

    /// What an introspection `outcome` about `token` means for a route with `rules`, at `now`.
    /// An active token's answer is judged as if presented with the key it is bound to, if any:
    /// how each request presents it is judged per request (`judged`). An answer without `aud` is
    /// taken (django-oauth-toolkit sends none); one with `aud` must name one of the audiences.
    static func landing(of outcome: IntrospectionOutcome, token: String, digest: [UInt8], rules: InboundRules,
                        introspectionRules: IntrospectionRules, now: Int64) -> PendingIntrospection.Landing {
        switch outcome {
        case .answered(let response, _, let reusableSeconds):
            guard case .active(let active) = response else { return .refused(.invalidToken(.inactive)) }
            var judging = introspectionRules
            if active.audience.isEmpty { judging.audiences = [] }
            let ownKey: TokenPresentation = active.boundKeyThumbprint.map { .dpop(proofKeyThumbprint: $0) } ?? .bearer
            let validUntil = now + max(0, reusableSeconds)
            let callerToken = CallerToken(value: token, digest: digest, expiresAt: active.expiry ?? validUntil)
            switch response.verdict(judging, presentedAs: ownKey, now: now) {
            case .accepted(let accepted):
                let rendered = ClaimHeaderLines.render(accepted.claims, as: rules.claimHeaders)
                return .caller(CheckedCaller(token: callerToken, standing: .admitted, claimLines: rendered.lines, validUntil: validUntil,
                                             boundKeyThumbprint: accepted.boundKeyThumbprint), withheld: rendered.withheld)
            case .insufficientScope(let missing):
                return .caller(CheckedCaller(token: callerToken, standing: .lacksScopes(missing), claimLines: [], validUntil: validUntil,
                                             boundKeyThumbprint: active.boundKeyThumbprint), withheld: [])
            case .invalidToken(let refusal):
                return .refused(.invalidToken(InvalidToken(refusal)))
            }
        case .failed(let error):
            let retryAfter = error.retryAfter.map { max(1, Int($0.rounded(.up))) } ?? 1
            // The error's words (the endpoint's URL, status, error code, an excerpt of its
            // answer) are logged on the token thread (`Introspections`), not sent to the caller.
            return .refused(.introspectionUnavailable(reason: Self.introspectionFailed, retryAfterSeconds: retryAfter))
        case .overloaded:
            return .refused(.introspectionUnavailable(reason: "too many tokens are being introspected", retryAfterSeconds: 1))
        case .stopped:
            return .refused(.introspectionUnavailable(reason: "the relay is stopping", retryAfterSeconds: 1))
        }
    }
}
