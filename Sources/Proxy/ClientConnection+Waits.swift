// A client exchange's two waits, each with its deadline on the connection's timer: for the
// route identity's token (parked in WorkerTokens, at most `tokenWaitSeconds`), and for the
// request body (`requestBodyTimeoutSeconds`, extended by every byte received).

import EventLoop
import HTTP1
import OAuth2

extension ClientConnection {
    // MARK: Waiting for the token

    /// The request waits for its token from now on, `tokenWaitSeconds` at most.
    func startTokenWait() {
        exchange.waitingForToken = true
        timer?.arm(afterMilliseconds: settings.tokenWaitMilliseconds)
    }

    /// The token thread ended a fetch this parked request waited for: ask again.
    func tokenMayBeReady() {
        guard phase == .exchanging, exchange.waitingForToken, let plan, let identity = plan.identity,
              let tokens = worker.tokens else { return }
        let lookup = tokens.lookup(identity)
        if case .wait = lookup {
            // Not this identity's result, or a new fetch began: wait on, to the same deadline.
            tokens.park(self)
            return
        }
        endTokenWait(lookup, plan: plan)
    }

    /// The request waited `tokenWaitSeconds` for its token: 503, so no request hangs on a token
    /// endpoint that does not answer.
    func tokenWaitExpired() {
        guard exchange.waitingForToken, let plan, let name = plan.route.identity else { return }
        worker.tokens?.unpark(self)
        let seconds = settings.config.limits.tokenWaitSeconds
        endTokenWait(.fail(TokenUnavailable(identity: name, reason: .unavailable, retryAfterSeconds: 1,
                                            detail: "no token for identity \(name) within tokenWaitSeconds "
                                                + "(\(SecondsText.format(seconds)) s): the token endpoint has not answered")),
                     plan: plan)
    }

    /// Ends a wait for the token: the request goes out with it, or is answered locally.
    private func endTokenWait(_ lookup: WorkerTokens.Lookup, plan: RoutePlan) {
        exchange.waitingForToken = false
        timer?.disarm()
        switch lookup {
        case .inject(let token):
            exchange.token = token
            forwardRequestHead(plan)
        case .fail(let reason):
            answerLocally(.tokenUnavailable(reason, route: plan.route.name))
        case .wait:
            return
        }
        if exchange.pausedAtHead {
            exchange.pausedAtHead = false
            resumeParsing()
        } else {
            finishExchangeIfDone()
            drive()
        }
    }

    /// Parses on after a pause in the middle of a request (its head was held for a token).
    func resumeParsing() {
        guard phase == .exchanging else { return }
        parserPaused = false
        parser.resume()
        if !leftover.isEmpty {
            parsing.swapStorage(with: &leftover)
            leftover.clear()
            feedParser(parsing.readableBytes)
            parsing.clear()
        }
        drive()
    }

    // MARK: The request body's deadline

    /// (Re)starts the request body's deadline: `requestBodyTimeoutSeconds` from now, extended
    /// by 1/`requestBodyMinBytesPerSecond` s per byte received (`bodyBytesArrived`), so a body
    /// that averages less than that rate is cut off (slow-body attacks pin an upstream connection
    /// each) while a large upload at any useful speed never is.
    func startBodyClock() {
        guard exchange.hasRequestBody, !exchange.requestDone, !exchange.answeredLocally, phase == .exchanging else { return }
        exchange.bodyClockStartedAt = max(1, stream.loop.nowMilliseconds)
        exchange.bodyBytesSinceClockStart = 0
        if !readsBlockedByUpstream { timer?.arm(afterMilliseconds: settings.requestBodyTimeoutMilliseconds) }
    }

    @inline(__always)
    func bodyBytesArrived(_ count: Int) {
        guard exchange.bodyClockStartedAt != 0 else { return startBodyClock() }
        exchange.bodyBytesSinceClockStart += UInt64(count)
        guard !readsBlockedByUpstream else { return }
        let due = exchange.bodyClockStartedAt + settings.requestBodyTimeoutMilliseconds
            + exchange.bodyBytesSinceClockStart * 1000 / settings.requestBodyMinBytesPerSecond
        let now = stream.loop.nowMilliseconds
        timer?.arm(afterMilliseconds: due > now ? due - now : 0)
    }

    func stopBodyClock() {
        guard exchange.bodyClockStartedAt != 0 else { return }
        exchange.bodyClockStartedAt = 0
        timer?.disarm()
    }
}
