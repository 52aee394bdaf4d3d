import ByteBuffers
import EventLoop
import HTTP1
import TLS
import TLSStream

/// One HTTP/1.1 client connection to an upstream server: its stream (TCP or TLS), its llhttp
/// response parser, its deadlines (`UpstreamDeadlines`, timed by its owner's policy), connecting
/// and the mapping of what went wrong into one `ConnectionFailure`. The proxy's pool reuses one
/// for many exchanges (`UpstreamConnectionPool`); `sendHTTPRequest` owns one for one exchange.
/// While an exchange runs, `owner` receives the parsed response (`UpstreamExchangeOwner`).
///
/// The owner resolves the host name (the pool with its cache, the HTTP client for itself) and
/// hands the address to `connect(to:)`.
public final class UpstreamConnection: ByteStreamDelegate, HTTP1ParserDelegate {
    /// `queued`: waiting for the pool to allow one more connection (`maxUpstreamConnections`).
    public enum State { case queued, resolving, connecting, active, tunnelling, idle, closed }

    /// The pool that keeps it between exchanges; nil for a connection of its own, closed by its
    /// owner after its one exchange.
    private unowned let pool: (any UpstreamConnectionPool)?
    public private(set) var stream: (any ByteStream)? {
        didSet { unretainedStream = stream.map { (Unmanaged.passUnretained($0 as AnyObject).toOpaque(), type(of: $0)) } }
    }
    /// `stream` as its address and type, for the calls of every exchange (`withStream`).
    private var unretainedStream: (object: UnsafeMutableRawPointer, type: any ByteStream.Type)?
    public let parser: HTTP1Parser
    public private(set) var state: State = .resolving
    /// Whose exchange this is; strong only during the exchange.
    public var owner: (any UpstreamExchangeOwner)? {
        // A read's calls without a retain are for the owner it holds, not for a new one.
        didSet { ownerHeldByRead = nil }
    }
    /// The owner as the read being parsed holds it (`holdingOwner`): its address and type, through
    /// which the read's calls reach it without a retain each (`callOwner`). Nil outside a read,
    /// and from the moment `owner` changes in one.
    private var ownerHeldByRead: (object: UnsafeMutableRawPointer, type: any UpstreamExchangeOwner.Type)?
    /// Exchanges completed on this connection before the current one.
    private(set) var completedExchanges = 0
    /// Any byte of a response arrived in the current exchange.
    public private(set) var receivedResponseBytes = false
    /// This connection is its socket's splice advisor (`offerSplice`): what lets it go, at each
    /// response's end, casts the stream only then.
    private var advisesSplice = false
    /// The upstream allows another request after this response, and nothing went wrong.
    public var reusable = true
    /// Request bytes written before a connection exists (while queued or resolving).
    private var beforeConnect = ByteBuffer()
    private let timer: DeadlineTimer
    /// Kept here: the timer is armed several times per exchange.
    private let loop: EventLoop
    /// The name to connect to: SNI and the checked certificate name under TLS.
    private let host: String
    private let tls: TLSConfiguration?
    private var deadlines: UpstreamDeadlines

    /// A connection to `host` over TLS when `tls` is given, reading response heads within
    /// `headerLimits`, its deadlines run by `deadlinePolicy`.
    public init(loop: EventLoop, host: String, tls: TLSConfiguration?, headerLimits: HeaderLimits,
                deadlinePolicy: UpstreamDeadlines.Policy, pool: (any UpstreamConnectionPool)?) {
        self.pool = pool
        self.loop = loop
        self.host = host
        self.tls = tls
        parser = HTTP1Parser(kind: .response, limits: headerLimits)
        deadlines = UpstreamDeadlines(policy: deadlinePolicy)
        timer = DeadlineTimer(loop: loop)
        parser.delegate = self
        timer.whenExpired { [unowned self] in self.timerFired() }
    }

    public var isReused: Bool { completedExchanges > 0 }

    public var isAboveHighWater: Bool {
        stream?.isAboveHighWater ?? (beforeConnect.count > 256 * 1024)
    }

    public func write(_ bytes: UnsafeRawBufferPointer) {
        if withStream({ $0.write(bytes) }) == nil { beforeConnect.append(bytes) }
    }

    /// Calls the stream, if any, without the retain and release a call through `stream` costs.
    /// Only for `write` and `startReading`: whatever becomes of `stream` during them, the stream
    /// outlives the call. While its handle is open a stream holds itself (rule 2 of
    /// EventLoop.swift; a TLS stream is held by its TCP stream, as its delegate, till then), and
    /// a handle closes only in the loop's close phase, never inside a call; once closed, a stream
    /// writes nothing and starts no reading, so it reports nothing that could let it go (a TLS
    /// stream delivers bytes on `startReading` only when it was accepted with bytes, which an
    /// upstream connection's, connected, never is).
    @inline(__always)
    private func withStream<Result>(_ call: (any ByteStream) -> Result) -> Result? {
        guard let unretainedStream else { return nil }
        return unretainedStream.type.withUnretained(unretainedStream.object, call)
    }

    public func write(_ buffer: borrowing ByteBuffer) {
        write(buffer.readableBytes)
    }

    // MARK: Lifecycle

    /// Why the socket could not even be created (reported by the connect timer at once).
    private var failedToConnect: UVError?

    /// The owner starts resolving the host name: under the single-exchange policy the connect
    /// deadline runs from now.
    public func startResolving() {
        guard state == .resolving, let due = deadlines.startResolving(now: loop.nowMilliseconds) else { return }
        setTimer(due)
    }

    public func connect(to address: SocketAddress) {
        guard state == .resolving else { return }
        do {
            stream = try TLSStream.connect(on: loop, to: address, tls: tls, host: host, delegate: self)
        } catch {
            // Reported on the next loop turn, not from inside `acquire`: the owner takes this
            // connection as its upstream only when `acquire` returns, and would not recognise a
            // failure reported before (the request then waited forever, e.g. out of descriptors).
            state = .connecting
            failedToConnect = error
            setTimer(deadlines.start(.connect, after: 0, now: loop.nowMilliseconds))
            return
        }
        state = .connecting
        setTimer(deadlines.startConnecting(now: loop.nowMilliseconds))
        if !beforeConnect.isEmpty {
            stream?.write(beforeConnect)
            beforeConnect.clear()
        }
    }

    /// Waits for a connection slot: every connection the pool may open is busy. Writes are kept
    /// until then; after the policy's queue timeout the exchange fails with `queueTimeout`.
    public func enterQueue() {
        state = .queued
        setTimer(deadlines.startQueue(now: loop.nowMilliseconds))
    }

    /// The pool allows this connection now: it resolves and connects like any new one.
    public func leaveQueue() {
        guard state == .queued else { return }
        state = .resolving
        // The total response deadline, if started, stays; connecting arms the timer again.
        deadlines.endPurpose()
        timer.disarm()
    }

    /// A queued exchange takes over the socket of `previous`, whose exchange just ended and
    /// which would otherwise go idle: the slot passes on with the socket, and no new connection
    /// is opened while the upstream is at its limit.
    public func takeOver(_ previous: UpstreamConnection) {
        guard state == .queued, let stream = previous.handOverStream() else { return }
        self.stream = stream
        stream.delegate = self
        completedExchanges = previous.completedExchanges
        state = .active
        setTimer(deadlines.startResponse(now: loop.nowMilliseconds))
        if !beforeConnect.isEmpty {
            stream.write(beforeConnect)
            beforeConnect.clear()
        }
    }

    /// Gives up the socket to a queued exchange (`takeOver`); this object is done with it.
    private func handOverStream() -> (any ByteStream)? {
        guard state == .idle || state == .active else { return nil }
        state = .closed
        owner = nil
        timer.close()
        stopAdvisingSplice()
        defer { stream = nil }
        return stream
    }

    /// Starts an exchange for `owner` on this (new or idle) connection.
    public func begin(for owner: any UpstreamExchangeOwner) {
        self.owner = owner
        receivedResponseBytes = false
        deadlines.beginExchange()
        if state == .idle {
            state = .active
            parser.reset()
            setTimer(deadlines.startResponse(now: loop.nowMilliseconds))
        }
    }

    /// The exchange is over; back to the pool (or closed, when it cannot be reused).
    public func finishExchange() {
        owner = nil
        completedExchanges += 1
        guard reusable, state == .active, parser.isInMessage == false, let pool else {
            close()
            return
        }
        state = .idle
        setTimer(deadlines.startIdle(now: loop.nowMilliseconds))
        // Keep reading while idle: an upstream that closes is noticed and dropped at once.
        withStream { $0.startReading() }
        pool.park(self)
    }

    /// The request is still flowing (request body bytes written): the upstream is not late.
    public func noteRequestProgress() {
        if deadlines.restartsOnProgress { setTimer(deadlines.startResponse(now: loop.nowMilliseconds)) }
    }

    /// The whole request has been handed to this connection: from now on the response has at
    /// most `upstreamResponseTotalSeconds`, connecting included (like Envoy's route timeout, it
    /// starts at the end of the client's request), however steadily its bytes arrive.
    public func noteRequestSent() {
        guard owner != nil, let due = deadlines.startResponseTotal(now: loop.nowMilliseconds) else { return }
        setTimer(due)
    }

    public func startTunnel() {
        state = .tunnelling
        disarm()
    }

    /// The client ended the tunnel: deliver what is queued, then close.
    public func finishTunnel() {
        guard state == .tunnelling else { return close() }
        state = .closed
        owner = nil
        timer.close()
        stream?.closeAfterWrites(lingerMilliseconds: 1000, stallMilliseconds: 60_000)
        pool?.connectionClosed()
    }

    public func close() {
        guard state != .closed else { return }
        if state == .queued {
            // Never held a slot.
            state = .closed
            owner = nil
            timer.close()
            pool?.leaveQueue(self)
            return
        }
        let wasIdle = state == .idle
        state = .closed
        owner = nil
        timer.close()
        stream?.close()
        if wasIdle { pool?.unpark(self) }
        pool?.connectionClosed()
    }

    private func fail(_ failure: ConnectionFailure) {
        let owner = self.owner
        close()
        owner?.upstream(self, didFail: failure)
    }

    // MARK: Timers

    private func setTimer(_ due: UInt64) {
        timer.arm(at: due)
    }

    private func disarm() {
        deadlines.stop()
        timer.disarm()
    }

    private func timerFired() {
        switch deadlines.expiry(at: loop.nowMilliseconds) {
        case .queue: fail(.queueTimeout)
        case .connect:
            if let failedToConnect { return fail(.connect(failedToConnect)) }
            fail(stream?.isHandshaking == true ? .handshakeTimeout : .connectTimeout)
        case .response: fail(.responseTimeout)
        case .responseTotal: fail(.responseTotalTimeout)
        case .idle: close()
        case .none: break
        }
    }

    // MARK: ByteStreamDelegate

    public func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        if let error {
            fail(stream.failureReason.map { .tls($0) } ?? .connect(error))
            return
        }
        state = .active
        setTimer(deadlines.startResponse(now: loop.nowMilliseconds))
        stream.startReading()
    }

    public func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        switch state {
        case .tunnelling:
            owner?.upstreamTunnel(self, didRead: bytes)
        case .active:
            holdingOwner { parseResponse(bytes) }
        default:
            // Bytes on an idle connection: the upstream is not speaking HTTP with us any more.
            close()
        }
    }

    /// Runs `body`, the parsing of a read, with the owner held by one retain, so that the read's
    /// calls to it (head, body, message end, the read's end: four or more) need none
    /// (`callOwner`). Held, not only referenced: a call may end the exchange, which lets `owner`
    /// go, and nothing else need hold the owner then (`HTTPClientExchange` lets itself go as it
    /// completes). Calls after `owner` changed, and calls from a nested read once it ended, are
    /// retained each as before.
    private func holdingOwner(_ body: () -> Void) {
        guard let owner else { return body() }
        ownerHeldByRead = (Unmanaged.passUnretained(owner as AnyObject).toOpaque(), type(of: owner))
        body()
        ownerHeldByRead = nil
        withExtendedLifetime(owner) {}
    }

    /// Calls the owner, if any: without a retain while the read being parsed holds it
    /// (`holdingOwner`), else through a copy of `owner`, which keeps it alive should the call
    /// end the exchange.
    @inline(__always)
    private func callOwner<Result>(_ call: (any UpstreamExchangeOwner) -> Result) -> Result? {
        if let held = ownerHeldByRead { return held.type.withUnretained(held.object, call) }
        return owner.map(call)
    }

    private func parseResponse(_ bytes: UnsafeRawBufferPointer) {
        receivedResponseBytes = true
        if deadlines.restartsOnProgress { setTimer(deadlines.startResponse(now: loop.nowMilliseconds)) }
        switch parser.feed(bytes) {
        case .consumed:
            callOwner { $0.upstreamDidParseRead(self) }
            offerSplice()
        case .paused(let consumed):
            stopAdvisingSplice()
            if consumed < bytes.count {
                // Bytes after a complete response that nobody asked for: never reuse this one;
                // and if they came in the read that carried the response, it is a 502.
                reusable = false
                if callOwner({ $0.upstreamReadOverran(self) }) == true {
                    return fail(.badResponse(HTTP1Error(.malformed, "bytes past the end of the response (its Content-Length or last chunk)")))
                }
            }
            disarm()
            callOwner { $0.upstreamDidFinishResponse(self) }
        case .upgraded(let consumed):
            owner?.upstream(self, didUpgradeWith: UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
        case .failed(let error):
            fail(.badResponse(error))
        }
    }

    public func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
        switch state {
        case .tunnelling:
            owner?.upstreamTunnelDidEnd(self)
        case .active where error == nil && parser.messageNeedsEOF:
            // A response delimited by the close: complete now.
            reusable = false
            if parser.finish() == nil {
                disarm()
                owner?.upstreamDidFinishResponse(self)
            } else {
                fail(.closed(nil))
            }
        case .active:
            fail(stream.failureReason.map { .tlsAfterHandshake($0) } ?? .closed(error))
        case .connecting:
            fail(stream.failureReason.map { .tls($0) } ?? .closed(error))
        default:
            close()
        }
    }

    public func streamDidDrain(_ stream: any ByteStream) {
        owner?.upstreamDidDrain(self)
    }

    // MARK: HTTP1ParserDelegate (the response), handed to the owner

    public func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        if !parser.head.keepAlive { reusable = false }
        return callOwner { $0.upstream(self, didReceiveHead: parser.head) } ?? .none
    }

    public func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {
        callOwner { $0.upstream(self, didReceiveBody: bytes) }
    }

    public func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {
        callOwner { $0.upstream(self, didStartChunkOfSize: size) }
    }

    public func parserDidFinishChunk(_ parser: HTTP1Parser) {
        callOwner { $0.upstreamDidFinishChunk(self) }
    }

    public func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        callOwner { $0.upstreamDidFinishMessage(self) } ?? true
    }
}

// MARK: Splicing the response body (SpliceRelay.swift)

extension UpstreamConnection: SpliceAdvisor {
    /// After a parsed read: when the owner would take the rest of a Content-Length body by
    /// splice, the socket's next readable bytes are offered to `spliceTarget` before any read.
    func offerSplice() {
        let remaining = parser.lengthFramedBodyRemaining
        guard remaining > 0, !advisesSplice, let tcp = stream as? TCPStream,
              owner?.upstream(self, spliceSinkForBody: remaining) != nil else { return }
        tcp.spliceAdvisor = self
        advisesSplice = true
    }

    private func stopAdvisingSplice() {
        guard advisesSplice else { return }
        advisesSplice = false
        (stream as? TCPStream)?.spliceAdvisor = nil
    }

    public func spliceTarget(for stream: TCPStream) -> SpliceTarget? {
        let remaining = parser.lengthFramedBodyRemaining
        guard state == .active, remaining > 0, let sink = owner?.upstream(self, spliceSinkForBody: remaining) else {
            // For the rest of this body, or this exchange: libuv reads again.
            stream.spliceAdvisor = nil
            advisesSplice = false
            return nil
        }
        return SpliceTarget(sink: sink, maxBytes: parser.skippableBodyBytes)
    }

    /// Spliced body bytes count as read and parsed: the same progress, deadline and count as a read.
    public func stream(_ stream: TCPStream, didSplice count: Int) {
        receivedResponseBytes = true
        if deadlines.restartsOnProgress { setTimer(deadlines.startResponse(now: loop.nowMilliseconds)) }
        parser.skipBody(count)
        owner?.upstream(self, didSpliceBody: count)
    }
}
