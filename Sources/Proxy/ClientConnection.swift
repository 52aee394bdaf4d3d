// ClientConnection: one accepted client socket and the exchanges on it, one at a time.
//
// Phases: awaitingRequest (idle keep-alive) → readingHead → exchanging → awaitingRequest ...,
// or → tunnelling after an upgrade, or → closing. Pipelined requests are answered in order by
// pausing the parser at the end of each request and keeping the bytes after it in `leftover`
// until the response is complete.
//
// Bodies stream: request body bytes go from the parser callback straight to the upstream
// stream (copied only if the kernel does not take them at once); response bytes likewise to the
// client. When the receiving side's write backlog passes its high-water mark, the sending side
// stops reading until the backlog drains.
//
// Work that changes the exchange (finishing it, resetting the parser) happens only after the
// parser returns, never inside its callbacks.
//
// This file: state, reading and the request side. ClientConnection+Response.swift: what the
// upstream connection reports. ClientConnection+Ending.swift: local answers and endings.
// ClientConnection+Waits.swift: waiting for the token and for the request body.

import ByteBuffers
import EventLoop
import HTTP1
import Config
import HTTPFields
import OAuth2
import Routing

/// Calls `body` with a view of `bytes`, or with nil.
func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
    guard let bytes else { return body(nil) }
    return bytes.withUnsafeBytes { body($0) }
}

final class ClientConnection: ByteStreamDelegate, HTTP1ParserDelegate {
    enum Phase { case awaitingRequest, readingHead, exchanging, tunnelling, closing }

    unowned let worker: ProxyWorker
    let stream: any ByteStream
    let parser: HTTP1Parser
    var timer: DeadlineTimer?
    /// The settings of the current exchange (a reload applies from the next request on).
    var settings: ProxySettings
    var forwarding: ForwardedHead.Forwarding
    var phase: Phase = .awaitingRequest

    /// Bytes received after the request being handled (pipelined), not parsed yet.
    var leftover = ByteBuffer()
    /// What `drive()` is parsing from `leftover`.
    var parsing = ByteBuffer()
    /// Scratch for composing heads and chunk lines.
    var scratch = ByteBuffer()
    /// The response head, held back until body bytes follow or the upstream read that carried
    /// it is fully parsed: bad framing right behind the head then still becomes a clean 502.
    var heldResponseHead = ByteBuffer()
    var normalizedPath: [UInt8] = []
    var rewrittenTarget: [UInt8] = []
    var targetScratch = RoutePlan.TargetScratch()

    // The current exchange.
    var exchange = Exchange()
    var upstream: UpstreamConnection?
    var plan: RoutePlan?
    /// The request head as sent upstream, kept to send again on a fresh connection when a
    /// reused one turns out closed (only for requests without a body).
    var replayableHead = ByteBuffer()
    /// The request body as sent upstream, for a replay with a new token (see `sendRequestBody`).
    var replayBody = ByteBuffer()
    var parserPaused = false
    /// Requests whose head arrived on this connection.
    var exchangesStarted = 0
    var readsBlockedByUpstream = false
    var upstreamReadsBlockedByClient = false

    private static let options = Array("options".utf8)

    /// Pipelined bytes held while a response is pending before reading stops.
    static let maxBufferedPipelineBytes = 64 * 1024

    init(worker: ProxyWorker, stream: any ByteStream, overTLS: Bool = false) {
        self.worker = worker
        self.stream = stream
        settings = worker.currentSettings
        parser = HTTP1Parser(kind: .request, limits: settings.headerLimits)
        let address = stream.peerAddress()?.ipString ?? "unknown"
        forwarding = ForwardedHead.Forwarding(clientAddress: Array(address.utf8),
                                              trustForwardedHeaders: settings.config.trustForwardedHeaders,
                                              viaSuffix: settings.viaSuffix, overTLS: overTLS)
        parser.delegate = self
        stream.delegate = self
        timer = DeadlineTimer(loop: stream.loop) { [unowned self] in self.timerFired() }
        // The first request's head is due `headerTimeoutSeconds` after the accept, not after its
        // first byte: a connection that sends nothing, or dribbles, is not kept for longer.
        timer?.arm(afterMilliseconds: settings.headerTimeoutMilliseconds)
        stream.startReading()
    }

    var isIdle: Bool { phase == .awaitingRequest && leftover.isEmpty }

    /// Exchanges are timed for the metrics or the access log (a reload may switch the log).
    var timesExchanges: Bool { worker.metrics != nil || settings.config.accessLog }

    /// Takes the settings a reload published, at a request's head (its header limits apply from
    /// the next head on).
    private func adopt(_ current: ProxySettings) {
        settings = current
        parser.limits = current.headerLimits
        forwarding.trustForwardedHeaders = current.config.trustForwardedHeaders
        forwarding.viaSuffix = current.viaSuffix
    }

    // MARK: Reading and parsing

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        switch phase {
        case .tunnelling:
            upstream?.write(bytes)
            if upstream?.isAboveHighWater == true { blockReadsForUpstream() }
        case .closing:
            break
        default:
            if parserPaused {
                // The next request came before this one's response (pipelining): keep it for
                // later, and stop reading only when a lot is waiting. Reading on otherwise
                // saves two epoll_ctl calls per request and notices a client that goes away.
                leftover.append(bytes)
                if leftover.count > Self.maxBufferedPipelineBytes { stream.stopReading() }
                return
            }
            feedParser(bytes)
            drive()
        }
    }

    func feedParser(_ bytes: UnsafeRawBufferPointer) {
        let headStarts = phase == .awaitingRequest
        if headStarts { phase = .readingHead }
        let result = parser.feed(bytes)
        // Most heads arrive whole in their first read; the header timeout is armed only for
        // one that did not (its clock starts at this read: the loop's time is cached), and not
        // for the connection's first head, whose deadline runs from the accept.
        if headStarts && phase == .readingHead && exchangesStarted > 0 {
            timer?.arm(afterMilliseconds: settings.headerTimeoutMilliseconds)
        }
        switch result {
        case .consumed:
            break
        case .paused(let consumed), .upgraded(let consumed):
            parserPaused = true
            if case .upgraded = result { stream.stopReading() }
            if consumed < bytes.count {
                leftover.append(UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
            }
        case .failed(let error):
            rejectRequest(error)
            return
        }
        finishExchangeIfDone()
    }

    /// Parses pipelined bytes kept in `leftover` while no exchange is running.
    func drive() {
        while phase == .awaitingRequest && !leftover.isEmpty {
            parsing.swapStorage(with: &leftover)
            leftover.clear()
            feedParser(parsing.readableBytes)
            parsing.clear()
        }
        // Read on unless the parser waits for the current exchange, the upstream is full, or
        // the connection is ending.
        switch phase {
        case .awaitingRequest, .readingHead, .exchanging:
            if !readsBlockedByUpstream && leftover.count <= Self.maxBufferedPipelineBytes { stream.startReading() }
        case .tunnelling, .closing:
            break
        }
    }

    // MARK: The request (HTTP1ParserDelegate)

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        let head = parser.head
        timer?.disarm()
        phase = .exchanging
        exchangesStarted += 1
        exchange = Exchange()
        exchange.clientVersionMinor = head.versionMinor
        exchange.keepAlive = head.keepAlive && !worker.isDraining
        exchange.requestIsHead = head.isHead
        exchange.hasRequestBody = head.isChunked || (head.contentLength ?? 0) > 0
        exchange.requestFraming = head.isChunked ? .chunked : (head.contentLength != nil ? .contentLength : .none)
        replayBody.clear()
        replayBody.shrink(ifLargerThan: Self.maxReplayBodyBytes)
        let current = worker.currentSettings
        if current !== settings { adopt(current) }
        let logging = settings.config.accessLog
        if timesExchanges { exchange.startedAt = worker.clock() }
        if logging { exchange.method = String(decoding: head.methodName, as: UTF8.self) }

        if head.isConnect {
            answerLocally(.methodNotAllowed())
            return .framed
        }
        // A request the relay cannot place is malformed: 400 and the connection closes
        // (DESIGN.md's error model), as for what the parser refuses.
        guard let target = RequestTarget(head.target) else {
            exchange.keepAlive = false
            answerLocally(.badRequest("the request-target is not origin-form, absolute-form (without userinfo) or *"))
            return .framed
        }
        if logging { exchange.path = String(decoding: target.path, as: UTF8.self) }
        if target.isAsterisk && !ASCII.equalsIgnoringCase(head.methodName, Self.options) {
            answerLocally(.badRequest("the asterisk-form request-target is for OPTIONS only"))
            return .framed
        }
        guard target.isAsterisk || RequestPath.normalize(target.path, into: &normalizedPath) else {
            answerLocally(.badRequest("the request path is malformed"))
            return .framed
        }
        if target.isAsterisk { normalizedPath = [UInt8(ascii: "/")] }
        if let host = head.host, !host.isEmpty, !RequestTarget.isAuthority(host) {
            exchange.keepAlive = false
            answerLocally(.badRequest("the Host header is not a host[:port]"))
            return .framed
        }
        let host = target.authority ?? head.host ?? UnsafeRawBufferPointer(start: nil, count: 0)
        let plan = normalizedPath.withUnsafeBytes { settings.plan(host: host, path: $0) }
        guard let plan else {
            answerLocally(.noRoute())
            return .framed
        }
        self.plan = plan
        if logging { exchange.routeName = plan.route.name }
        if head.isUpgrade { exchange.upgrade = plan.allowedUpgrade(head) }
        if let identity = plan.identity, let tokens = worker.tokens {
            exchange.bodyReplayable = exchange.hasRequestBody && !plan.route.retryOnStatus.isEmpty
                && (head.contentLength ?? 0) <= UInt64(Self.maxReplayBodyBytes)
            switch tokens.lookup(identity) {
            case .inject(let token):
                exchange.token = token
            case .wait:
                // The head stays in the parser until the token thread wakes this worker
                // (`tokenMayBeReady`). A body waits unparsed in `leftover`: the parser stops
                // after the head. A request without one completes and stops at its end, as
                // every request does (llhttp would only report that end on further input).
                startTokenWait()
                tokens.park(self)
                guard exchange.hasRequestBody else { return .framed }
                exchange.pausedAtHead = true
                return .pauseAfterHead
            case .fail(let reason):
                answerLocally(.tokenUnavailable(reason, route: plan.route.name))
                return .framed
            }
        }
        // Forwarded in the same callback as the head arrived: the head's time serves (one clock
        // read less per request).
        forwardRequestHead(plan, at: exchange.startedAt)
        return .framed
    }

    /// Writes the request head for `plan` (with the exchange's token, if any) to a pooled or new
    /// upstream connection. The head is read from the parser, where it stays until the next
    /// request, so this also serves a request that waited for its token or is replayed.
    /// `now`: the exchange clock if the caller just read it (0: read it here, when timing).
    func forwardRequestHead(_ plan: RoutePlan, at now: UInt64 = 0) {
        let head = parser.head
        guard let target = RequestTarget(head.target) else { return }
        let token = exchange.token
        scratch.clear()
        if let originForm = target.originForm, plan.forwardsTargetVerbatim || target.isAsterisk {
            withOptionalBytes(token?.bytes) { token in
                ForwardedHead.writeRequest(head, target: originForm, plan: plan, framing: exchange.requestFraming,
                                           forwarding: forwarding, clientHost: target.authority ?? head.host, token: token,
                                           upgrade: exchange.upgrade, into: &scratch)
            }
        } else {
            withOptionalBytes(token?.bytes) { token in
                normalizedPath.withUnsafeBytes {
                    plan.writeUpstreamTarget(rawPath: target.path, normalizedPath: $0, queryWithMark: target.queryWithMark,
                                             token: token, into: &rewrittenTarget, scratch: &targetScratch)
                }
                rewrittenTarget.withUnsafeBytes { rewritten in
                    ForwardedHead.writeRequest(head, target: rewritten, plan: plan, framing: exchange.requestFraming,
                                               forwarding: forwarding, clientHost: target.authority ?? head.host, token: token,
                                               upgrade: exchange.upgrade, into: &scratch)
                }
            }
        }
        replayableHead.clear()
        if !exchange.hasRequestBody { replayableHead.append(scratch.readableBytes) }
        if timesExchanges { exchange.upstreamStartedAt = now != 0 ? now : worker.clock() }
        let upstream = worker.pool(for: plan, of: settings).acquire(for: self)
        self.upstream = upstream
        upstream.write(scratch)
        // A replay after the upstream refused the token sends the body it already received.
        if exchange.replayedWithNewToken && !replayBody.isEmpty { upstream.write(replayBody) }
        // A client that sent `Expect: 100-continue` waits for the interim answer (or a second)
        // before its body: its clock starts with the first byte instead.
        if exchange.hasRequestBody && !head.fields.contains(where: { $0.known == .expect }) { startBodyClock() }
        // A request that waited for its token, or is sent again, is complete as it goes out.
        if exchange.requestDone { upstream.noteRequestSent() }
    }

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {
        guard !exchange.answeredLocally, let upstream else { return }
        bodyBytesArrived(bytes.count)
        sendRequestBody(bytes)
        upstream.noteRequestProgress()
        if upstream.isAboveHighWater { blockReadsForUpstream() }
    }

    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {
        guard !exchange.answeredLocally, upstream != nil, size > 0 else { return }
        scratch.clear()
        scratch.appendHex(size)
        scratch.append("\r\n")
        sendRequestBody(scratch.readableBytes)
    }

    func parserDidFinishChunk(_ parser: HTTP1Parser) {
        guard !exchange.answeredLocally, upstream != nil else { return }
        sendRequestBody(staticBytes("\r\n"))
    }

    /// Request body bytes as framed for the upstream. On a route with a token they are also
    /// kept, up to `maxReplayBodyBytes`, so the request can be sent again if the upstream
    /// refuses the token.
    private func sendRequestBody(_ bytes: UnsafeRawBufferPointer) {
        upstream?.write(bytes)
        guard exchange.bodyReplayable else { return }
        if replayBody.count + bytes.count > Self.maxReplayBodyBytes {
            exchange.bodyReplayable = false
            replayBody.clear()
            return
        }
        replayBody.append(bytes)
    }

    /// The buffered-replay limit of a request body (issue 4: 64 KiB).
    static let maxReplayBodyBytes = 64 * 1024

    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        if !exchange.answeredLocally, upstream != nil, exchange.requestFraming == .chunked {
            scratch.clear()
            ForwardedHead.writeLastChunk(trailersOf: parser.head, plan: plan, into: &scratch)
            sendRequestBody(scratch.readableBytes)
        }
        if !exchange.answeredLocally { upstream?.noteRequestSent() }
        exchange.requestDone = true
        stopBodyClock()
        // An upgrade request is not paused here: llhttp then stops by itself with
        // HPE_PAUSED_UPGRADE, which `resume()` must answer with llhttp_resume_after_upgrade.
        return !parser.head.isUpgrade
    }

    func blockReadsForUpstream() {
        readsBlockedByUpstream = true
        stream.stopReading()
        // The relay stopped reading, not the client: that time is not the body's.
        if exchange.bodyClockStartedAt != 0 { timer?.disarm() }
    }

    func upstreamDidDrain(_ upstream: UpstreamConnection) {
        guard readsBlockedByUpstream else { return }
        readsBlockedByUpstream = false
        if exchange.bodyClockStartedAt != 0 { startBodyClock() }
        if leftover.count <= Self.maxBufferedPipelineBytes || phase == .tunnelling { stream.startReading() }
    }
}
