// RequestLeg: the client connection's request as it arrives, parsed. It is the request parser's
// delegate: at a head it finds where the request goes (`RequestPlacement`, the caller's token on a
// route with `inbound`: RequestLeg+Caller.swift, the identity's token) and has it forwarded, parked
// until the token (or the issuer's keys) is ready, or answered locally; the body's bytes,
// its chunks and the message's end go on to the upstream through the `UpstreamLeg`. It owns the
// request's two waits (RequestLeg+Waits.swift): for the token and for the body. `ClientConnection`
// keeps the socket, the timer, the workspace and the feeding of the parser (pipelining included),
// and the endings; `UpstreamLeg` is the side facing the upstream.
//
// What it reads of its connection, and why: the `exchange` (every request event is reported to
// it and its answer carried out here), the `work`space (the parser's head; the normalized path
// for the placement; `scratch` for chunk framing; the body kept for a replay), the `settings`,
// `forwarding` and `worker` of the exchange (the placement's inputs; tokens, the clock, counts),
// the `timer` (the head's, the token's and the body's deadlines), and the `upstreamLeg` the
// request goes out through. What it asks of the connection: take the settings a reload
// published, answer locally, stop reading while the upstream's backlog is full, and parse on or
// finish the exchange after a wait.

import ByteBuffers
import EventLoop
import HTTP1
import Tokens

final class RequestLeg: HTTP1ParserDelegate {
    /// Strong, and a `let`, for the reason given on `ClientConnection.worker` (the parser's
    /// callbacks call into the connection many times per request, and a `let` lets them borrow
    /// it). The two are created together, one per client connection, and end together: the
    /// connection drops its request leg when its socket closes (`streamDidClose`), which ends
    /// this cycle. One object more per connection: one allocation at the accept, none per request.
    let connection: ClientConnection

    init(connection: ClientConnection) {
        self.connection = connection
    }

    // MARK: The head

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        let connection = self.connection
        return connection.withWork { work in headParsed(parser.head, work: work) }
    }

    /// The head arrived, `work`: the connection's workspace (lent without a retain).
    @inline(__always)
    private func headParsed(_ head: HTTPHead, work: ExchangeWorkspace) -> HTTP1Parser.BodyExpectation {
        let connection = self.connection
        connection.timer.disarm()
        work.replayBody.clear()
        work.replayBody.shrink(ifLargerThan: Exchange.maxReplayBodyBytes)
        if !connection.worker.settingsAreCurrent(for: connection) { connection.adopt(connection.worker.currentSettings) }
        connection.exchange.headParsed(head, keepAlive: head.keepAlive && !connection.worker.isDraining,
                                       startedAt: connection.timesExchanges ? connection.worker.clock() : 0)
        switch place(head, work: work) {
        case .forward:
            // Forwarded in the same callback as the head arrived: the head's time serves (one
            // clock read less per request).
            let startedAt = connection.exchange.current.record.startedAt
            connection.withUpstreamLeg { $0.forwardRequestHead(at: startedAt, in: work) }
            return .framed
        case .waitForToken(let pauseParser):
            // The head stays in the parser until the token thread wakes this worker
            // (`tokenMayBeReady`). A body waits unparsed in `leftover`.
            startTokenWait()
            connection.worker.tokens?.park(self)
            return pauseParser ? .pauseAfterHead : .framed
        case .answer(let problem):
            connection.answerLocally(problem)
            return .framed
        case .handOff:
            // The CONNECT's socket goes to its tunnel once the parser stops after the head.
            return .framed
        }
    }

    /// Where a request head leads (`RequestPlacement`), and for a route with an identity, the
    /// identity's token looked up, for the exchange to decide. `work`: the connection's
    /// workspace, passed in (each read of `connection.work` is a retain and a release).
    @inline(__always)
    private func place(_ head: HTTPHead, work: ExchangeWorkspace) -> Exchange.HeadAction {
        let connection = self.connection
        let logging = connection.settings.accessLog
        if logging { connection.exchange.current.record.logged = LoggedRequest(method: String(decoding: head.methodName, as: UTF8.self)) }
        // The reverse listeners' requests pay one test of an optional for the forward proxy.
        let forwardSide = connection.forwardSide
        if let forwardSide, let action = placeOnForwardProxy(head, side: forwardSide) { return action }
        let placement = RequestPlacement(settings: connection.settings, overTLS: connection.forwarding.overTLS,
                                         hostVouched: forwardSide != nil)
            .place(head, normalizedPath: &work.normalizedPath, record: &connection.exchange.current.record, logging: logging)
        switch placement {
        case .route(let plan, let upgrade, let cors, let startsLogin):
            connection.exchange.current.cors = cors
            connection.exchange.current.startsLogin = startsLogin
            if let gate = plan.inbound, let action = checkCaller(head, at: gate, plan: plan, upgrade: upgrade) { return action }
            // Lent to the lookup without a retain each: the identity is the plan's (a `let`, and
            // `plan` is held to the end of the placement), the tokens the worker's (set once, at
            // its start, for its whole life).
            guard let identity = plan.identity.map(Unmanaged.passUnretained),
                  let tokens = connection.worker.tokens.map(Unmanaged.passUnretained) else {
                return connection.exchange.routed(plan, upgrade: upgrade, token: nil)
            }
            if identity._withUnsafeGuaranteedRef({ $0.callers != nil }), plan.inbound == nil,
               let action = takeCallerToken(head, plan: plan) { return action }
            let token = tokens._withUnsafeGuaranteedRef { tokens in
                identity._withUnsafeGuaranteedRef {
                    tokens.lookup($0, caller: connection.exchange.callerToken, startsDeviceLogin: startsLogin)
                }
            }
            return connection.exchange.routed(plan, upgrade: upgrade, token: token)
        case .loginPage(let request):
            return connection.exchange.refused(Problem(connection.settings.logins!.answer(request, at: monotonicSeconds())), closing: false)
        case .answer(let problem, let closing, let refusal):
            if let refusal { connection.worker.countRefused(refusal) }
            return connection.exchange.refused(problem, closing: closing)
        }
    }

    // MARK: The body and the message's end, sent on

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {
        let connection = self.connection
        guard connection.exchange.forwardsRequestBody, let upstreamLeg = connection.upstreamLeg, upstreamLeg.isConnected else { return }
        bodyBytesArrived(bytes.count)
        upstreamLeg.sendRequestBody(bytes)
        upstreamLeg.noteRequestProgress()
        if upstreamLeg.isAboveHighWater { connection.blockReadsForUpstream() }
    }

    /// `count` body bytes went from the client's socket to the upstream's by splice
    /// (ClientConnection+Splice.swift): the body's clock, the count and the upstream's progress as
    /// for bytes parsed, and its backlog checked. Nothing is kept for a replay (`BodySplice`).
    func bodySpliced(_ count: Int) {
        let connection = self.connection
        guard let upstreamLeg = connection.upstreamLeg else { return }
        bodyBytesArrived(count)
        _ = connection.exchange.sentRequestBody(count)
        upstreamLeg.noteRequestProgress()
        if upstreamLeg.isAboveHighWater { connection.blockReadsForUpstream() }
    }

    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {
        let connection = self.connection
        guard connection.exchange.forwardsRequestBody, let upstreamLeg = connection.upstreamLeg, upstreamLeg.isConnected, size > 0 else { return }
        let work = connection.work
        work.scratch.clear()
        work.scratch.appendHex(size)
        work.scratch.append("\r\n")
        upstreamLeg.sendRequestBody(work.scratch.readableBytes)
    }

    func parserDidFinishChunk(_ parser: HTTP1Parser) {
        guard connection.exchange.forwardsRequestBody, let upstreamLeg = connection.upstreamLeg, upstreamLeg.isConnected else { return }
        upstreamLeg.sendRequestBody(staticBytes("\r\n"))
    }

    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        let connection = self.connection
        let (end, bodyClockRan) = connection.exchange.requestEnded()
        if case .forwarded(let lastChunk) = end {
            connection.withUpstreamLeg { upstreamLeg in
                if lastChunk, upstreamLeg.isConnected {
                    connection.withWork { work in
                        work.scratch.clear()
                        ForwardedHead.writeLastChunk(trailersOf: work.parser.head, plan: connection.exchange.current.plan, into: &work.scratch)
                        upstreamLeg.sendRequestBody(work.scratch.readableBytes)
                    }
                }
                upstreamLeg.noteRequestSent()
            }
        }
        if bodyClockRan { connection.timer.disarm() }
        return connection.exchange.pausesParserAtRequestEnd
    }
}
