// How exchanges and client connections end, as the exchange decides: local answers (problem
// documents), rejected requests, the next request after a complete exchange, closing,
// timeouts, the end of the socket.

import ByteBuffers
import EventLoop
import HTTP1
import LoginPages
import Tokens

extension ClientConnection {
    // MARK: Ending exchanges

    /// Writes a problem document the exchange decided on; the connection ends after it unless
    /// the exchange keeps it alive (not with a request body still to come: it is not read).
    func answerLocally(_ problem: Problem) {
        var problem = problem
        if problem.slug == Problem.loginRequiredSlug, let identity = problem.identity, let logins = settings.logins,
           let target = RequestTarget(parser.head.target) {
            // The head is still the parser's: the answer depends on who asks (a browser or not).
            let request = LoginRequest(head: parser.head, path: target.path, queryWithMark: target.queryWithMark, authority: target.authority,
                                       overTLS: forwarding.overTLS)
            problem = problem.loginRequired(by: logins, identity: identity, request: request, at: monotonicSeconds())
        }
        // A listed origin's page reads the relay's own answers too (a login needed, a token refused).
        if let origin = exchange.current.cors, let rules = exchange.current.plan?.cors {
            problem.extraHeaders += rules.responseFields(origin: origin)
        }
        work.scratch.clear()
        problem.write(keepAlive: exchange.keepAlive, viaSuffix: settings.viaSuffix, toHead: exchange.current.request.isHead,
                      into: &work.scratch)
        stream.write(work.scratch)
        if !exchange.keepAlive { closeAfterResponse() }
    }

    /// A request the parser rejected: answer 400/431/501/505 and close.
    func rejectRequest(_ error: HTTP1Error) {
        switch exchange.requestRejected(error) {
        case .ignore:
            return
        case .closeNow:
            close()
        case .closeAfterResponse:
            closeAfterResponse()
        case .answer(let problem, let counted, let abortUpstream):
            if counted { worker.countRejected(status: problem.status) }
            if abortUpstream { upstreamLeg?.abandon() }
            answerLocally(problem)
        }
    }

    func finishExchangeIfDone() {
        guard exchange.isFinished else { return }
        recordExchange()
        withUpstreamLeg { $0.finishExchange() }
        guard exchange.nextRequest(draining: worker.isDraining) else {
            closeAfterResponse()
            return
        }
        if let workspace = workspace.map(Unmanaged.passUnretained) {
            // Lent without a retain: resuming the parser calls nothing back.
            workspace._withUnsafeGuaranteedRef { $0.parser.resume() }
        }
        parserPaused = false
        timer.arm(afterMilliseconds: settings.idleTimeoutMilliseconds)
    }

    func closeAfterResponse() {
        if exchange.recordsOnClose { recordExchange() }
        guard exchange.closesAfterResponse() else { return }
        timer.disarm()
        upstreamLeg?.abandon()
        switch exchange.socketEnding(pipelined: !(workspace?.leftover.isEmpty ?? true)) {
        case .lingering: stream.closeAfterWrites()
        case .atOnceUnlessClientSends: stream.closeAfterWritesUnlessPeerSends()
        }
    }

    /// Closes at once (queued writes dropped).
    func close() {
        exchange.closes()
        stream.close()
    }

    /// Called by the worker when draining: an idle connection closes now, a busy one after its
    /// current exchange.
    func drain() {
        if isIdle { close() }
    }

    /// Counts and logs the exchange, once.
    func recordExchange() {
        guard exchange.current.record.startedAt != 0 else { return }
        // In place: passed by value, the record (a stored property) would be copied first, its
        // three strings retained and released. The plan is lent without a retain: recording
        // changes nothing of the exchange, whose `current` holds the plan until `nextRequest`.
        if let plan = exchange.current.plan.map(Unmanaged.passUnretained) {
            plan._withUnsafeGuaranteedRef { worker.record(&exchange.current.record, plan: $0, of: self) }
        } else {
            worker.record(&exchange.current.record, plan: nil, of: self)
        }
        exchange.current.record.startedAt = 0
    }

    // MARK: Timers and the end of the socket

    func timerFired() {
        switch exchange.expiredDeadline {
        case .none:
            break
        case .idle:
            close()
        case .header:
            // The answer's state is the workspace's, as its bytes are: a connection that sent
            // nothing has none yet.
            _ = work
            let problem = exchange.headerTimedOut()
            worker.countRejected(status: problem.status)
            answerLocally(problem)
        case .tokenWait:
            requestLeg?.tokenWaitExpired()
        case .requestBody:
            requestBodyTimedOut()
        }
    }

    /// The request body stopped coming (or crawls below `requestBodyMinBytesPerSecond`): the
    /// upstream connection, which holds a part of it, and the client connection end; the
    /// client gets a 408 if no response has begun.
    func requestBodyTimedOut() {
        upstreamLeg?.abandon()
        workspace?.response.abandon(exchange: &exchange)
        switch exchange.requestBodyTimedOut() {
        case .closeNow: close()
        case .answer(let problem): answerLocally(problem)
        }
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        switch exchange.clientEnded(cleanly: error == nil) {
        case .answerThenClose:
            break
        case .endTunnel:
            upstreamLeg?.finishTunnel()
            closeAfterResponse()
        case .close:
            close()
        }
    }

    func streamDidClose(_ stream: any ByteStream) {
        releaseExchangeParts()
        worker.connectionDidClose(self)
    }

    /// Ends the connection's part in its exchange, whether its socket closed or went to a
    /// forward-proxy tunnel: the timer, the legs (the upstream's state is unknown when the
    /// exchange did not finish) and the workspace. The legs end together: this ends the cycles
    /// of their strong `connection`.
    func releaseExchangeParts() {
        exchange.closes()
        timer.close()
        upstreamLeg?.abandon()
        if let requestLeg { worker.tokens?.unpark(requestLeg) }
        returnWorkspace()
        upstreamLeg = nil
        requestLeg = nil
    }
}
