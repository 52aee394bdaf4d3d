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

import ByteBuffers
import EventLoop
import HTTP1
import Config

final class ClientConnection: TCPStreamDelegate, HTTP1ParserDelegate {
    enum Phase { case awaitingRequest, readingHead, exchanging, tunnelling, closing }

    unowned let worker: ProxyWorker
    let stream: TCPStream
    private let parser: HTTP1Parser
    private var timer: DeadlineTimer?
    private let settings: ProxySettings
    private let forwarding: ForwardedHead.Forwarding
    private(set) var phase: Phase = .awaitingRequest

    /// Bytes received after the request being handled (pipelined), not parsed yet.
    private var leftover = ByteBuffer()
    /// What `drive()` is parsing from `leftover`.
    private var parsing = ByteBuffer()
    /// Scratch for composing heads and chunk lines.
    private var scratch = ByteBuffer()
    /// The response head, held back until body bytes follow or the upstream read that carried
    /// it is fully parsed: bad framing right behind the head then still becomes a clean 502.
    private var heldResponseHead = ByteBuffer()
    private var normalizedPath: [UInt8] = []
    private var rewrittenTarget: [UInt8] = []
    private var targetScratch = RoutePlan.TargetScratch()

    // The current exchange.
    private var exchange = Exchange()
    private var upstream: UpstreamConnection?
    private var plan: RoutePlan?
    /// The request head as sent upstream, kept to send again on a fresh connection when a
    /// reused one turns out closed (only for requests without a body).
    private var replayableHead = ByteBuffer()
    private var parserPaused = false
    private var readsBlockedByUpstream = false
    private var upstreamReadsBlockedByClient = false

    struct Exchange {
        var keepAlive = true
        var clientVersionMinor: UInt8 = 1
        var requestIsHead = false
        var hasRequestBody = false
        var requestFraming = ForwardedHead.Framing.none
        var requestDone = false
        /// The relay answered itself (404, 400, 502, ...); request body bytes are discarded.
        var answeredLocally = false
        var responseHeadSent = false
        var responseDone = false
        var responseFraming = ForwardedHead.Framing.none
        var responseSourceChunked = false
        /// The upstream message being parsed is an interim 1xx response.
        var interim = false
        var retried = false
        // For the access log.
        var status = 0
        var bodyBytesSent = 0
        var startedAt: UInt64 = 0
        var upstreamStartedAt: UInt64 = 0
        var upstreamHeadAt: UInt64 = 0
        var method = ""
        var path = ""
        var routeName = ""
    }

    /// Pipelined bytes held while a response is pending before reading stops.
    static let maxBufferedPipelineBytes = 64 * 1024

    init(worker: ProxyWorker, stream: TCPStream) {
        self.worker = worker
        self.stream = stream
        settings = worker.settings
        parser = HTTP1Parser(kind: .request, limits: settings.headerLimits)
        let address = stream.peerAddress()?.ipString ?? "unknown"
        forwarding = ForwardedHead.Forwarding(clientAddress: Array(address.utf8),
                                              trustForwardedHeaders: settings.config.trustForwardedHeaders,
                                              viaSuffix: settings.viaSuffix)
        parser.delegate = self
        stream.delegate = self
        timer = DeadlineTimer(loop: stream.loop) { [unowned self] in self.timerFired() }
        timer?.arm(afterMilliseconds: settings.idleTimeoutMilliseconds)
        stream.startReading()
    }

    var isIdle: Bool { phase == .awaitingRequest && leftover.isEmpty }

    // MARK: Reading and parsing

    func stream(_ stream: TCPStream, didRead bytes: UnsafeRawBufferPointer) {
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

    private func feedParser(_ bytes: UnsafeRawBufferPointer) {
        let headStarts = phase == .awaitingRequest
        if headStarts { phase = .readingHead }
        let result = parser.feed(bytes)
        // Most heads arrive whole in their first read; the header timeout is armed only for
        // one that did not (its clock still starts at this read: the loop's time is cached).
        if headStarts && phase == .readingHead {
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
    private func drive() {
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
        exchange = Exchange()
        exchange.clientVersionMinor = head.versionMinor
        exchange.keepAlive = head.keepAlive && !worker.isDraining
        exchange.requestIsHead = head.isHead
        exchange.hasRequestBody = head.isChunked || (head.contentLength ?? 0) > 0
        exchange.requestFraming = head.isChunked ? .chunked : (head.contentLength != nil ? .contentLength : .none)
        let logging = settings.config.accessLog
        if logging {
            exchange.startedAt = worker.clock()
            exchange.method = String(decoding: head.methodName, as: UTF8.self)
        }

        if head.isConnect {
            answerLocally(.methodNotAllowed())
            return .framed
        }
        guard let target = RequestTarget(head.target) else {
            answerLocally(.badRequest("the request-target is not origin-form, absolute-form or *"))
            return .framed
        }
        if logging { exchange.path = String(decoding: target.path, as: UTF8.self) }
        guard target.isAsterisk || RequestPath.normalize(target.path, into: &normalizedPath) else {
            answerLocally(.badRequest("the request path is malformed"))
            return .framed
        }
        if target.isAsterisk { normalizedPath = [UInt8(ascii: "/")] }
        let host = target.authority ?? head.host ?? UnsafeRawBufferPointer(start: nil, count: 0)
        let plan = normalizedPath.withUnsafeBytes { settings.plan(host: host, path: $0) }
        guard let plan else {
            answerLocally(.noRoute())
            return .framed
        }
        self.plan = plan
        if logging { exchange.routeName = plan.route.name }

        scratch.clear()
        if let originForm = target.originForm, plan.forwardsTargetVerbatim || target.isAsterisk {
            ForwardedHead.writeRequest(head, target: originForm, plan: plan, framing: exchange.requestFraming,
                                       forwarding: forwarding, clientHost: head.host, injected: nil, into: &scratch)
        } else {
            normalizedPath.withUnsafeBytes {
                plan.writeUpstreamTarget(rawPath: target.path, normalizedPath: $0, queryWithMark: target.queryWithMark,
                                         into: &rewrittenTarget, scratch: &targetScratch)
            }
            rewrittenTarget.withUnsafeBytes { rewritten in
                ForwardedHead.writeRequest(head, target: rewritten, plan: plan, framing: exchange.requestFraming,
                                           forwarding: forwarding, clientHost: head.host, injected: nil, into: &scratch)
            }
        }
        replayableHead.clear()
        if !exchange.hasRequestBody { replayableHead.append(scratch.readableBytes) }
        if logging { exchange.upstreamStartedAt = worker.clock() }
        let upstream = worker.pool(for: plan).acquire(for: self)
        self.upstream = upstream
        upstream.write(scratch)
        return .framed
    }

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {
        guard !exchange.answeredLocally, let upstream else { return }
        upstream.write(bytes)
        upstream.noteRequestProgress()
        if upstream.isAboveHighWater { blockReadsForUpstream() }
    }

    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {
        guard !exchange.answeredLocally, let upstream, size > 0 else { return }
        scratch.clear()
        scratch.appendHex(size)
        scratch.append("\r\n")
        upstream.write(scratch)
    }

    func parserDidFinishChunk(_ parser: HTTP1Parser) {
        guard !exchange.answeredLocally, let upstream else { return }
        upstream.write(staticBytes("\r\n"))
    }

    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        if !exchange.answeredLocally, let upstream, exchange.requestFraming == .chunked {
            scratch.clear()
            ForwardedHead.writeLastChunk(trailersOf: parser.head, into: &scratch)
            upstream.write(scratch)
        }
        exchange.requestDone = true
        // An upgrade request is not paused here: llhttp then stops by itself with
        // HPE_PAUSED_UPGRADE, which `resume()` must answer with llhttp_resume_after_upgrade.
        return !parser.head.isUpgrade
    }

    private func blockReadsForUpstream() {
        readsBlockedByUpstream = true
        stream.stopReading()
    }

    func upstreamDidDrain(_ upstream: UpstreamConnection) {
        guard readsBlockedByUpstream else { return }
        readsBlockedByUpstream = false
        if leftover.count <= Self.maxBufferedPipelineBytes || phase == .tunnelling { stream.startReading() }
    }

    // MARK: The response (called by UpstreamConnection)

    func upstream(_ upstream: UpstreamConnection, didReceiveHead head: HTTPHead) -> HTTP1Parser.BodyExpectation {
        let status = head.statusCode
        if status >= 100 && status < 200 && status != 101 {
            exchange.interim = true
            // HTTP/1.0 clients do not understand interim responses (RFC 9110 §15.2).
            if exchange.clientVersionMinor >= 1 {
                scratch.clear()
                ForwardedHead.writeInterim(head, into: &scratch)
                stream.write(scratch)
            }
            return .none
        }
        exchange.status = status
        if settings.config.accessLog { exchange.upstreamHeadAt = worker.clock() }
        let noBody = exchange.requestIsHead || status == 204 || status == 304 || status == 101
        let framing: ForwardedHead.Framing
        if noBody {
            framing = .none
        } else if head.contentLength != nil {
            framing = .contentLength
        } else if exchange.clientVersionMinor >= 1 {
            framing = .chunked
        } else {
            framing = .close
        }
        exchange.responseFraming = framing
        exchange.responseSourceChunked = head.isChunked
        // A response that arrives before the whole request did ends the connection after it:
        // the rest of that request cannot be told from a next one.
        if framing == .close || !exchange.requestDone { exchange.keepAlive = false }
        heldResponseHead.clear()
        ForwardedHead.writeResponse(head, framing: framing, keepAlive: exchange.keepAlive,
                                    clientVersionMinor: exchange.clientVersionMinor,
                                    viaSuffix: settings.viaSuffix, into: &heldResponseHead)
        return noBody ? .none : .framed
    }

    /// Sends the held response head, once.
    func releaseResponseHead() {
        guard !heldResponseHead.isEmpty else { return }
        exchange.responseHeadSent = true
        stream.write(heldResponseHead)
        heldResponseHead.clear()
    }

    func upstream(_ upstream: UpstreamConnection, didReceiveBody bytes: UnsafeRawBufferPointer) {
        releaseResponseHead()
        exchange.bodyBytesSent += bytes.count
        if exchange.responseFraming == .chunked && !exchange.responseSourceChunked {
            // A body delimited by the upstream's close goes to the client as chunks.
            scratch.clear()
            scratch.appendHex(UInt64(bytes.count))
            scratch.append("\r\n")
            stream.write(scratch)
            stream.write(bytes)
            stream.write(staticBytes("\r\n"))
        } else {
            stream.write(bytes)
        }
        if stream.isAboveHighWater { blockUpstreamReads(upstream) }
    }

    func upstream(_ upstream: UpstreamConnection, didStartChunkOfSize size: UInt64) {
        guard exchange.responseFraming == .chunked, size > 0 else { return }
        releaseResponseHead()
        scratch.clear()
        scratch.appendHex(size)
        scratch.append("\r\n")
        stream.write(scratch)
    }

    func upstreamDidFinishChunk(_ upstream: UpstreamConnection) {
        guard exchange.responseFraming == .chunked else { return }
        stream.write(staticBytes("\r\n"))
    }

    func upstreamDidFinishMessage(_ upstream: UpstreamConnection) -> Bool {
        if exchange.interim {
            exchange.interim = false
            return false
        }
        releaseResponseHead()
        if exchange.responseFraming == .chunked {
            scratch.clear()
            if exchange.responseSourceChunked {
                ForwardedHead.writeLastChunk(trailersOf: upstream.parser.head, into: &scratch)
            } else {
                scratch.append("0\r\n\r\n")
            }
            stream.write(scratch)
        }
        exchange.responseDone = true
        // A 101 stops llhttp with HPE_PAUSED_UPGRADE by itself; pausing would hide it.
        return upstream.parser.head.statusCode != 101
    }

    func upstreamDidFinishResponse(_ upstream: UpstreamConnection) {
        guard upstream === self.upstream else { return }
        if exchange.responseFraming == .close {
            closeAfterResponse()
            return
        }
        if !exchange.requestDone {
            // The upstream answered without reading the whole request; the rest of it would
            // be mistaken for a next request, so the connection ends here.
            upstream.reusable = false
            closeAfterResponse()
            return
        }
        finishExchangeIfDone()
        drive()
    }

    private func blockUpstreamReads(_ upstream: UpstreamConnection) {
        upstreamReadsBlockedByClient = true
        upstream.stream?.stopReading()
    }

    func streamDidDrain(_ stream: TCPStream) {
        guard upstreamReadsBlockedByClient else { return }
        upstreamReadsBlockedByClient = false
        upstream?.stream?.startReading()
    }

    func upstream(_ upstream: UpstreamConnection, didFail failure: UpstreamFailure) {
        guard upstream === self.upstream else { return }
        self.upstream = nil
        heldResponseHead.clear()
        if exchange.responseHeadSent {
            // Part of the response is out; the client can only learn of the failure by the close.
            worker.logUpstreamFailure(failure, route: plan?.route.name, midResponse: true)
            close()
            return
        }
        if failure.allowsRetryOnFreshConnection && upstream.isReused && !upstream.receivedResponseBytes
            && !exchange.retried && !exchange.hasRequestBody, let plan {
            exchange.retried = true
            let fresh = worker.pool(for: plan).acquire(for: self, fresh: true)
            self.upstream = fresh
            fresh.write(replayableHead)
            return
        }
        worker.logUpstreamFailure(failure, route: plan?.route.name, midResponse: false)
        let route = plan?.route.name
        let problem: Problem
        switch failure {
        case .resolve(let detail): problem = .badGateway(detail, route: route)
        case .connect(let error): problem = .badGateway("cannot connect to the upstream: \(error.name)", route: route)
        case .connectTimeout: problem = .gatewayTimeout("connecting to the upstream timed out", route: route)
        case .responseTimeout: problem = .gatewayTimeout("the upstream did not respond within upstreamResponseTimeoutSeconds", route: route)
        case .closed(let error):
            problem = .badGateway(error.map { "the upstream reset the connection before responding (\($0.name))" }
                                  ?? "the upstream closed the connection before responding", route: route)
        case .badResponse(let error): problem = .badGateway("the upstream sent an invalid response: \(error.reason)", route: route)
        }
        answerLocally(problem)
        if !exchange.requestDone { closeAfterResponse() } else { finishExchangeIfDone(); drive() }
    }

    // MARK: Upgrade tunnel

    func upstream(_ upstream: UpstreamConnection, didUpgradeWith bytes: UnsafeRawBufferPointer) {
        releaseResponseHead()
        phase = .tunnelling
        upstream.startTunnel()
        timer?.disarm()
        logAccess()
        if bytes.count > 0 { stream.write(bytes) }
        if !leftover.isEmpty {
            upstream.write(leftover)
            leftover.clear()
        }
        parserPaused = false
        stream.startReading()
    }

    func upstreamTunnel(_ upstream: UpstreamConnection, didRead bytes: UnsafeRawBufferPointer) {
        stream.write(bytes)
        if stream.isAboveHighWater { blockUpstreamReads(upstream) }
    }

    func upstreamTunnelDidEnd(_ upstream: UpstreamConnection) {
        upstream.close()
        self.upstream = nil
        closeAfterResponse()
    }

    // MARK: Ending exchanges

    /// Answers with a problem document; with a request body still to come, the connection
    /// ends after the answer (the body is not read).
    private func answerLocally(_ problem: Problem) {
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
    private func rejectRequest(_ error: HTTP1Error) {
        let problem: Problem
        switch error.requestStatus {
        case 431: problem = .headersTooLarge(error.reason)
        case 501: problem = .notImplemented(error.reason)
        default: problem = .badRequest(error.reason)
        }
        switch phase {
        case .closing, .tunnelling:
            return
        case .awaitingRequest, .readingHead:
            break
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

    private func finishExchangeIfDone() {
        guard phase == .exchanging, exchange.requestDone, exchange.responseDone else { return }
        logAccess()
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

    private func closeAfterResponse() {
        guard phase != .closing else { return }
        if phase == .exchanging && exchange.responseDone { logAccess() }
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

    private func logAccess() {
        guard settings.config.accessLog, exchange.startedAt != 0 else { return }
        worker.logAccess(exchange)
        exchange.startedAt = 0
    }

    // MARK: Timers and the end of the socket

    private func timerFired() {
        switch phase {
        case .awaitingRequest:
            close()
        case .readingHead:
            exchange = Exchange()
            exchange.keepAlive = false
            scratch.clear()
            Problem.headerTimeout().write(keepAlive: false, viaSuffix: settings.viaSuffix, into: &scratch)
            stream.write(scratch)
            closeAfterResponse()
        default:
            break
        }
    }

    func stream(_ stream: TCPStream, didEndWith error: UVError?) {
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

    func streamDidClose(_ stream: TCPStream) {
        phase = .closing
        timer?.close()
        timer = nil
        if let upstream {
            // The exchange did not finish: that connection's state is unknown.
            upstream.close()
            self.upstream = nil
        }
        worker.connectionDidClose(self)
    }
}
