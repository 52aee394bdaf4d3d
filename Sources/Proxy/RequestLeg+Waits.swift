// A request's two waits, each with its deadline on the connection's timer: for the route
// identity's token, or for what checks the caller's token (the issuer's keys, an introspection),
// parked in WorkerTokens for `tokenWaitSeconds` at most; and for the request body
// (`requestBodyTimeoutSeconds`, extended by every byte received). The exchange decides; this file
// arms the timer and parks the request.

import EventLoop
import HTTP1
import OAuth2

extension RequestLeg {
    // MARK: Waiting for the token

    /// The request waits for its token from now on, `tokenWaitSeconds` at most.
    func startTokenWait() {
        connection.timer.arm(afterMilliseconds: connection.settings.tokenWaitMilliseconds)
    }

    /// The token thread ended a fetch this parked request waited for: ask again.
    func tokenMayBeReady() {
        let connection = self.connection
        guard connection.exchange.phase == .exchanging else { return }
        if case .waitingForCheck(let parked, _) = connection.exchange.current.caller { return callerCheckMayBeReady(parked) }
        guard connection.exchange.isWaitingForToken,
              let identity = connection.exchange.current.plan?.identity, let tokens = connection.worker.tokens else { return }
        let action = connection.exchange.tokenLookedUp(tokens.lookup(identity, caller: connection.exchange.callerToken,
                                                                     startsDeviceLogin: connection.exchange.current.startsLogin,
                                                                     firstLookup: false))
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
        guard let action = connection.exchange.tokenWaitExpired(tokenWaitSeconds: connection.settings.tokenWaitSeconds) else { return }
        connection.worker.tokens?.unpark(self)
        endTokenWait(action)
    }

    /// Ends a wait for the token: the request goes out with it, or is answered locally.
    func endTokenWait(_ action: Exchange.TokenWaitEnd) {
        let connection = self.connection
        connection.timer.disarm()
        let resumeParser: Bool
        switch action {
        case .forward(let resume):
            resumeParser = resume
            connection.upstreamLeg?.forwardRequestHead(in: connection.work)
        case .answer(let problem, let resume):
            resumeParser = resume
            connection.answerLocally(problem)
        case .keepWaiting:
            return
        }
        if resumeParser {
            connection.resumeParsing()
        } else {
            connection.finishExchangeIfDone()
            connection.drive()
        }
    }

    // MARK: The request body's deadline

    /// (Re)starts the request body's deadline (see `CurrentExchange.BodyClock`): a body that averages
    /// less than `requestBodyMinBytesPerSecond` is cut off (slow-body attacks pin an upstream
    /// connection each) while a large upload at any useful speed never is.
    func startBodyClock() {
        let connection = self.connection
        if connection.exchange.startBodyClock(now: connection.stream.loop.nowMilliseconds) {
            connection.timer.arm(afterMilliseconds: connection.settings.requestBodyTimeoutMilliseconds)
        }
    }

    @inline(__always)
    func bodyBytesArrived(_ count: Int) {
        let connection = self.connection
        let now = connection.stream.loop.nowMilliseconds
        guard let due = connection.exchange.bodyBytesArrived(count, now: now,
                                                             timeoutMilliseconds: connection.settings.requestBodyTimeoutMilliseconds,
                                                             minBytesPerSecond: connection.settings.requestBodyMinBytesPerSecond)
        else { return }
        connection.timer.arm(afterMilliseconds: due > now ? due - now : 0)
    }
}
