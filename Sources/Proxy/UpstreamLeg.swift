// UpstreamLeg: the client connection's side facing its upstream. It holds the pooled upstream
// connection of the exchange under way, and is the only code that talks to it: it writes the
// request head and body there, hears the response (`UpstreamExchangeOwner`,
// UpstreamLeg+Response.swift), sends a request again (a new token, a fresh connection, a DPoP
// nonce: UpstreamLeg+DPoP.swift) and ends or gives up that connection. The other side is the
// `ClientConnection` (the client socket, feeding the request parser) and its `RequestLeg` (the
// request as it arrives).
//
// What it reads of its connection, and why: the `exchange` (every upstream event is reported to
// it and its answer carried out here), the `work`space (the request head as it goes upstream is
// written into `scratch`; the head and body kept for a replay; the response relay), the client
// `stream` (the response's bytes, through the relay), and the `worker`, `settings` and
// `forwarding` of the exchange (the pool, the clock, tokens and logs; the head's fields). What it
// asks of the connection is a handful of calls: finish the exchange and read on, close (at once
// or after the response), answer locally, wait for the token, and the client's reads and
// deadlines around a tunnel and the upstream's backlog.

import ByteBuffers
import EventLoop
import HTTPClient

final class UpstreamLeg {
    /// Strong, and a `let`, for the reason given on `ClientConnection.worker`: the response's
    /// events call into the connection many times per request, and a `let` lets them borrow it.
    /// The two are created together, one per client connection (the connection makes its leg in
    /// its initializer), and end together: the connection drops its leg when its socket closes
    /// (`streamDidClose`), which ends this cycle. One object more per connection: 32 bytes (and
    /// 8 in the connection for its reference to it), one allocation at the accept, none
    /// per request.
    let connection: ClientConnection
    /// The upstream connection of the exchange under way: nil while none is needed, and from
    /// the moment an exchange gives it back (to the pool), closes it, or it fails. Set only in
    /// the leg's own files (the connection asks through the methods below).
    var upstream: UpstreamConnection?

    init(connection: ClientConnection) {
        self.connection = connection
    }

    @inline(__always)
    var isConnected: Bool { upstream != nil }

    /// The upstream's write backlog is past its high-water mark: the client's reads wait.
    @inline(__always)
    var isAboveHighWater: Bool { upstream?.isAboveHighWater == true }

    // MARK: The request, sent upstream

    /// Writes the request head (with the exchange's token, if any) to a pooled or new upstream
    /// connection. The head is read from the parser, where it stays until the next request, so
    /// this also serves a request that waited for its token or is replayed.
    /// `now`: the exchange clock if the caller just read it (0: read it here, when timing).
    /// `work`: the connection's workspace, one reference for the head and what follows (each
    /// read of `connection.work` is a retain and a release).
    func forwardRequestHead(at now: UInt64 = 0, in work: ExchangeWorkspace) {
        // The plan lent without a retain: it is one of the `plans` of the connection's settings,
        // which the connection holds until its next head adopts others.
        guard let plan = connection.exchange.current.plan.map(Unmanaged.passUnretained) else { return }
        plan._withUnsafeGuaranteedRef { forwardRequestHead(on: $0, at: now, in: work) }
    }

    @inline(__always)
    private func forwardRequestHead(on plan: RoutePlan, at now: UInt64, in work: ExchangeWorkspace) {
        let connection = self.connection
        guard writeUpstreamRequestHead(for: plan, in: work) else { return }
        work.replayableHead.clear()
        if !connection.exchange.current.request.hasBody { work.replayableHead.append(work.scratch.readableBytes) }
        if connection.timesExchanges {
            connection.exchange.current.record.upstreamStartedAt = now != 0 ? now : connection.worker.clock()
        }
        // Kept in `upstream` at once, and lent from there to what follows: a local reference
        // beside it would be a retain and a release more.
        upstream = connection.worker.withPool(for: plan, of: connection) { $0.acquire(for: self) }
        withUpstream { upstream in
            upstream.write(work.scratch)
            // A replay (a new token, a DPoP nonce) sends the body the upstream already received.
            if !work.replayBody.isEmpty && connection.exchange.resendsKeptBody { upstream.write(work.replayBody) }
            if connection.exchange.startsBodyClockWithHead { connection.requestLeg?.startBodyClock() }
            // A request that waited for its token, or is sent again, is complete as it goes out.
            if connection.exchange.requestComplete { upstream.noteRequestSent() }
        }
    }

    /// Writes the request head as it goes upstream into `scratch` (`UpstreamRequestHead`), with
    /// the exchange's token. False when it could not be written; when its proof could not be
    /// signed, the request was answered locally instead. `work`: the connection's workspace.
    func writeUpstreamRequestHead(for plan: RoutePlan, in work: ExchangeWorkspace) -> Bool {
        let connection = self.connection
        switch UpstreamRequestHead.write(for: plan, token: connection.exchange.token, framing: connection.exchange.current.request.framing,
                                         upgrade: connection.exchange.current.request.upgrade, forwarding: &connection.forwarding,
                                         proofs: plan.usesDPoP ? connection.worker.tokens?.proofs : nil,
                                         claimLines: connection.exchange.caller?.claimLines,
                                         challengedNonce: connection.exchange.current.response.dpopChallengeNonce, in: work) {
        case .written:
            return true
        case .unreadableTarget:
            return false
        case .proofNotSigned(let failure):
            proofFailed(failure, plan: plan)
            return false
        }
    }

    /// Request body bytes as framed for the upstream, kept too while the exchange can replay them.
    func sendRequestBody(_ bytes: UnsafeRawBufferPointer) {
        upstream?.write(bytes)
        switch connection.exchange.sentRequestBody(bytes.count) {
        case .none: break
        case .keep: connection.work.replayBody.append(bytes)
        case .dropKept: connection.work.replayBody.clear()
        }
    }

    /// Bytes for the upstream as they are: a tunnel's, or pipelined bytes that followed its 101.
    @inline(__always)
    func write(_ bytes: UnsafeRawBufferPointer) {
        upstream?.write(bytes)
    }

    @inline(__always)
    func write(_ buffer: borrowing ByteBuffer) {
        upstream?.write(buffer)
    }

    /// Request body bytes went out: the upstream is not late.
    @inline(__always)
    func noteRequestProgress() {
        withUpstream { $0.noteRequestProgress() }
    }

    /// The whole request went out: the response's total deadline starts.
    @inline(__always)
    func noteRequestSent() {
        withUpstream { $0.noteRequestSent() }
    }

    /// `upstream` for calls that write to it or set its deadline, without a retain: neither calls
    /// this leg back (a failed write is reported later, from the loop), so nothing lets go of the
    /// connection during them.
    @inline(__always)
    private func withUpstream(_ body: (UpstreamConnection) -> Void) {
        upstream.map(Unmanaged.passUnretained)?._withUnsafeGuaranteedRef(body)
    }

    // MARK: Reads and endings

    /// The client's backlog drained: the upstream's response may flow again.
    @inline(__always)
    func resumeReading() {
        upstream?.stream?.startReading()
    }

    /// The exchange is over: its connection goes back to the pool (or closes, when it cannot be
    /// reused).
    @inline(__always)
    func finishExchange() {
        guard let upstream else { return }
        self.upstream = nil
        upstream.finishExchange()
    }

    /// The client ended a tunnel: what is queued for the upstream is delivered, then it closes.
    func finishTunnel() {
        upstream?.finishTunnel()
        upstream = nil
    }

    /// Gives up the upstream connection before its exchange ended (the request was rejected or
    /// timed out, the client connection closes): its state is unknown, so it is closed, not reused.
    func abandon() {
        guard let upstream else { return }
        self.upstream = nil
        upstream.reusable = false
        upstream.close()
    }
}
