// WorkerTokens: one worker's side of the identities' tokens.
//
// The hot path asks `lookup(identity)`; the cache is indexed by the identity's cache index, which
// stays below the most identities in force at once (reused after a reload retires its identity), and
// each entry names the slot it belongs to (unique for the life of the process), so it stays right
// across reloads. A cache hit — the entry's slot is the identity's, the generation of the
// identity's state is the one the cached token came from, and the token is not expired — costs an
// atomic load and two comparisons. Otherwise the shared lifecycle decides (under its lock):
// inject a token, wait, or fail; a decision to wait registers this worker's wake-up under the same lock
// (`IdentityTokens.decide`). Requests that must wait are parked here; the token thread wakes
// this worker's loop when the identity's fetch ends, and each parked request asks again. A
// parked request also has a deadline (`limits.tokenWaitSeconds`, kept by its RequestLeg).

import EventLoop
import OAuth2
import Tokens

final class WorkerTokens {
    enum Lookup {
        case inject(CachedToken)
        case wait
        /// Indirect: its payload (the reason's texts) made every answer 144 bytes, a cache hit's
        /// too, copied three times on its way into the exchange (callgrind: 87 instructions of
        /// `memcpy` a request).
        indirect case fail(TokenUnavailable)
    }

    /// A token as this worker injects it.
    /// A class: every request that carries the token holds one reference to it, not a copy of
    /// its fields (an exchange stays small, and taking the token costs one retain).
    final class CachedToken {
        /// The token (for invalidation after an upstream 401: only this exact token is dropped).
        let value: String
        let bytes: [UInt8]
        /// The identity it belongs to: a retired identity shares its cache index with a new one.
        let slot: Int
        let generation: UInt64
        /// Loop milliseconds from which it is no longer injected.
        let expiresAtMilliseconds: UInt64
        /// For a `DPoP` token: what its proofs need (nil: a Bearer token).
        let dpop: DPoPProofing?

        init(value: String, bytes: [UInt8], slot: Int, generation: UInt64, expiresAtMilliseconds: UInt64, dpop: DPoPProofing? = nil) {
            self.value = value
            self.bytes = bytes
            self.slot = slot
            self.generation = generation
            self.expiresAtMilliseconds = expiresAtMilliseconds
            self.dpop = dpop
        }
    }

    let service: TokenService
    /// This worker's DPoP proof writers and upstream nonces.
    let proofs = WorkerProofs()
    let loop: EventLoop
    /// The wake-up of this worker's parked requests: registered with whatever they wait for (an
    /// identity's result, a caller's exchange, an inbound issuer's keys or an introspection).
    private(set) var wakeup: LoopWakeup?
    private var cache: [CachedToken?]
    /// The challenges declined last, answered again here without the identity's lock.
    private var declinedStepUps = DeclinedStepUps()
    /// Connections waiting for a token, in arrival order.
    private var parked: [RequestLeg] = []

    init(service: TokenService, loop: EventLoop) {
        self.service = service
        self.loop = loop
        cache = []
        wakeup = LoopWakeup(loop: loop) { [unowned self] in self.fetchEnded() }
    }

    /// `startsDeviceLogin`: a device identity with no login may start one for this request
    /// (not for a HEAD or a part of a page: `BrowserRequest.loginStartRefusal`). `caller`: the
    /// request's own token, for an identity that exchanges it (WorkerTokens+Callers.swift);
    /// `firstLookup`: false for a parked request asking again.
    func lookup(_ tokens: IdentityTokens, caller: CallerToken?, startsDeviceLogin: Bool, firstLookup: Bool = true) -> Lookup {
        if let callers = tokens.callers { return lookup(callers, of: tokens, caller: caller, firstLookup: firstLookup) }
        let index = tokens.cacheIndex
        let generation = tokens.generation
        let now = loop.nowMilliseconds
        if index < cache.count, let cached = cache[index], cached.slot == tokens.slot, cached.generation == generation,
           now < cached.expiresAtMilliseconds {
            return .inject(cached)
        }
        switch tokens.decide(at: Double(now) / 1000, wakingOnResult: wakeup, startsDeviceLogin: startsDeviceLogin) {
        case .inject(let token):
            var dpop: DPoPProofing?
            if token.type == "DPoP" {
                switch proofs.proofing(for: token, of: tokens) {
                case .success(let proofing): dpop = proofing
                case .failure(let problem): return .fail(problem)
                }
            }
            let cached = CachedToken(value: token.value, bytes: Array(token.value.utf8), slot: tokens.slot, generation: generation,
                                     expiresAtMilliseconds: UInt64(max(0, token.expiresAt * 1000)), dpop: dpop)
            if index >= cache.count { cache.append(contentsOf: repeatElement(nil, count: index + 1 - cache.count)) }
            cache[index] = cached
            return .inject(cached)
        case .wait:
            service.needToken(tokens)
            return .wait
        case .fail(let problem):
            return .fail(problem)
        }
    }

    func park(_ request: RequestLeg) {
        parked.append(request)
    }

    func unpark(_ request: RequestLeg) {
        if let index = parked.firstIndex(where: { $0 === request }) { parked.remove(at: index) }
    }

    /// An upstream refused `token` on a route whose `minTokenAgeForRetrySeconds` is
    /// `minimumAge`: the identity fetches anew unless the token is kept (see
    /// `TokenLifecycle.refused`); for an identity with per-caller tokens, only `caller`'s.
    func refused(_ tokens: IdentityTokens, token: CachedToken, caller: CallerToken?, minimumAge: Double) -> TokenLifecycle.Refusal {
        if tokens.callers != nil {
            guard let caller else { return .superseded }
            return refused(tokens, token: token, caller: caller, minimumAge: minimumAge)
        }
        let refusal = service.refused(tokens, token: token.value, at: Double(loop.nowMilliseconds) / 1000, minimumAge: minimumAge)
        if refusal != .kept { dropCached(tokens) }
        return refusal
    }

    /// An upstream answered `token` with a challenge asking for `stepUp` (see
    /// `TokenService.stepUp`); a login is needed, the cached token is dropped. For an identity with per-caller tokens, a step-up is the caller's
    /// business: it counts as granted (an answer like any other).
    /// `transition`: the identity's step-up changed (one is pending or wider now) or a challenge
    /// is declined here for the first time; false for a repeat.
    func stepUp(_ tokens: IdentityTokens, token: CachedToken, _ stepUp: StepUp) -> (outcome: StepUpOutcome, transition: Bool) {
        guard tokens.callers == nil else { return (.alreadyGranted, false) }
        if declinedStepUps.contains(slot: tokens.slot, token: token, stepUp: stepUp) {
            service.stepUpDeclinedAgain(tokens)
            return (.declined, false)
        }
        let report = service.reportStepUp(tokens, stepUp, token: token.value, at: Double(loop.nowMilliseconds) / 1000)
        switch report.outcome {
        case .loginNeeded:
            dropCached(tokens)
            return (report.outcome, report.pendingChanged)
        case .declined:
            declinedStepUps.note(slot: tokens.slot, token: token, stepUp: stepUp)
            return (report.outcome, true)
        case .alreadyGranted:
            return (report.outcome, false)
        }
    }

    /// Drops the cached tokens of identities a reload replaced or removed, and the room past the
    /// last cache index in force.
    func keepOnly(_ identities: TokenSet) {
        let inForce = Set(identities.identities.map(\.slot))
        for index in cache.indices where cache[index].map({ !inForce.contains($0.slot) }) ?? false { cache[index] = nil }
        let length = (identities.identities.map(\.cacheIndex).max() ?? -1) + 1
        if cache.count > length { cache.removeLast(cache.count - length) }
        declinedStepUps.keepOnly(slots: inForce)
        proofs.keepOnly(slots: inForce)
    }

    /// Drops `tokens`' cached token (not a successor's sharing its index).
    private func dropCached(_ tokens: IdentityTokens) {
        if tokens.cacheIndex < cache.count, cache[tokens.cacheIndex]?.slot == tokens.slot { cache[tokens.cacheIndex] = nil }
    }

    private func fetchEnded() {
        let waiting = parked
        parked.removeAll()
        for request in waiting { request.tokenMayBeReady() }
    }

    func close() {
        wakeup?.close()
        wakeup = nil
    }
}
