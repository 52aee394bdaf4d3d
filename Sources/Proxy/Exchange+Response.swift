// The response side of an exchange as the connection reports it: each event goes to the
// response half (`ExchangeResponse`, whose methods say what each one means) with what it needs of
// the request; the status recorded and keep-alive go with a head, and the token awaited for a
// replay is set here. Also the upstream's failure, and the start of a tunnel.

import HTTP1
import OAuth2

extension Exchange {
    typealias ResponseHeadAction = ExchangeResponse.HeadAction
    typealias ResponseBytes = ExchangeResponse.Bytes
    typealias ResponseEnd = ExchangeResponse.End
    typealias ResponseFinish = ExchangeResponse.Finish

    static var maxInterimResponses: Int { ExchangeResponse.maxInterimResponses }

    // A response event changes the response half and the record while it reads the request
    // half: one access to `current` (`changingCurrent`), so that what it reads is borrowed, not
    // copied.

    @inline(__always)
    mutating func responseHead(_ head: HTTPHead) -> ResponseHeadAction {
        var keepAlive = self.keepAlive
        defer { self.keepAlive = keepAlive }
        return changingCurrent {
            $0.response.head(head, to: $0.request, credential: $0.credential, plan: $0.plan, status: &$0.record.status, keepAlive: &keepAlive)
        }
    }

    mutating func refusalReported(kept: Bool, head: HTTPHead) -> ResponseHeadAction {
        var keepAlive = self.keepAlive
        defer { self.keepAlive = keepAlive }
        return changingCurrent {
            $0.response.refusalReported(kept: kept, head: head, of: $0.request, status: &$0.record.status, keepAlive: &keepAlive)
        }
    }

    mutating func stepUpReported(_ outcome: StepUpOutcome, head: HTTPHead) -> ResponseHeadAction {
        var keepAlive = self.keepAlive
        defer { self.keepAlive = keepAlive }
        return changingCurrent {
            $0.response.stepUpReported(outcome, head: head, of: $0.request, credential: $0.credential, plan: $0.plan,
                                       status: &$0.record.status, keepAlive: &keepAlive)
        }
    }

    mutating func releaseHead() -> Bool { current.response.releaseHead() }
    mutating func responseBody(_ count: Int) -> ResponseBytes {
        changingCurrent { $0.response.body(count, sent: &$0.record.bodyBytesSent) }
    }
    var relaysChunks: Bool { current.response.relaysChunks }
    var relaysResponseBodyAsIs: Bool { current.response.relaysBodyAsIs }
    mutating func responseMessageEnded() -> ResponseEnd { current.response.messageEnded() }

    /// The read that completed the response is parsed; after a refused token the request waits
    /// for the next one.
    @inline(__always)
    mutating func responseFinished() -> ResponseFinish {
        changingCurrent {
            let finish = $0.response.finished(requestComplete: $0.request.upload == .complete)
            if case .replay = finish { $0.credential = .waiting(.beforeReplay) }
            return finish
        }
    }

    /// Nothing of the response reached the client after all: the connection held what the
    /// upstream read carried, and that read went wrong before its end. A failure now is answered.
    mutating func responseRetracted() { current.response.progress = .awaited }
    var responseHeadSent: Bool { current.response.headSent }
    var responseComplete: Bool { current.response.isComplete }

    // MARK: Failures

    typealias FailureAction = ExchangeResponse.FailureAction

    mutating func upstreamFailed(_ failure: UpstreamFailure, reused: Bool, receivedResponseBytes: Bool) -> FailureAction {
        if responseHeadSent { return .closeNow }
        current.response.withdrawHeldHead()
        if current.plan != nil, current.response.retriesOnFreshConnection(after: failure, reused: reused,
                                                                           receivedResponseBytes: receivedResponseBytes,
                                                                           requestHasBody: current.request.hasBody) {
            return .retryOnFreshConnection
        }
        let problem = answeringLocally(.upstreamFailure(failure, route: current.plan?.route.name))
        return .answer(problem, close: current.request.upload == .pending)
    }

    // MARK: Upgrade

    /// The upstream switched protocols: from now on bytes pass both ways unparsed.
    mutating func tunnelStarts() {
        phase = .tunnelling
        current.request.bodyClock = nil
    }
}
