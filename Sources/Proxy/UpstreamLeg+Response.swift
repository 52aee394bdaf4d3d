// The response side of a client connection's exchange: what the upstream connection reports
// (`UpstreamExchangeOwner`: head, body, chunks, end, failure, upgrade), handed to the exchange,
// and the bytes for the client it calls for, which the workspace's `ResponseRelay` writes.

import ByteBuffers
import EventLoop
import HTTP1
import HTTPClient
import Logging
import OAuth2

extension UpstreamLeg: UpstreamExchangeOwner {
    // MARK: The response (called by UpstreamConnection)

    func upstream(_ upstream: UpstreamConnection, didReceiveHead head: HTTPHead) -> HTTP1Parser.BodyExpectation {
        let connection = self.connection
        learnDPoPNonce(from: head)
        var action = connection.exchange.responseHead(head)
        if case .reportStepUp(let token, let stepUp) = action {
            action = connection.exchange.stepUpReported(stepUpOutcome(stepUp, token: token), head: head)
        }
        if case .reportRefusedToken(let token) = action {
            action = connection.exchange.refusalReported(kept: tokenRefusalKept(token), head: head)
        }
        switch action {
        case .relayInterim:
            let work = connection.work
            work.response.relayInterim(head, to: connection.stream, scratch: &work.scratch)
            return .none
        case .dropInterim:
            return .none
        case .reject(let error):
            return .reject(error)
        case .discard, .reportRefusedToken, .reportStepUp:
            return .framed
        case .respond(let framing):
            if connection.timesExchanges { connection.exchange.current.record.upstreamHeadAt = connection.worker.clock() }
            // The route owns CORS: the upstream's own fields never reach a page.
            let cors = connection.exchange.current.plan?.cors.map { rules in
                connection.exchange.current.cors.map { rules.responseLines[$0] } ?? rules.withoutOrigin
            }
            // The connection's `forwarding` holds the settings' `Via` suffix: read in place there, it
            // is not retained around the call as the settings' own would be.
            let keepAlive = connection.exchange.keepAlive, versionMinor = connection.exchange.current.request.versionMinor
            connection.withWork { work in
                work.response.holdHead(head, framing: framing, keepAlive: keepAlive, clientVersionMinor: versionMinor,
                                       viaSuffix: &connection.forwarding.viaSuffix, cors: cors)
            }
            return framing == .none ? .none : .framed
        }
    }

    /// Reports the refused token to the identity: the token is dropped at once (its successor's
    /// fetch starts while this answer drains), unless the identity keeps it
    /// (`minTokenAgeForRetrySeconds`). Returns whether it is kept.
    private func tokenRefusalKept(_ token: WorkerTokens.CachedToken) -> Bool {
        let worker = connection.worker
        guard let plan = connection.exchange.current.plan, let identity = plan.identity, let tokens = worker.tokens else { return true }
        let refusal = tokens.refused(identity, token: token, caller: connection.exchange.callerToken,
                                     minimumAge: plan.route.minTokenAgeForRetrySeconds)
        guard refusal == .kept else { return false }
        worker.logger.debug("upstream refused a token fetched after an earlier refusal; passing its answer through",
                            metadata: ["route": .string(plan.route.name), "identity": .string(identity.identity.name)])
        return true
    }

    /// Reports the upstream's step-up challenge to the identity (`TokenService.stepUp`): what it
    /// made of it. A route without the identity's tokens here treats it as any answer. Logged at
    /// info when it changed something (a step-up pending or wider, a challenge declined here
    /// the first time), at debug when it repeats one.
    private func stepUpOutcome(_ stepUp: StepUp, token: WorkerTokens.CachedToken) -> StepUpOutcome {
        let worker = connection.worker
        guard let plan = connection.exchange.current.plan, let identity = plan.identity, let tokens = worker.tokens else { return .declined }
        let (outcome, transition) = tokens.stepUp(identity, token: token, stepUp)
        let level: Logger.Level = transition ? .info : .debug
        worker.logger.log(level: level, "upstream asked for a step-up of the identity's login",
                          metadata: ["route": .string(plan.route.name), "identity": .string(identity.configured.name),
                                     "stepUp": .string(stepUp.description), "outcome": .string(outcome.code)])
        return outcome
    }

    /// The upstream read is parsed to its end (or the response ends, or becomes a tunnel): what
    /// the read carried of the response goes to the client (`HeldResponse.release`). Returns
    /// whether a response was held.
    @discardableResult @inline(__always)
    func releaseHeldResponse() -> Bool {
        let connection = self.connection
        // No workspace, no exchange under way and nothing held: the connection reads its
        // worker's blank state, which nothing may write.
        guard let workspace = connection.workspace.map(Unmanaged.passUnretained) else { return false }
        // Lent without a retain: writing to the client calls nothing back (`withWork`).
        return workspace._withUnsafeGuaranteedRef { $0.response.release(to: connection.stream, exchange: &connection.exchange) }
    }

    func upstreamDidParseRead(_ upstream: UpstreamConnection) {
        releaseHeldResponse()
    }

    /// The read that carried the response's head went wrong before its end (`HeldResponse.retract`).
    func upstreamReadOverran(_ upstream: UpstreamConnection) -> Bool {
        connection.workspace?.response.retract(exchange: &connection.exchange) ?? false
    }

    func upstream(_ upstream: UpstreamConnection, didReceiveBody bytes: UnsafeRawBufferPointer) {
        let connection = self.connection
        _ = connection.exchange.releaseHead()
        let how = connection.exchange.responseBody(bytes.count)
        guard how != .drop else { return }
        connection.withWork { work in work.response.body(bytes, as: how, to: connection.stream, scratch: &work.scratch) }
        if connection.stream.isAboveHighWater { blockUpstreamReads(upstream) }
    }

    func upstream(_ upstream: UpstreamConnection, didStartChunkOfSize size: UInt64) {
        let connection = self.connection
        guard connection.exchange.relaysChunks, size > 0 else { return }
        _ = connection.exchange.releaseHead()
        let work = connection.work
        work.response.chunkStarts(size: size, to: connection.stream, scratch: &work.scratch)
    }

    func upstreamDidFinishChunk(_ upstream: UpstreamConnection) {
        guard connection.exchange.relaysChunks else { return }
        connection.work.response.chunkEnds(to: connection.stream)
    }

    func upstreamDidFinishMessage(_ upstream: UpstreamConnection) -> Bool {
        let connection = self.connection
        _ = connection.exchange.releaseHead()
        switch connection.exchange.responseMessageEnded() {
        case .interim:
            return false
        case .refused:
            return true
        case .complete(let lastChunk):
            if lastChunk != .none {
                let work = connection.work
                work.response.lastChunk(lastChunk, trailersOf: upstream.parser.head, to: connection.stream, scratch: &work.scratch)
            }
            // A 101 stops llhttp with HPE_PAUSED_UPGRADE by itself; pausing would hide it.
            return upstream.parser.head.statusCode != 101
        }
    }

    func upstreamDidFinishResponse(_ upstream: UpstreamConnection) {
        guard upstream === self.upstream else { return }
        let connection = self.connection
        // The whole response came in the read that carried its head (the usual small answer):
        // that read's clock serves as its end, one clock read less per request.
        let endedInHeadRead = releaseHeldResponse()
        switch connection.exchange.responseFinished() {
        case .replay(let afterStepUp):
            replayWithNewToken(after: upstream, afterStepUp: afterStepUp)
        case .replayWithNonce:
            replayWithNonce(after: upstream)
        case .close(let reusable):
            if !reusable { upstream.reusable = false }
            if endedInHeadRead { connection.exchange.current.record.endedAt = connection.exchange.current.record.upstreamHeadAt }
            connection.closeAfterResponse()
        case .finish:
            if endedInHeadRead { connection.exchange.current.record.endedAt = connection.exchange.current.record.upstreamHeadAt }
            connection.finishExchangeIfDone()
            connection.drive()
        }
    }

    // MARK: The body by splice (BodySplice.swift)

    func upstream(_ upstream: UpstreamConnection, spliceSinkForBody remaining: UInt64) -> TCPStream? {
        let connection = self.connection
        guard upstream === self.upstream, let client = connection.stream as? TCPStream else { return nil }
        let facts = BodySplice.Facts(clientTLS: false, upstreamTLS: !(upstream.stream is TCPStream), remaining: remaining,
                                     relayedAsIs: connection.exchange.relaysResponseBodyAsIs,
                                     headHeld: connection.workspace?.response.isHolding ?? false,
                                     forwardProxy: connection.forwardSide != nil)
        return BodySplice(facts) == .splice ? client : nil
    }

    /// Spliced body bytes: counted as sent, and the client's backlog checked, as for bytes read.
    func upstream(_ upstream: UpstreamConnection, didSpliceBody count: Int) {
        let connection = self.connection
        _ = connection.exchange.responseBody(count)
        if connection.stream.isAboveHighWater { blockUpstreamReads(upstream) }
    }

    /// The client's write backlog is full: the upstream's response waits.
    func blockUpstreamReads(_ upstream: UpstreamConnection) {
        connection.exchange.clientBacklogFull()
        upstream.stream?.stopReading()
    }

    func upstreamDidDrain(_ upstream: UpstreamConnection) {
        connection.upstreamBacklogDrained()
    }

    func upstream(_ upstream: UpstreamConnection, didFail connectionFailure: ConnectionFailure) {
        guard upstream === self.upstream else { return }
        let connection = self.connection
        let failure = UpstreamFailure(connectionFailure)
        self.upstream = nil
        connection.workspace?.response.abandon(exchange: &connection.exchange)
        switch connection.exchange.upstreamFailed(failure, reused: upstream.isReused, receivedResponseBytes: upstream.receivedResponseBytes) {
        case .closeNow:
            connection.worker.upstreamFailed(failure, plan: connection.exchange.current.plan, settings: connection.settings, midResponse: true)
            connection.close()
        case .retryOnFreshConnection:
            guard let plan = connection.exchange.current.plan else { return }
            guard renewProofForRetry(plan) else {
                connection.finishExchangeIfDone()
                connection.drive()
                return
            }
            let fresh = connection.worker.pool(for: plan, of: connection).acquire(for: self, fresh: true)
            self.upstream = fresh
            fresh.write(connection.work.replayableHead)
            if connection.exchange.requestComplete { fresh.noteRequestSent() }
        case .answer(let problem, let close):
            connection.worker.upstreamFailed(failure, plan: connection.exchange.current.plan, settings: connection.settings, midResponse: false)
            connection.answerLocally(problem)
            if close { connection.closeAfterResponse() } else { connection.finishExchangeIfDone(); connection.drive() }
        }
    }

    // MARK: Upgrade tunnel

    func upstream(_ upstream: UpstreamConnection, didUpgradeWith bytes: UnsafeRawBufferPointer) {
        releaseHeldResponse()
        connection.exchange.tunnelStarts()
        upstream.startTunnel()
        connection.tunnelOpened(with: bytes)
    }

    func upstreamTunnel(_ upstream: UpstreamConnection, didRead bytes: UnsafeRawBufferPointer) {
        connection.stream.write(bytes)
        if connection.stream.isAboveHighWater { blockUpstreamReads(upstream) }
    }

    func upstreamTunnelDidEnd(_ upstream: UpstreamConnection) {
        upstream.close()
        self.upstream = nil
        connection.closeAfterResponse()
    }

    // MARK: The upstream refused the token

    /// The refused answer drained: its connection goes back, and the request goes out again
    /// once the identity's new token is ready (at most `tokenWaitSeconds` from now). After a
    /// step-up challenge (`afterStepUp`, logged when reported) the identity answers with its
    /// login problem until a person logs in.
    private func replayWithNewToken(after upstream: UpstreamConnection, afterStepUp: Bool) {
        upstream.finishExchange()
        self.upstream = nil
        guard let plan = connection.exchange.current.plan else { return }
        if !afterStepUp {
            connection.worker.logger.info("upstream refused the token; sending the request again with a new one",
                                          metadata: ["route": .string(plan.route.name), "identity": .string(plan.route.identity ?? "-")])
        }
        connection.requestLeg?.startTokenWait()
        connection.requestLeg?.tokenMayBeReady()
    }
}
