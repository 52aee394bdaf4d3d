// How exchanges and client connections end: local answers (problem documents), rejected
// requests, the next request after a complete exchange, closing, timeouts.

import ByteBuffers
import EventLoop
import HTTP1

extension ClientConnection {
    // MARK: Ending exchanges

    /// Answers with a problem document; with a request body still to come, the connection
    /// ends after the answer (the body is not read).
    func answerLocally(_ problem: Problem) {
        var problem = problem
        if problem.route == nil { problem.route = plan?.route.name }
        exchange.answeredLocally = true
        exchange.responseDone = true
        exchange.status = problem.status
        if exchange.hasRequestBody && !exchange.requestDone { exchange.keepAlive = false }
        scratch.clear()
        problem.write(keepAlive: exchange.keepAlive, viaSuffix: settings.viaSuffix, into: &scratch)
        stream.write(scratch)
        if !exchange.keepAlive { closeAfterResponse() }
    }

    /// A request the parser rejected: answer 400/431 and close (RFC 9112 §2.2: the framing of
    /// what follows cannot be trusted).
    func rejectRequest(_ error: HTTP1Error) {
        let problem: Problem
        switch error.requestStatus {
        case 431: problem = .headersTooLarge(error.reason)
        case 501: problem = .notImplemented(error.reason)
        case 505: problem = .versionNotSupported(error.reason)
        default: problem = .badRequest(error.reason)
        }
        switch phase {
        case .closing, .tunnelling:
            return
        case .awaitingRequest, .readingHead:
            worker.countRejected(status: problem.status)
        case .exchanging:
            if exchange.responseHeadSent {
                // The upstream's response is on its way; the client learns of the error by the close.
                close()
                return
            }
            if exchange.answeredLocally {
                closeAfterResponse()
                return
            }
            // A body that turned out malformed mid-way: the upstream got part of it.
            if let upstream {
                upstream.reusable = false
                upstream.close()
                self.upstream = nil
            }
        }
        phase = .exchanging
        exchange.keepAlive = false
        exchange.answeredLocally = true
        exchange.responseDone = true
        exchange.status = problem.status
        scratch.clear()
        problem.write(keepAlive: false, viaSuffix: settings.viaSuffix, into: &scratch)
        stream.write(scratch)
        closeAfterResponse()
    }

    func finishExchangeIfDone() {
        guard phase == .exchanging, exchange.requestDone, exchange.responseDone else { return }
        recordExchange()
        if let upstream {
            upstream.finishExchange()
            self.upstream = nil
        }
        plan = nil
        if !exchange.keepAlive || worker.isDraining {
            closeAfterResponse()
            return
        }
        exchange = Exchange()
        parser.resume()
        parserPaused = false
        phase = .awaitingRequest
        timer?.arm(afterMilliseconds: settings.idleTimeoutMilliseconds)
    }

    func closeAfterResponse() {
        guard phase != .closing else { return }
        if phase == .exchanging && exchange.responseDone { recordExchange() }
        phase = .closing
        timer?.disarm()
        if let upstream {
            upstream.close()
            self.upstream = nil
        }
        stream.closeAfterWrites()
    }

    /// Closes at once (queued writes dropped).
    func close() {
        if phase != .closing { phase = .closing }
        stream.close()
    }

    /// Called by the worker when draining: an idle connection closes now, a busy one after its
    /// current exchange.
    func drain() {
        if isIdle { close() }
    }

    /// Counts and logs the exchange, once.
    func recordExchange() {
        guard exchange.startedAt != 0 else { return }
        worker.record(exchange, plan: plan, settings: settings)
        exchange.startedAt = 0
    }

    // MARK: Timers and the end of the socket

    func timerFired() {
        switch phase {
        case .awaitingRequest:
            close()
        case .readingHead:
            exchange = Exchange()
            exchange.keepAlive = false
            let problem = Problem.headerTimeout()
            worker.countRejected(status: problem.status)
            scratch.clear()
            problem.write(keepAlive: false, viaSuffix: settings.viaSuffix, into: &scratch)
            stream.write(scratch)
            closeAfterResponse()
        case .exchanging:
            if exchange.waitingForToken {
                tokenWaitExpired()
            } else if exchange.bodyClockStartedAt != 0 {
                requestBodyTimedOut()
            }
        case .tunnelling, .closing:
            break
        }
    }

    /// The request body stopped coming (or crawls below `requestBodyMinBytesPerSecond`): the
    /// upstream connection, which holds a part of it, and the client connection end; the
    /// client gets a 408 if no response has begun.
    func requestBodyTimedOut() {
        exchange.bodyClockStartedAt = 0
        if let upstream {
            upstream.reusable = false
            upstream.close()
            self.upstream = nil
        }
        heldResponseHead.clear()
        if exchange.responseHeadSent || exchange.responseDone {
            close()
            return
        }
        answerLocally(.requestBodyTimeout())
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        switch phase {
        case .exchanging where error == nil && exchange.requestDone:
            // The client closed its sending side after a complete request: answer, then close.
            exchange.keepAlive = false
        case .tunnelling:
            upstream?.finishTunnel()
            upstream = nil
            closeAfterResponse()
        default:
            close()
        }
    }

    func streamDidClose(_ stream: any ByteStream) {
        phase = .closing
        timer?.close()
        timer = nil
        if let upstream {
            // The exchange did not finish: that connection's state is unknown.
            upstream.close()
            self.upstream = nil
        }
        worker.tokens?.unpark(self)
        worker.connectionDidClose(self)
    }
}
