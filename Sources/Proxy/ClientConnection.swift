// ClientConnection: one accepted client socket and the exchanges on it, one at a time. It moves
// bytes; what to do with them is decided by its `Exchange` (Exchange.swift), to which it reports
// every event and whose answers it carries out.
//
// Pipelined requests are answered in order by pausing the parser at the end of each request and
// keeping the bytes after it in `leftover` until the response is complete.
//
// Bodies stream: request body bytes go from the parser callback straight to the upstream
// stream (copied only if the kernel does not take them at once); response bytes likewise to the
// client. When the receiving side's write backlog passes its high-water mark, the sending side
// stops reading until the backlog drains.
//
// Work that changes the exchange (finishing it, resetting the parser) happens only after the
// parser returns, never inside its callbacks.
//
// This file: state, reading and feeding the parser. RequestLeg.swift: the request as it arrives
// (the parser's delegate: the head placed, the body sent on; the waits for the token and the body:
// RequestLeg+Waits.swift). UpstreamLeg.swift: the side facing the upstream (the request sent
// there, what the upstream connection reports, replays; the bytes for the client:
// ResponseRelay.swift). ClientConnection+Ending.swift: local answers and endings.
// UpstreamRequestHead.swift: the request head as the upstream receives it.

import ByteBuffers
import EventLoop
import HTTP1

final class ClientConnection: ByteStreamDelegate {
    /// Strong, and a `let`: calls on a `let` of `self` borrow it, where an `unowned(unsafe)`
    /// reference is retained and released around each of the dozen calls per request. The cycle
    /// ends when the connection closes: the worker drops it from `clients` in its close callback.
    let worker: ProxyWorker
    let stream: any ByteStream
    /// A `let`: the hot path's arms and disarms then need no retain of it (a closed timer
    /// ignores them).
    let timer: DeadlineTimer
    /// The settings of the current exchange (a reload applies from the next request on).
    var settings: ProxySettings
    var forwarding: ForwardedHead.Forwarding
    /// The parser stopped at the end of a request (or an upgrade) and must be resumed. Declared
    /// here, after `forwarding`, to sit in the padding that follows it: Swift lays fields out in
    /// the order written, and an idle connection's size is the relay's memory per connection.
    var parserPaused = false
    /// The connection is idle and keeps its workspace for its next request, until its worker's
    /// `WorkspaceSweep` takes it back (WorkspaceSweep.swift). In the same padding as `parserPaused`.
    var keptWorkspace = KeptWorkspace.none
    /// The decisions: the state of the connection and of its current exchange (the latter kept
    /// in the workspace: `Exchange.current`).
    var exchange: Exchange
    /// The parser and buffers of the request under way, lent by the worker (nil while idle, but
    /// for a while after a request: `keptWorkspace`).
    private(set) var workspace: ExchangeWorkspace?
    /// The side facing the upstream (UpstreamLeg.swift), made with this connection and dropped
    /// when its socket closes (`streamDidClose`), which ends the cycle with the leg's strong
    /// `connection`. Nil only after that: each needs the other to be made, so one of the two
    /// references is an optional, and this one is the side called least per request.
    var upstreamLeg: UpstreamLeg?
    /// The request as it arrives, the parser's delegate (RequestLeg.swift): made with this
    /// connection and dropped when its socket closes, for the same reason as `upstreamLeg`.
    var requestLeg: RequestLeg?
    /// On the forward-proxy listener, or inside an intercepted `CONNECT` (ClientConnection+Forward.swift);
    /// nil on the reverse listeners.
    let forwardSide: ForwardSide?

    init(worker: ProxyWorker, stream: any ByteStream, overTLS: Bool = false, forwardRole: ForwardSide.Role? = nil) {
        self.worker = worker
        self.stream = stream
        forwardSide = forwardRole.map { ForwardSide(role: $0) }
        settings = worker.currentSettings
        exchange = Exchange(blank: worker.workspaces.blank)
        let address = stream.peerAddress()?.ipString ?? "unknown"
        forwarding = ForwardedHead.Forwarding(clientAddress: worker.sharedClientAddress(Array(address.utf8)),
                                              trustForwardedHeaders: settings.trustForwardedHeaders,
                                              viaSuffix: settings.viaSuffix, overTLS: overTLS)
        timer = DeadlineTimer(loop: stream.loop)
        upstreamLeg = UpstreamLeg(connection: self)
        requestLeg = RequestLeg(connection: self)
        stream.delegate = self
        timer.whenExpired { [unowned self] in self.timerFired() }
        // The first request's head is due `headerTimeoutSeconds` after the accept, not after its
        // first byte: a connection that sends nothing, or dribbles, is not kept for longer.
        timer.arm(afterMilliseconds: settings.headerTimeoutMilliseconds)
        stream.startReading()
    }

    var isIdle: Bool { exchange.phase == .awaitingRequest && (workspace?.leftover.isEmpty ?? true) }

    /// The workspace of the request under way, lent now if the connection has none.
    @inline(__always)
    var work: ExchangeWorkspace {
        if let workspace { return workspace }
        let lent = worker.workspaces.lend(to: nil, limits: settings.headerLimits)
        // Set here, not passed to `lend`: a stored reference passed as an argument is retained
        // around the call (once per request); assigned to the parser's unowned field, it is not.
        lent.parser.delegate = requestLeg
        exchange.keepCurrent(in: lent.current.pointer, writable: true)
        workspace = lent
        return lent
    }

    /// The request parser, in the workspace: it holds the head until the next request.
    @inline(__always)
    var parser: HTTP1Parser { work.parser }

    // Reading a stored reference (`work`, `upstreamLeg`) gives the caller its own: a retain, and
    // a release once it is done, a pair per read. The two below lend the reference for one call
    // instead, for the places where it cannot go away during that call; each says why.

    /// `work` (lent now if the connection has none) for one call, without a retain. A workspace
    /// goes back only in `giveBack`: from `keepOrReturnWorkspaceIfIdle` (`drive()`, after the
    /// parser returned), the worker's sweep and the socket's close callback (both from the loop).
    /// So it outlives a `body` that does not call `drive()`: the parser's `feed` and its callbacks
    /// (nothing may reset a parser inside its own callback), or writing a response's bytes (a
    /// stream's `write` never calls its delegate back).
    @inline(__always)
    func withWork<Result>(_ body: (ExchangeWorkspace) -> Result) -> Result {
        // Not `work` itself: the optimizer keeps a retain and release of it where its two paths meet.
        if workspace == nil { _ = work }
        return Unmanaged.passUnretained(workspace.unsafelyUnwrapped)._withUnsafeGuaranteedRef(body)
    }

    /// `upstreamLeg` for one call, without a retain; nothing when the connection closed. The leg
    /// outlives the call: the connection lets go of it only in `releaseExchangeParts`, from the
    /// socket's close callback (which libuv makes from the loop, never inside a read, a parser's
    /// callback or an upstream event) or from `handOff` once the parser returned, and the
    /// connection itself is held by whoever calls in (its stream, its legs).
    @inline(__always)
    func withUpstreamLeg(_ body: (UpstreamLeg) -> Void) {
        guard let leg = upstreamLeg.map(Unmanaged.passUnretained) else { return }
        leg._withUnsafeGuaranteedRef(body)
    }

    /// The connection is closed: its workspace goes back whatever state it was in, its
    /// exchange's blank (it may have ended mid-exchange, waiting for a token, say).
    func returnWorkspace() {
        guard let workspace else { return }
        workspace.current.reset()
        giveBack(workspace)
    }

    /// The exchange reads the blank state before the workspace, which held its state, goes.
    func giveBack(_ workspace: ExchangeWorkspace) {
        useKeptWorkspace()
        let pool = worker.workspaces
        exchange.keepCurrent(in: pool.blank.pointer, writable: false)
        self.workspace = nil
        pool.takeBack(workspace)
    }

    /// Exchanges are timed for the metrics or the access log (a reload may switch the log).
    var timesExchanges: Bool { worker.metrics != nil || settings.accessLog }

    /// Takes the settings a reload published, at a request's head (its header limits apply from
    /// the next head on).
    func adopt(_ current: ProxySettings) {
        settings = current
        workspace?.parser.limits = current.headerLimits
        forwarding.trustForwardedHeaders = current.trustForwardedHeaders
        forwarding.viaSuffix = current.viaSuffix
    }

    // MARK: Reading and parsing

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        switch exchange.phase {
        case .tunnelling:
            guard let upstreamLeg else { return }
            upstreamLeg.write(bytes)
            if upstreamLeg.isAboveHighWater { blockReadsForUpstream() }
        case .closing:
            break
        default:
            useKeptWorkspace()
            if parserPaused {
                // The next request came before this one's response (pipelining): keep it for later.
                let work = self.work
                work.leftover.append(bytes)
                if !exchange.readsOnWhilePipelined(pipelinedBytes: work.leftover.count) { stream.stopReading() }
                return
            }
            feedParser(bytes)
            drive()
            offerRequestBodySplice()
        }
    }

    func feedParser(_ bytes: UnsafeRawBufferPointer) {
        let headStarts = exchange.readingStarts()
        let result = withWork { $0.parser.feed(bytes) }
        if exchange.needsHeaderDeadline(headStarted: headStarts) {
            timer.arm(afterMilliseconds: settings.headerTimeoutMilliseconds)
        }
        switch result {
        case .consumed:
            break
        case .paused(let consumed), .upgraded(let consumed):
            parserPaused = true
            if case .upgraded = result {
                stream.stopReading()
                if let taken = forwardSide?.taken {
                    handOff(taken, received: UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
                    return
                }
            }
            if consumed < bytes.count {
                work.leftover.append(UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
            }
        case .failed(let error):
            rejectRequest(error)
            return
        }
        finishExchangeIfDone()
    }

    /// Parses pipelined bytes kept in `leftover` while no exchange is running. Once none are
    /// left the connection is idle, and keeps its workspace for a while or gives it back
    /// (`keepOrReturnWorkspaceIfIdle`).
    func drive() {
        while exchange.phase == .awaitingRequest, let work = workspace, !work.leftover.isEmpty {
            parseLeftover(of: work)
        }
        if exchange.readsClient(pipelinedBytes: workspace?.leftover.count ?? 0) { stream.startReading() }
        keepOrReturnWorkspaceIfIdle()
    }

    /// Parses the pipelined bytes kept in `leftover`. They move to `parsing` first: the parser
    /// may stop at the end of a request in them, and what follows goes back to `leftover`.
    func parseLeftover(of work: ExchangeWorkspace) {
        work.parsing.swapStorage(with: &work.leftover)
        work.leftover.clear()
        feedParser(work.parsing.readableBytes)
        work.parsing.clear()
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

    // MARK: Backlogs and the tunnel

    func blockReadsForUpstream() {
        stream.stopReading()
        if exchange.upstreamBacklogFull() { timer.disarm() }
    }

    /// The upstream's write backlog drained (reported by the leg): the client may be read again.
    func upstreamBacklogDrained() {
        switch exchange.upstreamBacklogDrained(pipelinedBytes: workspace?.leftover.count ?? 0) {
        case .none:
            return
        case .resumeReading(let restart):
            if restart { requestLeg?.startBodyClock() }
            stream.startReading()
        case .stayPaused(let restart):
            if restart { requestLeg?.startBodyClock() }
        }
    }

    /// The client's write backlog drained: the upstream's response may flow again.
    func streamDidDrain(_ stream: any ByteStream) {
        guard exchange.clientBacklogDrained() else { return }
        upstreamLeg?.resumeReading()
    }

    /// The upstream switched protocols (the leg started its tunnel): the 101 was relayed, and
    /// `bytes`, which followed it, go to the client; bytes the client sent after its request go
    /// to the upstream, and the client is read again, now for the tunnel.
    func tunnelOpened(with bytes: UnsafeRawBufferPointer) {
        timer.disarm()
        recordExchange()
        if bytes.count > 0 { stream.write(bytes) }
        if let work = workspace, !work.leftover.isEmpty {
            upstreamLeg?.write(work.leftover)
            work.leftover.clear()
        }
        parserPaused = false
        stream.startReading()
    }
}
