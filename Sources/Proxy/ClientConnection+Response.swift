// The response side of a client connection's exchange: what the upstream connection reports
// (`UpstreamExchangeOwner`: head, body, chunks, end, failure, upgrade), handed to the exchange,
// and the bytes for the client it calls for, which the workspace's `ResponseRelay` writes.

import ByteBuffers
import EventLoop
import HTTP1
import HTTPClient

extension ClientConnection: UpstreamExchangeOwner {
    // MARK: The response (called by UpstreamConnection)

    func upstream(_ upstream: UpstreamConnection, didReceiveHead head: HTTPHead) -> HTTP1Parser.BodyExpectation {
        learnDPoPNonce(from: head)
        var action = exchange.responseHead(head)
        if case .reportRefusedToken(let token) = action {
            action = exchange.refusalReported(kept: tokenRefusalKept(token), head: head)
        }
        switch action {
        case .relayInterim:
            let work = self.work
            work.response.relayInterim(head, to: stream, scratch: &work.scratch)
            return .none
        case .dropInterim:
            return .none
        case .reject(let error):
            return .reject(error)
        case .discard, .reportRefusedToken:
            return .framed
        case .respond(let framing):
            if timesExchanges { exchange.current.record.upstreamHeadAt = worker.clock() }
            // The route owns CORS: the upstream's own fields never reach a page.
            let cors = exchange.current.plan?.cors.map { rules in exchange.current.cors.map { rules.responseLines[$0] } ?? rules.withoutOrigin }
            work.response.holdHead(head, framing: framing, keepAlive: exchange.keepAlive,
                                   clientVersionMinor: exchange.current.request.versionMinor, viaSuffix: settings.viaSuffix, cors: cors)
            return framing == .none ? .none : .framed
        }
    }

    /// Reports the refused token to the identity: the token is dropped at once (its successor's
    /// fetch starts while this answer drains), unless the identity keeps it
    /// (`minTokenAgeForRetrySeconds`). Returns whether it is kept.
    private func tokenRefusalKept(_ token: WorkerTokens.CachedToken) -> Bool {
        guard let plan = exchange.current.plan, let identity = plan.identity, let tokens = worker.tokens else { return true }
        let refusal = tokens.refused(identity, token: token, minimumAge: plan.route.minTokenAgeForRetrySeconds)
        guard refusal == .kept else { return false }
        worker.logger.debug("upstream refused a token fetched after an earlier refusal; passing its answer through",
                            metadata: ["route": .string(plan.route.name), "identity": .string(identity.identity.name)])
        return true
    }

    /// The upstream read is parsed to its end (or the response ends, or becomes a tunnel): what
    /// the read carried of the response goes to the client (`HeldResponse.release`). Returns
    /// whether a response was held.
    @discardableResult @inline(__always)
    func releaseHeldResponse() -> Bool {
        // No workspace, nothing held; the exchange's head still counts as sent.
        guard let workspace else {
            _ = exchange.releaseHead()
            return false
        }
        return workspace.response.release(to: stream, exchange: &exchange)
    }

    /// The read that carried the response's head went wrong before its end (`HeldResponse.retract`).
    func retractHeldResponse() -> Bool {
        workspace?.response.retract(exchange: &exchange) ?? false
    }

    func upstreamDidParseRead(_ upstream: UpstreamConnection) {
        releaseHeldResponse()
    }

    func upstreamReadOverran(_ upstream: UpstreamConnection) -> Bool {
        retractHeldResponse()
    }

    func upstream(_ upstream: UpstreamConnection, didReceiveBody bytes: UnsafeRawBufferPointer) {
        _ = exchange.releaseHead()
        let how = exchange.responseBody(bytes.count)
        guard how != .drop else { return }
        let work = self.work
        work.response.body(bytes, as: how, to: stream, scratch: &work.scratch)
        if stream.isAboveHighWater { blockUpstreamReads(upstream) }
    }

    func upstream(_ upstream: UpstreamConnection, didStartChunkOfSize size: UInt64) {
        guard exchange.relaysChunks, size > 0 else { return }
        _ = exchange.releaseHead()
        let work = self.work
        work.response.chunkStarts(size: size, to: stream, scratch: &work.scratch)
    }

    func upstreamDidFinishChunk(_ upstream: UpstreamConnection) {
        guard exchange.relaysChunks else { return }
        work.response.chunkEnds(to: stream)
    }

    func upstreamDidFinishMessage(_ upstream: UpstreamConnection) -> Bool {
        _ = exchange.releaseHead()
        switch exchange.responseMessageEnded() {
        case .interim:
            return false
        case .refused:
            return true
        case .complete(let lastChunk):
            if lastChunk != .none {
                let work = self.work
                work.response.lastChunk(lastChunk, trailersOf: upstream.parser.head, to: stream, scratch: &work.scratch)
            }
            // A 101 stops llhttp with HPE_PAUSED_UPGRADE by itself; pausing would hide it.
            return upstream.parser.head.statusCode != 101
        }
    }

    func upstreamDidFinishResponse(_ upstream: UpstreamConnection) {
        guard upstream === self.upstream else { return }
        // The whole response came in the read that carried its head (the usual small answer):
        // that read's clock serves as its end, one clock read less per request.
        let endedInHeadRead = releaseHeldResponse()
        switch exchange.responseFinished() {
        case .replay:
            replayWithNewToken(after: upstream)
        case .replayWithNonce:
            replayWithNonce(after: upstream)
        case .close(let reusable):
            if !reusable { upstream.reusable = false }
            if endedInHeadRead { exchange.current.record.endedAt = exchange.current.record.upstreamHeadAt }
            closeAfterResponse()
        case .finish:
            if endedInHeadRead { exchange.current.record.endedAt = exchange.current.record.upstreamHeadAt }
            finishExchangeIfDone()
            drive()
        }
    }

    func blockUpstreamReads(_ upstream: UpstreamConnection) {
        exchange.clientBacklogFull()
        upstream.stream?.stopReading()
    }

    func streamDidDrain(_ stream: any ByteStream) {
        guard exchange.clientBacklogDrained() else { return }
        upstream?.stream?.startReading()
    }

    func upstream(_ upstream: UpstreamConnection, didFail connectionFailure: ConnectionFailure) {
        guard upstream === self.upstream else { return }
        let failure = UpstreamFailure(connectionFailure)
        self.upstream = nil
        workspace?.response.abandon(exchange: &exchange)
        switch exchange.upstreamFailed(failure, reused: upstream.isReused, receivedResponseBytes: upstream.receivedResponseBytes) {
        case .closeNow:
            worker.upstreamFailed(failure, plan: exchange.current.plan, settings: settings, midResponse: true)
            close()
        case .retryOnFreshConnection:
            guard let plan = exchange.current.plan else { return }
            guard renewProofForRetry(plan) else {
                finishExchangeIfDone()
                drive()
                return
            }
            let fresh = worker.pool(for: plan, of: settings).acquire(for: self, fresh: true)
            self.upstream = fresh
            fresh.write(work.replayableHead)
            if exchange.requestComplete { fresh.noteRequestSent() }
        case .answer(let problem, let close):
            worker.upstreamFailed(failure, plan: exchange.current.plan, settings: settings, midResponse: false)
            answerLocally(problem)
            if close { closeAfterResponse() } else { finishExchangeIfDone(); drive() }
        }
    }

    // MARK: Upgrade tunnel

    func upstream(_ upstream: UpstreamConnection, didUpgradeWith bytes: UnsafeRawBufferPointer) {
        releaseHeldResponse()
        exchange.tunnelStarts()
        upstream.startTunnel()
        timer.disarm()
        recordExchange()
        if bytes.count > 0 { stream.write(bytes) }
        if let work = workspace, !work.leftover.isEmpty {
            upstream.write(work.leftover)
            work.leftover.clear()
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

    // MARK: The upstream refused the token

    /// The refused answer drained: its connection goes back, and the request goes out again
    /// once the identity's new token is ready (at most `tokenWaitSeconds` from now).
    private func replayWithNewToken(after upstream: UpstreamConnection) {
        upstream.finishExchange()
        self.upstream = nil
        guard let plan = exchange.current.plan else { return }
        worker.logger.info("upstream refused the token; sending the request again with a new one",
                           metadata: ["route": .string(plan.route.name), "identity": .string(plan.route.identity ?? "-")])
        startTokenWait()
        tokenMayBeReady()
    }
}
