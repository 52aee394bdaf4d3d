// The response side of a client connection's exchange: what the upstream connection reports
// (head, body, chunks, end, failure, upgrade), turned into bytes for the client.

import ByteBuffers
import EventLoop
import HTTP1

extension ClientConnection {
    // MARK: The response (called by UpstreamConnection)

    func upstream(_ upstream: UpstreamConnection, didReceiveHead head: HTTPHead) -> HTTP1Parser.BodyExpectation {
        let status = head.statusCode
        if status >= 100 && status < 200 && status != 101 {
            exchange.interimResponses += 1
            if exchange.interimResponses > Self.maxInterimResponses {
                return .reject(HTTP1Error(.malformed, "more than \(Self.maxInterimResponses) interim (1xx) responses"))
            }
            exchange.interim = true
            // HTTP/1.0 clients do not understand interim responses (RFC 9110 §15.2).
            if exchange.clientVersionMinor >= 1 {
                scratch.clear()
                ForwardedHead.writeInterim(head, into: &scratch)
                stream.write(scratch)
            }
            return .none
        }
        if status == 101 && exchange.upgrade == nil {
            // The relay asked for no protocol switch (it removed the client's `Upgrade`): a
            // tunnel now would carry requests this route never saw.
            return .reject(HTTP1Error(.malformed, "101 Switching Protocols to a request that asked for no upgrade"))
        }
        if shouldReplayWithNewToken(status: status) {
            exchange.discardingRefusedResponse = true
            return .framed
        }
        exchange.status = status
        if timesExchanges { exchange.upstreamHeadAt = worker.clock() }
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

    /// Interim responses relayed per request before the upstream counts as misbehaving (a 1xx
    /// flood would otherwise keep the exchange, and the client, busy forever).
    static let maxInterimResponses = 16

    /// Sends the held response head, once.
    func releaseResponseHead() {
        guard !heldResponseHead.isEmpty else { return }
        exchange.responseHeadSent = true
        stream.write(heldResponseHead)
        heldResponseHead.clear()
    }

    func upstream(_ upstream: UpstreamConnection, didReceiveBody bytes: UnsafeRawBufferPointer) {
        if exchange.discardingRefusedResponse { return }
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
        guard exchange.responseFraming == .chunked, size > 0, !exchange.discardingRefusedResponse else { return }
        releaseResponseHead()
        scratch.clear()
        scratch.appendHex(size)
        scratch.append("\r\n")
        stream.write(scratch)
    }

    func upstreamDidFinishChunk(_ upstream: UpstreamConnection) {
        guard exchange.responseFraming == .chunked, !exchange.discardingRefusedResponse else { return }
        stream.write(staticBytes("\r\n"))
    }

    func upstreamDidFinishMessage(_ upstream: UpstreamConnection) -> Bool {
        if exchange.interim {
            exchange.interim = false
            return false
        }
        if exchange.discardingRefusedResponse { return true }
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
        if exchange.discardingRefusedResponse {
            replayWithNewToken(after: upstream)
            return
        }
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

    func blockUpstreamReads(_ upstream: UpstreamConnection) {
        upstreamReadsBlockedByClient = true
        upstream.stream?.stopReading()
    }

    func streamDidDrain(_ stream: any ByteStream) {
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
            worker.upstreamFailed(failure, plan: plan, settings: settings, midResponse: true)
            close()
            return
        }
        if failure.allowsRetryOnFreshConnection && upstream.isReused && !upstream.receivedResponseBytes
            && !exchange.retried && !exchange.hasRequestBody, let plan {
            exchange.retried = true
            let fresh = worker.pool(for: plan, of: settings).acquire(for: self, fresh: true)
            self.upstream = fresh
            fresh.write(replayableHead)
            if exchange.requestDone { fresh.noteRequestSent() }
            return
        }
        worker.upstreamFailed(failure, plan: plan, settings: settings, midResponse: false)
        let problem = Problem.upstreamFailure(failure, route: plan?.route.name)
        answerLocally(problem)
        if !exchange.requestDone { closeAfterResponse() } else { finishExchangeIfDone(); drive() }
    }

    // MARK: Upgrade tunnel

    func upstream(_ upstream: UpstreamConnection, didUpgradeWith bytes: UnsafeRawBufferPointer) {
        releaseResponseHead()
        phase = .tunnelling
        upstream.startTunnel()
        timer?.disarm()
        recordExchange()
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

    // MARK: The upstream refused the token

    /// A `retryOnStatus` answer (401 by default) to a request that carried a token, that was
    /// not replayed yet and can be sent again (no body, or one kept within the replay limit):
    /// the token is reported refused at once (its successor's fetch starts while this answer
    /// drains), and unless the identity keeps it (`minTokenAgeForRetrySeconds`) the request
    /// goes out once more with a new one, instead of the answer going to the client.
    private func shouldReplayWithNewToken(status: Int) -> Bool {
        // Cheapest first: this runs for every response on a route with an identity.
        guard status >= 400, exchange.token != nil, !exchange.replayedWithNewToken, exchange.requestDone,
              !exchange.hasRequestBody || exchange.bodyReplayable, let plan, plan.route.retryOnStatus.contains(status),
              let token = exchange.token, let identity = plan.identity, let tokens = worker.tokens else { return false }
        let refusal = tokens.refused(identity, token: token, minimumAge: plan.route.minTokenAgeForRetrySeconds)
        if refusal == .kept {
            worker.logger.debug("upstream refused a token fetched after an earlier refusal; passing its answer through",
                                metadata: ["route": .string(plan.route.name), "identity": .string(identity.identity.name)])
            return false
        }
        return true
    }

    private func replayWithNewToken(after upstream: UpstreamConnection) {
        exchange.discardingRefusedResponse = false
        exchange.replayedWithNewToken = true
        upstream.finishExchange()
        self.upstream = nil
        guard let plan else { return }
        worker.logger.info("upstream refused the token; sending the request again with a new one",
                           metadata: ["route": .string(plan.route.name), "identity": .string(plan.route.identity ?? "-")])
        exchange.token = nil
        startTokenWait()
        tokenMayBeReady()
    }
}
