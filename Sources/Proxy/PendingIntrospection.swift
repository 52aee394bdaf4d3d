// PendingIntrospection: one opaque token's question to a route's introspection endpoint, under
// way on the token thread, with the loops whose requests are parked on it. As with InboundKeys,
// a request decides to wait and registers its loop's wake-up in one step under the lock
// (`landing(orWake:)`), and the token thread records the answer and takes the waiting loops in
// one step (`land`), waking them after the lock is released: no answer can land between a
// decision to wait and its registration. Each parked request holds the question, so every one of
// them reads its answer, whether or not the answer may be reused for the next request.

import EventLoop
import Locking

final class PendingIntrospection: Sendable {
    /// What the question came to, for the route (the binding to a DPoP key is judged per request).
    enum Landing: Sendable {
        /// Active: the caller as the gate keeps it (admitted, or lacking scopes), and the claims
        /// not passed on.
        case caller(CheckedCaller, withheld: [(claim: String, why: ClaimHeaderLines.Withholding)])
        case refused(InboundRefusal)
    }

    private struct State {
        var landing: Landing?
        var waiting: [LoopWakeup] = []
    }

    private let state = Locked(State())

    /// The answer, once in; until then nil, and `wake` is woken when it comes.
    func landing(orWake wake: LoopWakeup) -> Landing? {
        state.withLock { state in
            if let landing = state.landing { return landing }
            if !state.waiting.contains(where: { $0 === wake }) { state.waiting.append(wake) }
            return nil
        }
    }

    /// Token loop: the answer, recorded once; the parked requests' loops are woken.
    func land(_ landing: Landing) {
        let wakeups = state.withLock { state -> [LoopWakeup] in
            state.landing = landing
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for wakeup in wakeups { wakeup.wake() }
    }
}
