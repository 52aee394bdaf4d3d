// Exchange: the proxy's decisions for the requests of one client connection, with no socket.
//
// The connection reports what happened (a request head parsed and placed on a route, body
// bytes, the token's lookup, the upstream's head, body and end, a failure, a timer, a backlog
// drained) and does what the answer says (forward, discard, answer locally with a problem,
// replay with a new token, tunnel, pause or resume reading, close). Everything a decision needs
// is here: framing, keep-alive, the order of pipelined requests, 100-continue, the replay after a
// refused token, the upgrade allowlist, the limit of interim responses, the error answers. The
// connection keeps only bytes: the parsers, the buffers and the sockets.
//
// Answers are small enums returned by value (no allocation per event); body bytes never come
// here, only their counts.
//
// Lifecycle of the connection (`phase`): awaitingRequest (idle keep-alive) → readingHead →
// exchanging → awaitingRequest ..., or → tunnelling after an upgrade, or → closing.
// Within `exchanging`, the request side (`upload`), the token (`credential`) and the response
// side (`response`) move on independently: a response may begin before its request ends.
//
// This file: the states and the request side. Exchange+Response.swift: the upstream's answer,
// failures and replays. Exchange+Ending.swift: the end of an exchange, timers, flow control.

import HTTP1
import OAuth2

struct Exchange {
    enum Phase { case awaitingRequest, readingHead, exchanging, tunnelling, closing }

    /// What the head said about the request (fixed for the exchange).
    struct Request {
        var versionMinor: UInt8 = 1
        var isHead = false
        var isUpgrade = false
        var framing = ForwardedHead.Framing.none
        /// A body follows the head (chunked, or a Content-Length above zero).
        var hasBody = false
        /// The client sent `Expect: 100-continue`: it waits for the interim answer (or a
        /// second) before its body, so the body's clock starts with its first byte instead.
        var expectsContinue = false
        /// No declared length over `maxReplayBodyBytes` (a chunked body is kept until it passes it).
        var lengthFitsReplay = true
        /// The `Upgrade` value forwarded (the protocols the route allows), nil for none: an
        /// upstream's 101 is accepted only when there is one.
        var upgrade: [UInt8]?
    }

    /// How far the request got from the client.
    enum Upload { case pending, complete }

    /// The route identity's token for this request.
    enum Credential {
        /// The route forwards without a token.
        case none
        /// Parked until the identity's fetch ends (at most `tokenWaitSeconds`).
        case waiting(TokenWait)
        /// Injected into the request as sent.
        case carried(WorkerTokens.CachedToken)
        /// Injected into the request sent again after the upstream refused the first token: a
        /// second refusal goes to the client.
        case replayed(WorkerTokens.CachedToken)
    }

    enum TokenWait {
        /// Before the request went anywhere; with a body, the parser stopped after the head.
        case beforeForwarding(parserPausedAtHead: Bool)
        /// For a replay after the upstream refused the token.
        case beforeReplay
    }

    /// Whether the request can be sent again with a new token.
    enum BodyReplay: Equatable {
        /// Nothing to keep: no body.
        case withoutBody
        /// The body sent so far is kept by the connection (this many bytes, within the limit).
        case keeping(Int)
        /// The body is not kept (no token route with `retryOnStatus` or DPoP, or over the limit).
        case impossible
    }

    /// The response body as the client gets it.
    struct ResponseBody: Equatable {
        var framing: ForwardedHead.Framing
        /// The upstream's body was chunked (its chunks are relayed; otherwise the relay chunks).
        var upstreamChunked: Bool
    }

    /// How far the response got.
    enum Response: Equatable {
        /// Nothing relayed yet (or only interim responses).
        case awaited
        /// An interim (1xx) response is being parsed.
        case interim
        /// A `retryOnStatus` answer to a refused token, dropped for a replay.
        case refused
        /// A 401 asking for a DPoP nonce (`use_dpop_nonce`), dropped: the request goes again with
        /// the same token and a proof carrying the nonce that answer brought.
        case nonceChallenged
        /// The head is written but held back until body bytes follow or the upstream read that
        /// carried it is fully parsed: bad framing right behind it then still becomes a clean 502.
        case held(ResponseBody)
        /// The head went to the client; the body follows.
        case streaming(ResponseBody)
        /// The upstream's response went to the client whole; `closeDelimited`: its body ended
        /// with the connection (an HTTP/1.0 client without a length), which then closes.
        case complete(closeDelimited: Bool)
        /// The relay answered itself (404, 400, 502, ...); request body bytes are discarded.
        case answeredLocally
    }

    /// A deadline of the request body: `requestBodyTimeoutSeconds` from `startedAt` (loop
    /// milliseconds), extended by 1/`requestBodyMinBytesPerSecond` s per byte received since.
    struct BodyClock {
        var startedAt: UInt64
        var bytesSinceStart: UInt64 = 0
    }

    /// Which direction's reads are stopped for the other side's write backlog.
    struct Backpressure: OptionSet {
        let rawValue: UInt8
        /// The client is not read while the upstream's backlog drains.
        static let clientReads = Backpressure(rawValue: 1)
        /// The upstream is not read while the client's backlog drains.
        static let upstreamReads = Backpressure(rawValue: 2)
    }

    /// What to do with a request head.
    enum HeadAction {
        case forward
        /// Park the request until its token is ready; `pauseParser`: a body follows, keep it
        /// unparsed until then.
        case waitForToken(pauseParser: Bool)
        case answer(Problem)
    }

    /// What to do once a token wait ends.
    enum TokenAction {
        /// Not this identity's result, or a new fetch began: park again, to the same deadline.
        case keepWaiting
        case forward(resumeParser: Bool)
        case answer(Problem, resumeParser: Bool)
    }

    /// What to do with request body bytes the connection sent upstream, for a replay.
    enum BodyKeeping { case none, keep, dropKept }

    /// The buffered-replay limit of a request body (issue 4: 64 KiB).
    static let maxReplayBodyBytes = 64 * 1024

    /// Pipelined bytes held while a response is pending before reading stops.
    static let maxBufferedPipelineBytes = 64 * 1024

    // The state below is changed only by the events (the methods in Exchange*.swift); the
    // connection reads it.
    var phase = Phase.awaitingRequest
    /// Requests whose head arrived on this connection.
    var exchangesStarted = 0
    /// Whether the connection stays open after this exchange.
    var keepAlive = true
    var request = Request()
    var upload = Upload.pending
    var credential = Credential.none
    var bodyReplay = BodyReplay.withoutBody
    var response = Response.awaited
    var interimResponses = 0
    /// The request went again on a fresh connection after a reused one turned out closed.
    var retriedOnFreshConnection = false
    /// The request went again after an upstream's `use_dpop_nonce` answer (once per request).
    var dpopNonceReplayed = false
    /// The route of the exchange (nil before the head, or when none matched).
    var plan: RoutePlan?
    /// The listed origin (`browser.allowOrigins`) whose page sent the request: its answers
    /// carry that origin's CORS fields.
    var cors: Int?
    /// The request may start a person's device login (`BrowserRequest.loginStartRefusal`): asked
    /// again when a parked request looks its token up anew.
    var startsLogin = false
    var bodyClock: BodyClock?
    var backpressure: Backpressure = []
    /// For the metrics and the access log.
    var record = ExchangeRecord()

    // MARK: The request head

    /// Bytes arrive on an idle connection: a head starts. Returns whether one did.
    mutating func readingStarts() -> Bool {
        guard phase == .awaitingRequest else { return false }
        phase = .readingHead
        return true
    }

    /// Most heads arrive whole in their first read; the header deadline is armed only for one
    /// that did not (its clock starts at the read that began it), and not for the connection's
    /// first head, whose deadline runs from the accept.
    func needsHeaderDeadline(headStarted: Bool) -> Bool {
        headStarted && phase == .readingHead && exchangesStarted > 0
    }

    /// A request head is parsed: a new exchange begins. `keepAlive`: the client allows another
    /// request after it and the worker is not draining.
    @inline(__always)
    mutating func headParsed(_ head: HTTPHead, keepAlive: Bool, startedAt: UInt64) {
        phase = .exchanging
        exchangesStarted += 1
        self.keepAlive = keepAlive
        upload = .pending
        credential = .none
        bodyReplay = .withoutBody
        response = .awaited
        interimResponses = 0
        retriedOnFreshConnection = false
        dpopNonceReplayed = false
        bodyClock = nil
        plan = nil
        cors = nil
        startsLogin = false
        record = ExchangeRecord()
        record.startedAt = startedAt
        let hasBody = head.isChunked || (head.contentLength ?? 0) > 0
        request = Request(versionMinor: head.versionMinor, isHead: head.isHead, isUpgrade: head.isUpgrade,
                          framing: head.isChunked ? .chunked : (head.contentLength != nil ? .contentLength : .none),
                          hasBody: hasBody,
                          expectsContinue: hasBody && head.fields.contains(where: { $0.known == .expect }),
                          lengthFitsReplay: (head.contentLength ?? 0) <= UInt64(Self.maxReplayBodyBytes), upgrade: nil)
    }

    /// The connection's routing refused the head: it is answered here. `closing`: what follows
    /// cannot be trusted (a bad target or Host), so the connection ends after the answer.
    mutating func refused(_ problem: Problem, closing: Bool) -> HeadAction {
        if closing { keepAlive = false }
        return .answer(answeringLocally(problem))
    }

    /// The head is on `plan`'s route; `upgrade`: the protocols the route allows of those asked
    /// for; `token`: the identity's lookup (nil: no identity). It is forwarded, maybe after a
    /// token wait, or answered here.
    @inline(__always)
    mutating func routed(_ plan: RoutePlan, upgrade: consuming [UInt8]?, token: consuming WorkerTokens.Lookup?) -> HeadAction {
        self.plan = plan
        request.upgrade = upgrade
        guard let token else { return .forward }
        if request.hasBody {
            let mayReplay = !plan.route.retryOnStatus.isEmpty || plan.usesDPoP
            bodyReplay = mayReplay && request.lengthFitsReplay ? .keeping(0) : .impossible
        }
        switch consume token {
        case .inject(let token):
            credential = .carried(token)
            return .forward
        case .wait:
            // A body waits unparsed: the parser stops after the head. A request without one
            // completes and stops at its end, as every request does.
            credential = .waiting(.beforeForwarding(parserPausedAtHead: request.hasBody))
            return .waitForToken(pauseParser: request.hasBody)
        case .fail(let reason):
            return .answer(answeringLocally(.tokenUnavailable(reason, route: plan.route.name)))
        }
    }

    /// The token injected into the request (nil: none, or still waiting).
    var token: WorkerTokens.CachedToken? {
        switch credential {
        case .carried(let token), .replayed(let token): return token
        case .none, .waiting: return nil
        }
    }

    var isWaitingForToken: Bool {
        if case .waiting = credential { return true }
        return false
    }

    /// The request goes out again with a new token: the kept body follows its head.
    var isReplay: Bool {
        if case .replayed = credential { return true }
        return false
    }

    /// The request goes out again (a new token, or a DPoP nonce): the kept body follows its head.
    var resendsKeptBody: Bool { isReplay || dpopNonceReplayed }

    // MARK: The token

    /// The identity's token was looked up again for a waiting request.
    mutating func tokenLookedUp(_ lookup: WorkerTokens.Lookup) -> TokenAction {
        guard case .waiting(let wait) = credential else { return .keepWaiting }
        var resumeParser = false
        if case .beforeForwarding(let paused) = wait { resumeParser = paused }
        switch lookup {
        case .wait:
            return .keepWaiting
        case .inject(let token):
            if case .beforeReplay = wait { credential = .replayed(token) } else { credential = .carried(token) }
            return .forward(resumeParser: resumeParser)
        case .fail(let reason):
            credential = .none
            return .answer(answeringLocally(.tokenUnavailable(reason, route: plan?.route.name)), resumeParser: resumeParser)
        }
    }

    /// The request waited `tokenWaitSeconds` for its token: 503, so no request hangs on a token
    /// endpoint that does not answer. Nil when it was not waiting.
    mutating func tokenWaitExpired(tokenWaitSeconds: Double) -> TokenAction? {
        guard isWaitingForToken, let name = plan?.route.identity else { return nil }
        let reason = TokenUnavailable(identity: name, reason: .unavailable, retryAfterSeconds: 1,
                                      detail: "no token for identity \(name) within tokenWaitSeconds "
                                          + "(\(SecondsText.format(tokenWaitSeconds)) s): the token endpoint has not answered")
        return tokenLookedUp(.fail(reason))
    }

    // MARK: The request body

    /// Request body bytes go upstream unless the relay answered itself.
    var forwardsRequestBody: Bool { response != .answeredLocally }

    /// `count` request body bytes (framing included) went upstream: whether the connection keeps
    /// them for a replay with a new token (up to `maxReplayBodyBytes`).
    mutating func sentRequestBody(_ count: Int) -> BodyKeeping {
        guard case .keeping(let kept) = bodyReplay else { return .none }
        if kept + count > Self.maxReplayBodyBytes {
            bodyReplay = .impossible
            return .dropKept
        }
        bodyReplay = .keeping(kept + count)
        return .keep
    }

    /// What the upstream gets at the end of the request.
    enum RequestEnd {
        /// Nothing: the relay answered itself.
        case discarded
        /// The end is reported to the upstream connection (its response clock starts), after
        /// the last chunk for a chunked body.
        case forwarded(lastChunk: Bool)
    }

    /// The request is complete. Returns also whether its body clock ran (its timer is disarmed).
    mutating func requestEnded() -> (end: RequestEnd, bodyClockRan: Bool) {
        upload = .complete
        let ran = stopBodyClock()
        guard forwardsRequestBody else { return (.discarded, ran) }
        return (.forwarded(lastChunk: request.framing == .chunked), ran)
    }

    /// The parser stops at the end of each request so that pipelined ones wait for this one's
    /// response. Not an upgrade request: llhttp then stops by itself with HPE_PAUSED_UPGRADE.
    var pausesParserAtRequestEnd: Bool { !request.isUpgrade }

    var requestComplete: Bool { upload == .complete }

    // MARK: The request body's deadline

    /// (Re)starts the request body's deadline at `now`. Returns whether to arm the timer (not
    /// while the relay itself stopped reading: that time is not the body's).
    mutating func startBodyClock(now: UInt64) -> Bool {
        guard request.hasBody, upload == .pending, response != .answeredLocally, phase == .exchanging else { return false }
        bodyClock = BodyClock(startedAt: max(1, now))
        return !backpressure.contains(.clientReads)
    }

    /// The body clock starts when the request goes upstream, unless the client waits for
    /// `100 Continue`.
    var startsBodyClockWithHead: Bool { request.hasBody && !request.expectsContinue }

    /// `count` body bytes arrived at `now`. Returns when the body's deadline falls due (loop
    /// milliseconds), nil when the timer stays as it is.
    mutating func bodyBytesArrived(_ count: Int, now: UInt64, timeoutMilliseconds: UInt64, minBytesPerSecond: UInt64) -> UInt64? {
        guard var clock = bodyClock else {
            return startBodyClock(now: now) ? now + timeoutMilliseconds : nil
        }
        clock.bytesSinceStart += UInt64(count)
        bodyClock = clock
        guard !backpressure.contains(.clientReads) else { return nil }
        return clock.startedAt + timeoutMilliseconds + clock.bytesSinceStart * 1000 / minBytesPerSecond
    }

    /// Stops the body's deadline; returns whether it ran.
    mutating func stopBodyClock() -> Bool {
        guard bodyClock != nil else { return false }
        bodyClock = nil
        return true
    }

    // MARK: Local answers

    /// The relay answers `problem` itself (naming the route, when one matched); with a request
    /// body still to come, the connection ends after the answer (the body is not read).
    mutating func answeringLocally(_ problem: Problem) -> Problem {
        var problem = problem
        if problem.route == nil { problem.route = plan?.route.name }
        response = .answeredLocally
        record.status = problem.status
        if request.hasBody && upload == .pending { keepAlive = false }
        return problem
    }

}
