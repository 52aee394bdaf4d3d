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
// Within `exchanging`, the request side (`current.request`, an `ExchangeRequest`), the token
// (`current.credential`) and the response side (`current.response`, an `ExchangeResponse`) move
// on independently: a response may begin before its request ends.
//
// This file: the connection's state, the request head, the token, and the request side, whose
// body decisions ExchangeRequest.swift makes. CurrentExchange.swift: the state of the request
// under way, replaced whole by each head. ExchangeResponse.swift: the response half, which
// decides on the upstream's answer; Exchange+Response.swift hands it the events and the failures.
// Exchange+Ending.swift: the end of an exchange, rejected requests, timers (ClientDeadline.swift)
// and flow control (Backpressure.swift).

import HTTP1
import OAuth2

struct Exchange {
    enum Phase { case awaitingRequest, readingHead, exchanging, tunnelling, closing }

    /// What to do with a request head.
    enum HeadAction {
        case forward
        /// Park the request until its token is ready; `pauseParser`: a body follows, keep it
        /// unparsed until then.
        case waitForToken(pauseParser: Bool)
        case answer(Problem)
        /// A `CONNECT` the forward proxy took: the socket goes to its tunnel (or to TLS, for an
        /// intercepted host) once the parser stops after the head.
        case handOff
    }

    /// What to do once a token wait ends.
    enum TokenWaitEnd {
        /// Not this identity's result, or a new fetch began: park again, to the same deadline.
        case keepWaiting
        case forward(resumeParser: Bool)
        case answer(Problem, resumeParser: Bool)
    }

    typealias BodyKeeping = ExchangeRequest.BodyKeeping
    static var maxReplayBodyBytes: Int { ExchangeRequest.maxReplayBodyBytes }
    static var maxBufferedPipelineBytes: Int { Backpressure.maxBufferedPipelineBytes }

    // The state below is changed only by the events (the methods in Exchange*.swift); the
    // connection reads it. The connection's own state outlives its requests; `current` is the
    // request under way's, replaced whole by each head (CurrentExchange.swift). The one-byte
    // fields come first: Swift lays fields out in the order written, and every connection holds
    // this value.
    var phase = Phase.awaitingRequest
    /// Whether the connection stays open after this exchange (each head decides anew; an
    /// answer may end the connection after it).
    var keepAlive = true
    /// Which reads the write backlogs stopped: a backlog is the socket's, not the request's.
    var backpressure: Backpressure = []
    /// Whether `current` may change: false while it is a worker's blank (checked at each write).
    private var currentIsWritable = true
    /// Requests whose head arrived on this connection.
    var exchangesStarted = 0
    /// Where `current` is kept (CurrentExchange.swift): not in this value, which every client
    /// connection holds, idle or not, but in a `CurrentExchangeSlot` lent with the connection's
    /// workspace. A trivial pointer: reaching `current` costs no reference counting.
    private var currentSlot: UnsafeMutablePointer<CurrentExchange>
    /// Keeps the slot of an exchange made on its own (`init()`, socket-free tests); nil on a
    /// connection, whose slots its workspaces and its worker's pool keep.
    private let ownSlot: CurrentExchangeSlot?

    /// The request under way (or, until the connection goes idle, the last one; an idle
    /// connection's reads as a blank one).
    var current: CurrentExchange {
        unsafeAddress { UnsafePointer(currentSlot) }
        unsafeMutableAddress { writableCurrent }
    }

    /// A write to a worker's blank would reach every idle connection of that worker (one
    /// client's route or token seen by another's next request): a precondition, not an assert,
    /// so a release build stops rather than share it.
    private var writableCurrent: UnsafeMutablePointer<CurrentExchange> {
        precondition(currentIsWritable, "an exchange's state changed while its connection has no workspace")
        return currentSlot
    }

    /// Runs `body` on `current` as one access: each `current.x` is an access of its own, so a
    /// part read while another changes would be copied first (Exchange+Response.swift).
    @inline(__always)
    func changingCurrent<Result>(_ body: (inout CurrentExchange) -> Result) -> Result {
        body(&writableCurrent.pointee)
    }

    /// An exchange that keeps its own state (a copy shares it).
    init() {
        let slot = CurrentExchangeSlot()
        ownSlot = slot
        currentSlot = slot.pointer
    }

    /// A connection's exchange, reading `blank` until `keepCurrent(in:)` (`blank` outlives it).
    init(blank: CurrentExchangeSlot) {
        ownSlot = nil
        currentSlot = blank.pointer
        currentIsWritable = false
    }

    /// `current` is now `slot`'s: a workspace's, for the requests while it is lent, or, not
    /// `writable`, a blank that outlives the exchange (while the connection has no workspace).
    @inline(__always)
    mutating func keepCurrent(in slot: UnsafeMutablePointer<CurrentExchange>, writable: Bool) {
        currentSlot = slot
        currentIsWritable = writable
    }

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
        // The memberwise initializer sets each field once, the rest to its default; an init that
        // overwrote the defaults made the optimizer copy the whole value (~450 instructions).
        // The last request's state is ended where it lies and the new one built there: an
        // assignment copied the old value out first (a 177-byte `memcpy`).
        let next = CurrentExchange(request: ExchangeRequest(head), record: ExchangeRecord(startedAt: startedAt))
        let slot = writableCurrent
        slot.deinitialize(count: 1)
        slot.initialize(to: next)
    }

    /// The connection's routing refused the head: it is answered here. `closing`: what follows
    /// cannot be trusted (a bad target or Host), so the connection ends after the answer.
    mutating func refused(_ problem: Problem, closing: Bool) -> HeadAction {
        if closing { keepAlive = false }
        return .answer(answeringLocally(problem))
    }

    /// The forward proxy took a `CONNECT`: nothing is forwarded or recorded here, and the
    /// connection ends as an HTTP connection once its socket is handed on.
    mutating func connectTaken() -> HeadAction {
        current.response.progress = .answeredLocally
        current.record.startedAt = 0
        keepAlive = false
        return .handOff
    }

    /// The head is on `plan`'s route; `upgrade`: the protocols the route allows of those asked
    /// for; `token`: the identity's lookup (nil: no identity). It is forwarded, maybe after a
    /// token wait, or answered here.
    @inline(__always)
    mutating func routed(_ plan: RoutePlan, upgrade: consuming [UInt8]?, token: consuming WorkerTokens.Lookup?) -> HeadAction {
        current.plan = plan
        current.request.upgrade = upgrade
        guard let token else { return .forward }
        current.request.keepsBodyForReplay(on: plan)
        switch consume token {
        case .inject(let token):
            current.credential = .carried(token)
            return .forward
        case .wait:
            // A body waits unparsed: the parser stops after the head. A request without one
            // completes and stops at its end, as every request does.
            current.credential = .waiting(.beforeForwarding(parserPausedAtHead: current.request.hasBody))
            return .waitForToken(pauseParser: current.request.hasBody)
        case .fail(let reason):
            return .answer(answeringLocally(.tokenUnavailable(reason, route: plan.route.name)))
        }
    }

    /// The token injected into the request (nil: none, or still waiting).
    var token: WorkerTokens.CachedToken? { current.credential.injected }

    /// Parked: for the identity's token, or for the issuer's keys that check the caller's.
    var isWaitingForToken: Bool { current.credential.isWaiting || current.caller.isWaitingForCheck }

    /// The request goes out again with a new token: the kept body follows its head.
    var isReplay: Bool { current.credential.isReplay }

    /// The request goes out again (a new token, or a DPoP nonce): the kept body follows its head.
    var resendsKeptBody: Bool { isReplay || current.response.dpopNonceReplayed }

    // MARK: The token

    /// The identity's token was looked up again for a waiting request (`RequestCredential`).
    mutating func tokenLookedUp(_ lookup: WorkerTokens.Lookup) -> TokenWaitEnd {
        switch current.credential.lookedUp(lookup) {
        case .keepWaiting:
            return .keepWaiting
        case .forward(let resumeParser):
            return .forward(resumeParser: resumeParser)
        case .fail(let reason, let resumeParser):
            return .answer(answeringLocally(.tokenUnavailable(reason, route: current.plan?.route.name)), resumeParser: resumeParser)
        }
    }

    /// The request waited `tokenWaitSeconds` for its token: 503. Nil when it was not waiting.
    mutating func tokenWaitExpired(tokenWaitSeconds: Double) -> TokenWaitEnd? {
        if current.caller.isWaitingForCheck { return callerCheckWaitExpired(tokenWaitSeconds: tokenWaitSeconds) }
        guard isWaitingForToken, let name = current.plan?.route.identity else { return nil }
        return tokenLookedUp(.fail(RequestCredential.waitExpired(identity: name, tokenWaitSeconds: tokenWaitSeconds)))
    }

    // MARK: The request body (decided by `ExchangeRequest`)

    typealias RequestEnd = ExchangeRequest.End

    /// Request body bytes go upstream unless the relay answered itself.
    var forwardsRequestBody: Bool { current.response.progress != .answeredLocally }
    /// Request body bytes sent upstream are kept for a replay (`sentRequestBody` answers `.keep`).
    var keepsRequestBody: Bool {
        if case .keeping = current.request.bodyReplay { return true }
        return false
    }
    mutating func sentRequestBody(_ count: Int) -> BodyKeeping { current.request.sentBody(count) }
    /// The request is complete. Returns also whether its body clock ran (its timer is disarmed).
    mutating func requestEnded() -> (end: RequestEnd, bodyClockRan: Bool) {
        current.request.upload = .complete
        let ran = current.request.stopBodyClock()
        guard forwardsRequestBody else { return (.discarded, ran) }
        return (.forwarded(lastChunk: current.request.framing == .chunked), ran)
    }
    var pausesParserAtRequestEnd: Bool { current.request.pausesParserAtEnd }
    var requestComplete: Bool { current.request.upload == .complete }
    var startsBodyClockWithHead: Bool { current.request.startsBodyClockWithHead }

    /// (Re)starts the request body's deadline at `now`. Returns whether to arm the timer: not
    /// for a body the relay answered already, nor while the relay itself stopped reading (that
    /// time is not the body's).
    mutating func startBodyClock(now: UInt64) -> Bool {
        guard forwardsRequestBody, phase == .exchanging, current.request.startBodyClock(now: now) else { return false }
        return !backpressure.contains(.clientReads)
    }

    /// `count` body bytes arrived at `now`. Returns when the body's deadline falls due (loop
    /// milliseconds), nil when the timer stays as it is; the first bytes may start the clock.
    mutating func bodyBytesArrived(_ count: Int, now: UInt64, timeoutMilliseconds: UInt64, minBytesPerSecond: UInt64) -> UInt64? {
        guard current.request.bodyClock != nil else { return startBodyClock(now: now) ? now + timeoutMilliseconds : nil }
        return current.request.bodyBytesArrived(count, readsStopped: backpressure.contains(.clientReads),
                                                timeoutMilliseconds: timeoutMilliseconds, minBytesPerSecond: minBytesPerSecond)
    }

    mutating func stopBodyClock() -> Bool { current.request.stopBodyClock() }

    // MARK: Local answers

    /// The relay answers `problem` itself (naming the route, when one matched); with a request
    /// body still to come, the connection ends after the answer (the body is not read).
    mutating func answeringLocally(_ problem: Problem) -> Problem {
        var problem = problem
        if problem.route == nil { problem.route = current.plan?.route.name }
        current.response.progress = .answeredLocally
        current.record.status = problem.status
        if current.request.hasBody && current.request.upload == .pending { keepAlive = false }
        return problem
    }

}
