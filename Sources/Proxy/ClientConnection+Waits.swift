// A client exchange's two waits, each with its deadline on the connection's timer: for the
// route identity's token (parked in WorkerTokens, at most `tokenWaitSeconds`), and for the
// request body (`requestBodyTimeoutSeconds`, extended by every byte received). The exchange
// decides; this file arms the timer and parks the connection.

import EventLoop
import HTTP1
import OAuth2

extension ClientConnection {
    // MARK: Waiting for the token

    /// The request waits for its token from now on, `tokenWaitSeconds` at most.
    func startTokenWait() {
        timer.arm(afterMilliseconds: settings.tokenWaitMilliseconds)
    }

    /// The token thread ended a fetch this parked request waited for: ask again.
    func tokenMayBeReady() {
        guard exchange.phase == .exchanging, exchange.isWaitingForToken, let identity = exchange.current.plan?.identity,
              let tokens = worker.tokens else { return }
        let action = exchange.tokenLookedUp(tokens.lookup(identity, startsDeviceLogin: exchange.current.startsLogin))
        if case .keepWaiting = action {
            // Not this identity's result, or a new fetch began: wait on, to the same deadline.
            tokens.park(self)
            return
        }
        endTokenWait(action)
    }

    /// The request waited `tokenWaitSeconds` for its token: 503, so no request hangs on a token
    /// endpoint that does not answer.
    func tokenWaitExpired() {
        guard let action = exchange.tokenWaitExpired(tokenWaitSeconds: settings.tokenWaitSeconds) else { return }
        worker.tokens?.unpark(self)
        endTokenWait(action)
    }

    /// Ends a wait for the token: the request goes out with it, or is answered locally.
    private func endTokenWait(_ action: Exchange.TokenWaitEnd) {
        timer.disarm()
        let resumeParser: Bool
        switch action {
        case .forward(let resume):
            resumeParser = resume
            leg?.forwardRequestHead()
        case .answer(let problem, let resume):
            resumeParser = resume
            answerLocally(problem)
        case .keepWaiting:
            return
        }
        if resumeParser {
            resumeParsing()
        } else {
            finishExchangeIfDone()
            drive()
        }
    }

    /// Parses on after a pause in the middle of a request (its head was held for a token).
    func resumeParsing() {
        guard exchange.phase == .exchanging else { return }
        parserPaused = false
        let work = self.work
        work.parser.resume()
        if !work.leftover.isEmpty { parseLeftover(of: work) }
        drive()
    }

    // MARK: The request body's deadline

    /// (Re)starts the request body's deadline (see `CurrentExchange.BodyClock`): a body that averages
    /// less than `requestBodyMinBytesPerSecond` is cut off (slow-body attacks pin an upstream
    /// connection each) while a large upload at any useful speed never is.
    func startBodyClock() {
        if exchange.startBodyClock(now: stream.loop.nowMilliseconds) {
            timer.arm(afterMilliseconds: settings.requestBodyTimeoutMilliseconds)
        }
    }

    @inline(__always)
    func bodyBytesArrived(_ count: Int) {
        let now = stream.loop.nowMilliseconds
        guard let due = exchange.bodyBytesArrived(count, now: now, timeoutMilliseconds: settings.requestBodyTimeoutMilliseconds,
                                                  minBytesPerSecond: settings.requestBodyMinBytesPerSecond) else { return }
        timer.arm(afterMilliseconds: due > now ? due - now : 0)
    }
}
