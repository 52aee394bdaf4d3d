// How exchanges and the connection end (the next request, closing, rejected requests, the
// client's end), what the connection's one timer means when it fires, and when to read.

import HTTP1

extension Exchange {
    // MARK: The end of an exchange

    /// Both the request and its response are complete (the exchange is recorded, then
    /// `nextRequest` says whether the connection goes on).
    var isFinished: Bool { phase == .exchanging && current.request.upload == .complete && responseComplete }

    /// After a finished exchange: true when the connection waits for the next request (the
    /// parser resumes, the idle deadline runs), false when it closes after the response.
    mutating func nextRequest(draining: Bool) -> Bool {
        current.plan = nil
        // The workspace holding this state may be lent to another client's connection before
        // a head replaces it: the upstream token and the caller's go now, whatever reads it.
        current.credential = .none
        // Tested first: most requests have neither, and clearing an empty one is still a call
        // into the runtime to release nothing.
        if !current.caller.isNotRequired { current.caller = .notRequired }
        if current.uncheckedCallerBox != nil { current.uncheckedCallerBox = nil }
        guard keepAlive && !draining else { return false }
        // The request's state is replaced by the next head (`headParsed`).
        phase = .awaitingRequest
        return true
    }

    /// The connection ends after what is queued for the client. Returns false when it was
    /// ending already.
    mutating func closesAfterResponse() -> Bool {
        guard phase != .closing else { return false }
        phase = .closing
        return true
    }

    /// How the client's socket ends after the response (`ClientConnection.closeAfterResponse`).
    enum SocketEnding: Equatable {
        /// FIN, then what the client still sends is read and discarded for a while before the
        /// close: bytes left unread would make the kernel answer with a reset, which can destroy
        /// the response before the client reads it.
        case lingering
        /// The client asked for the close and its request was read to its end: the socket
        /// closes once the response is written, and lingers only if the client sent more.
        case atOnceUnlessClientSends
    }

    /// How the socket ends; `pipelined`: bytes after the request wait in the connection's
    /// buffer. The relay's own reasons to close (a refusal, an upstream's unframed answer,
    /// draining) keep the linger: the client may have sent its next request already.
    func socketEnding(pipelined: Bool) -> SocketEnding {
        guard current.request.clientCloses, !current.request.isUpgrade, current.request.upload == .complete, !pipelined else {
            return .lingering
        }
        return .atOnceUnlessClientSends
    }

    /// Whether a closing exchange is still to be recorded (its response is complete).
    var recordsOnClose: Bool { phase == .exchanging && responseComplete }

    mutating func closes() { phase = .closing }

    // MARK: Rejected requests

    /// What to do with a request the parser rejected (RFC 9112 §2.2: the framing of what
    /// follows cannot be trusted, so the connection ends).
    enum RejectAction {
        case ignore
        /// The upstream's response is on its way: the client learns of the error by the close.
        case closeNow
        /// The relay's own answer is out: close after it.
        case closeAfterResponse
        /// Answer the problem and close after it; `counted`: no exchange records it (it had no
        /// head), `abortUpstream`: the upstream got part of a body that turned out malformed.
        case answer(Problem, counted: Bool, abortUpstream: Bool)
    }

    mutating func requestRejected(_ error: HTTP1Error) -> RejectAction {
        let problem = Problem.rejected(error)
        var counted = false
        var abortUpstream = false
        switch phase {
        case .closing, .tunnelling:
            return .ignore
        case .awaitingRequest, .readingHead:
            // No head of this request: nothing of the last one may shape the answer (after a
            // HEAD, a 400 would go out without the body its length announces).
            current = CurrentExchange()
            counted = true
        case .exchanging:
            if responseHeadSent { return .closeNow }
            if current.response.progress == .answeredLocally { return .closeAfterResponse }
            abortUpstream = true
        }
        phase = .exchanging
        keepAlive = false
        current.response.progress = .answeredLocally
        current.record.status = problem.status
        return .answer(problem, counted: counted, abortUpstream: abortUpstream)
    }

    // MARK: Timers

    typealias Deadline = ClientDeadline

    /// What the connection's timer means when it fires.
    var expiredDeadline: Deadline {
        Deadline(phase: phase, waitingForToken: isWaitingForToken, bodyClockRuns: current.request.bodyClock != nil)
    }

    /// The head timed out: the answer, after which the connection closes.
    mutating func headerTimedOut() -> Problem {
        keepAlive = false
        current = CurrentExchange()
        return .headerTimeout()
    }

    /// What a request body that stopped coming ends in: the upstream connection, which holds
    /// a part of it, is dropped either way.
    enum BodyTimeoutAction {
        /// Part of the response is out (or all of it): close at once.
        case closeNow
        /// 408, then close.
        case answer(Problem)
    }

    mutating func requestBodyTimedOut() -> BodyTimeoutAction {
        current.request.bodyClock = nil
        current.response.withdrawHeldHead()
        if responseHeadSent || responseComplete { return .closeNow }
        return .answer(answeringLocally(.requestBodyTimeout()))
    }

    // MARK: The client's end

    enum ClientEndAction {
        /// The client closed its sending side after a complete request: answer, then close.
        case answerThenClose
        /// The client ended the tunnel: the upstream gets what is queued, then both close.
        case endTunnel
        case close
    }

    mutating func clientEnded(cleanly: Bool) -> ClientEndAction {
        switch phase {
        case .exchanging where cleanly && current.request.upload == .complete:
            keepAlive = false
            return .answerThenClose
        case .tunnelling:
            return .endTunnel
        default:
            return .close
        }
    }

    // MARK: Reading and backpressure (decided by `Backpressure`)

    typealias UpstreamDrained = Backpressure.UpstreamDrained

    func readsOnWhilePipelined(pipelinedBytes: Int) -> Bool { Backpressure.readsOnWhilePipelined(pipelinedBytes: pipelinedBytes) }

    /// Whether the client is read after the parser's turn: not while the upstream's backlog is
    /// full, a lot of pipelined bytes wait, or the connection tunnels or ends.
    func readsClient(pipelinedBytes: Int) -> Bool {
        switch phase {
        case .awaitingRequest, .readingHead, .exchanging: return backpressure.readsClient(pipelinedBytes: pipelinedBytes)
        case .tunnelling, .closing: return false
        }
    }

    /// The upstream's write backlog passed its high-water mark: stop reading the client.
    /// Returns whether the body's timer is to be disarmed (the relay stopped reading, not the
    /// client: that time is not the body's).
    mutating func upstreamBacklogFull() -> Bool {
        backpressure.insert(.clientReads)
        return current.request.bodyClock != nil
    }

    mutating func upstreamBacklogDrained(pipelinedBytes: Int) -> UpstreamDrained {
        backpressure.upstreamBacklogDrained(pipelinedBytes: pipelinedBytes, tunnelling: phase == .tunnelling,
                                            bodyClockRan: current.request.bodyClock != nil)
    }

    /// The client's write backlog passed its high-water mark: stop reading the upstream.
    mutating func clientBacklogFull() { backpressure.insert(.upstreamReads) }
    mutating func clientBacklogDrained() -> Bool { backpressure.clientBacklogDrained() }
}
