import ByteBuffers
import EventLoop
import HTTP1
import TLSStream

/// Why an exchange with the upstream failed before it completed.
enum UpstreamFailure: Error {
    case resolve(String)
    case connect(UVError)
    /// The TLS handshake (or a TLS record later) failed; the reason is safe to show.
    case tls(String)
    case connectTimeout
    /// Every connection `maxUpstreamConnections` allows stayed busy for `upstreamQueueTimeoutSeconds`.
    case queueTimeout
    case responseTimeout
    /// The whole response did not arrive within `upstreamResponseTotalSeconds` of the request.
    case responseTotalTimeout
    /// The upstream closed (or reset) the connection before the response was complete.
    case closed(UVError?)
    case badResponse(HTTP1Error)

    /// Nothing of the response arrived, so a request without a body can be sent again on a
    /// new connection (an idle pooled connection the upstream closed just as it was reused).
    var allowsRetryOnFreshConnection: Bool {
        if case .closed = self { return true }
        return false
    }

    /// The `kind` label of `oauth_relay_upstream_errors_total`.
    var metricKind: String {
        switch self {
        case .resolve: "resolve"
        case .connect: "connect"
        case .tls: "tls"
        case .connectTimeout: "connect_timeout"
        case .queueTimeout: "queue_timeout"
        case .responseTimeout, .responseTotalTimeout: "response_timeout"
        case .closed: "closed"
        case .badResponse: "bad_response"
        }
    }
}

/// One HTTP/1.1 connection to an upstream, reused for many exchanges through its pool.
/// While an exchange runs, `owner` (the client connection's exchange) receives the parsed
/// response (`UpstreamExchangeOwner`).
final class UpstreamConnection: ByteStreamDelegate, HTTP1ParserDelegate {
    /// `queued`: waiting for the pool to allow one more connection (`maxUpstreamConnections`).
    enum State { case queued, resolving, connecting, active, tunnelling, idle, closed }

    unowned let pool: UpstreamPool
    private(set) var stream: (any ByteStream)?
    let parser: HTTP1Parser
    private(set) var state: State = .resolving
    /// Whose exchange this is; strong only during the exchange.
    var owner: (any UpstreamExchangeOwner)?
    /// Exchanges completed on this connection before the current one.
    private(set) var completedExchanges = 0
    /// Any byte of a response arrived in the current exchange.
    private(set) var receivedResponseBytes = false
    /// The upstream allows another request after this response, and nothing went wrong.
    var reusable = true
    /// Request bytes written before a connection exists (while queued or resolving).
    private var beforeConnect = ByteBuffer()
    private let timer: DeadlineTimer
    /// The pool's, kept here: the timer is armed several times per exchange.
    private let loop: EventLoop
    private let timeouts: Timeouts
    private var deadlines = UpstreamDeadlines()

    init(pool: UpstreamPool) {
        self.pool = pool
        parser = HTTP1Parser(kind: .response, limits: pool.settings.responseHeaderLimits)
        loop = pool.loop
        timeouts = Timeouts(pool.settings)
        timer = DeadlineTimer(loop: pool.loop)
        parser.delegate = self
        timer.whenExpired { [unowned self] in self.timerFired() }
    }

    var isReused: Bool { completedExchanges > 0 }

    var isAboveHighWater: Bool {
        stream?.isAboveHighWater ?? (beforeConnect.count > 256 * 1024)
    }

    func write(_ bytes: UnsafeRawBufferPointer) {
        if let stream {
            stream.write(bytes)
        } else {
            beforeConnect.append(bytes)
        }
    }

    func write(_ buffer: borrowing ByteBuffer) {
        write(buffer.readableBytes)
    }

    // MARK: Lifecycle

    /// Why the socket could not even be created (reported by the connect timer at once).
    private var failedToConnect: UVError?

    func connect(to address: SocketAddress) {
        guard state == .resolving else { return }
        do {
            stream = try TLSStream.connect(on: loop, to: address, tls: pool.tls, host: pool.key.host, delegate: self)
        } catch {
            // Reported on the next loop turn, not from inside `acquire`: the owner takes this
            // connection as its upstream only when `acquire` returns, and would not recognise a
            // failure reported before (the request then waited forever, e.g. out of descriptors).
            state = .connecting
            failedToConnect = error
            arm(.connect, 0)
            return
        }
        state = .connecting
        arm(.connect, timeouts.connect)
        if !beforeConnect.isEmpty {
            stream?.write(beforeConnect)
            beforeConnect.clear()
        }
    }

    /// Waits for a connection slot: every connection the pool may open is busy. Writes are kept
    /// until then; after `milliseconds` the exchange fails with `queueTimeout`.
    func enterQueue(milliseconds: UInt64) {
        state = .queued
        arm(.queue, milliseconds)
    }

    /// The pool allows this connection now: it resolves and connects like any new one.
    func leaveQueue() {
        guard state == .queued else { return }
        state = .resolving
        // The total response deadline, if started, stays; connecting arms the timer again.
        deadlines.endPurpose()
        timer.disarm()
    }

    /// A queued exchange takes over the socket of `previous`, whose exchange just ended and
    /// which would otherwise go idle: the slot passes on with the socket, and no new connection
    /// is opened while the upstream is at its limit.
    func takeOver(_ previous: UpstreamConnection) {
        guard state == .queued, let stream = previous.handOverStream() else { return }
        self.stream = stream
        stream.delegate = self
        completedExchanges = previous.completedExchanges
        state = .active
        arm(.response, timeouts.response)
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
        defer { stream = nil }
        return stream
    }

    /// Starts an exchange for `owner` on this (new or idle) connection.
    func begin(for owner: any UpstreamExchangeOwner) {
        self.owner = owner
        receivedResponseBytes = false
        deadlines.beginExchange()
        if state == .idle {
            state = .active
            parser.reset()
            arm(.response, timeouts.response)
        }
    }

    /// The exchange is over; back to the pool (or closed, when it cannot be reused).
    func finishExchange() {
        owner = nil
        completedExchanges += 1
        guard reusable, state == .active, parser.isInMessage == false else {
            close()
            return
        }
        state = .idle
        arm(.idle, timeouts.idle)
        // Keep reading while idle: an upstream that closes is noticed and dropped at once.
        stream?.startReading()
        pool.park(self)
    }

    /// The request is still flowing (request body bytes written): the upstream is not late.
    func noteRequestProgress() {
        if deadlines.purpose == .response { arm(.response, timeouts.response) }
    }

    /// The whole request has been handed to this connection: from now on the response has at
    /// most `upstreamResponseTotalSeconds`, connecting included (like Envoy's route timeout, it
    /// starts at the end of the client's request), however steadily its bytes arrive.
    func noteRequestSent() {
        guard let total = timeouts.responseTotal, owner != nil,
              let due = deadlines.startResponseDeadline(after: total, now: loop.nowMilliseconds) else { return }
        setTimer(due)
    }

    func startTunnel() {
        state = .tunnelling
        disarm()
    }

    /// The client ended the tunnel: deliver what is queued, then close.
    func finishTunnel() {
        guard state == .tunnelling else { return close() }
        state = .closed
        owner = nil
        timer.close()
        stream?.closeAfterWrites(lingerMilliseconds: 1000, stallMilliseconds: 60_000)
        pool.connectionClosed()
    }

    func close() {
        guard state != .closed else { return }
        if state == .queued {
            // Never held a slot.
            state = .closed
            owner = nil
            timer.close()
            pool.leaveQueue(self)
            return
        }
        let wasIdle = state == .idle
        state = .closed
        owner = nil
        timer.close()
        stream?.close()
        if wasIdle { pool.unpark(self) }
        pool.connectionClosed()
    }

    private func fail(_ failure: UpstreamFailure) {
        let owner = self.owner
        close()
        owner?.upstream(self, didFail: failure)
    }

    // MARK: Timers

    private func arm(_ purpose: UpstreamDeadlines.Purpose, _ milliseconds: UInt64) {
        let now = loop.nowMilliseconds
        setTimer(deadlines.start(purpose, after: milliseconds, now: now))
    }

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
            // Issue 3: a handshake that does not finish is a TLS failure (502), not a slow network.
            fail(stream?.isHandshaking == true ? .tls("TLS handshake timed out") : .connectTimeout)
        case .response: fail(.responseTimeout)
        case .responseTotal: fail(.responseTotalTimeout)
        case .idle: close()
        case .none: break
        }
    }

    // MARK: ByteStreamDelegate

    func stream(_ stream: any ByteStream, didConnectWith error: UVError?) {
        if let error {
            fail(stream.failureReason.map { .tls($0) } ?? .connect(error))
            return
        }
        state = .active
        arm(.response, timeouts.response)
        stream.startReading()
    }

    func stream(_ stream: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
        switch state {
        case .tunnelling:
            owner?.upstreamTunnel(self, didRead: bytes)
            return
        case .active:
            break
        default:
            // Bytes on an idle connection: the upstream is not speaking HTTP with us any more.
            close()
            return
        }
        receivedResponseBytes = true
        if deadlines.purpose == .response { arm(.response, timeouts.response) }
        switch parser.feed(bytes) {
        case .consumed:
            owner?.upstreamDidParseRead(self)
        case .paused(let consumed):
            if consumed < bytes.count {
                // Bytes after a complete response that nobody asked for: never reuse this one;
                // and if they came in the read that carried the response, it is a 502.
                reusable = false
                if owner?.upstreamReadOverran(self) == true {
                    return fail(.badResponse(HTTP1Error(.malformed, "bytes past the end of the response (its Content-Length or last chunk)")))
                }
            }
            disarm()
            owner?.upstreamDidFinishResponse(self)
        case .upgraded(let consumed):
            owner?.upstream(self, didUpgradeWith: UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
        case .failed(let error):
            fail(.badResponse(error))
        }
    }

    func stream(_ stream: any ByteStream, didEndWith error: UVError?) {
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
        case .active, .connecting:
            fail(stream.failureReason.map { .tls($0) } ?? .closed(error))
        default:
            close()
        }
    }

    func streamDidDrain(_ stream: any ByteStream) {
        owner?.upstreamDidDrain(self)
    }

    // MARK: HTTP1ParserDelegate (the response), handed to the owner

    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation {
        if !parser.head.keepAlive { reusable = false }
        return owner?.upstream(self, didReceiveHead: parser.head) ?? .none
    }

    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer) {
        owner?.upstream(self, didReceiveBody: bytes)
    }

    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64) {
        owner?.upstream(self, didStartChunkOfSize: size)
    }

    func parserDidFinishChunk(_ parser: HTTP1Parser) {
        owner?.upstreamDidFinishChunk(self)
    }

    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool {
        owner?.upstreamDidFinishMessage(self) ?? true
    }
}

/// An upstream connection's timeouts, in milliseconds, from the settings it was opened with.
private struct Timeouts {
    let connect: UInt64
    let response: UInt64
    let idle: UInt64
    let responseTotal: UInt64?

    init(_ settings: ProxySettings) {
        connect = settings.connectTimeoutMilliseconds
        response = settings.responseTimeoutMilliseconds
        idle = settings.idleTimeoutMilliseconds
        responseTotal = settings.responseTotalMilliseconds
    }
}
