// The response side of an exchange: the upstream's head (interim, refused token, DPoP nonce
// challenge, upgrade, framing), its body, its end, its failure, and the replays after a refused
// token or a nonce challenge.

import HTTP1

extension Exchange {
    /// What to do with a response head from the upstream.
    enum ResponseHeadAction {
        /// An interim response: relay it to the client (an HTTP/1.1 one) and parse on.
        case relayInterim
        /// An interim response an HTTP/1.0 client would not understand (RFC 9110 §15.2): drop it.
        case dropInterim
        /// The upstream misbehaves: fail the exchange with this error (502).
        case reject(HTTP1Error)
        /// A `retryOnStatus` answer to this token: report the token refused (`tokenRefusal`
        /// says what the identity decided), then `refusalReported(kept:)`.
        case reportRefusedToken(WorkerTokens.CachedToken)
        /// Drop this response: the request goes out again with a new token once it has drained.
        case discard
        /// Write the head for the client (held until its body follows) with this framing and
        /// `keepAlive`; `.none`: no body follows.
        case respond(ForwardedHead.Framing)
    }

    /// Interim responses relayed per request before the upstream counts as misbehaving (a 1xx
    /// flood would otherwise keep the exchange, and the client, busy forever).
    static let maxInterimResponses = 16

    @inline(__always)
    mutating func responseHead(_ head: HTTPHead) -> ResponseHeadAction {
        let status = head.statusCode
        if status >= 100 && status < 200 && status != 101 {
            current.interimResponses += 1
            if current.interimResponses > Self.maxInterimResponses {
                return .reject(HTTP1Error(.malformed, "more than \(Self.maxInterimResponses) interim (1xx) responses"))
            }
            current.response = .interim
            return current.request.versionMinor >= 1 ? .relayInterim : .dropInterim
        }
        if status == 101 && current.request.upgrade == nil {
            // The relay asked for no protocol switch (it removed the client's `Upgrade`): a
            // tunnel now would carry requests this route never saw.
            return .reject(HTTP1Error(.malformed, "101 Switching Protocols to a request that asked for no upgrade"))
        }
        // Before the refusal check: a nonce challenge is no refusal, the token stays. One that
        // cannot be answered with a replay goes to the client as it is.
        if status == 401 && token?.dpop != nil && DPoPChallenge.asksForNonce(head) {
            guard canReplayForNonce else { return respond(to: head) }
            current.dpopNonceReplayed = true
            current.response = .nonceChallenged
            return .discard
        }
        if let token = refusedToken(status: status) { return .reportRefusedToken(token) }
        return respond(to: head)
    }

    /// Whether a `use_dpop_nonce` 401 is answered with a replay: the request was not replayed for
    /// a nonce yet, and can be sent again (complete, and no body or one kept within the replay
    /// limit).
    private var canReplayForNonce: Bool {
        !current.dpopNonceReplayed && current.upload == .complete && current.bodyReplay != .impossible
    }

    /// The identity's decision on a refused token: unless it keeps the token
    /// (`minTokenAgeForRetrySeconds`: the token was itself fetched after a refusal, a short
    /// while ago), the answer is dropped and the request replayed; otherwise it goes to the client.
    mutating func refusalReported(kept: Bool, head: HTTPHead) -> ResponseHeadAction {
        guard !kept else { return respond(to: head) }
        current.response = .refused
        return .discard
    }

    /// A `retryOnStatus` answer (401 by default) to a request that carried a token, that was
    /// not replayed yet and can be sent again (no body, or one kept within the replay limit).
    private func refusedToken(status: Int) -> WorkerTokens.CachedToken? {
        // Cheapest first: this runs for every response on a route with an identity.
        guard status >= 400, case .carried(let token) = current.credential, current.upload == .complete,
              current.bodyReplay != .impossible, let plan = current.plan, plan.route.retryOnStatus.contains(status) else { return nil }
        return token
    }

    @inline(__always)
    private mutating func respond(to head: HTTPHead) -> ResponseHeadAction {
        let status = head.statusCode
        current.record.status = status
        let framing: ForwardedHead.Framing
        if current.request.isHead || status == 204 || status == 304 || status == 101 {
            framing = .none
        } else if head.contentLength != nil {
            framing = .contentLength
        } else if current.request.versionMinor >= 1 {
            framing = .chunked
        } else {
            framing = .close
        }
        // A response that arrives before the whole request did ends the connection after it:
        // the rest of that request cannot be told from a next one.
        if framing == .close || current.upload == .pending { keepAlive = false }
        current.response = .held(ResponseBody(framing: framing, upstreamChunked: head.isChunked))
        return .respond(framing)
    }

    // MARK: The response body

    /// Sends the held head: returns whether there was one to send.
    mutating func releaseHead() -> Bool {
        guard case .held(let body) = current.response else { return false }
        current.response = .streaming(body)
        return true
    }

    /// How response body bytes go to the client.
    enum ResponseBytes {
        case drop
        case write
        /// Inside a chunk of the relay's own (the upstream delimited its body by closing).
        case writeAsChunk
    }

    /// `count` response body bytes arrived (after `releaseHead`).
    mutating func responseBody(_ count: Int) -> ResponseBytes {
        guard case .streaming(let body) = current.response else { return .drop }
        current.record.bodyBytesSent += count
        return body.framing == .chunked && !body.upstreamChunked ? .writeAsChunk : .write
    }

    /// The client's body is chunked: the upstream's chunk boundaries are written anew.
    var relaysChunks: Bool {
        switch current.response {
        case .held(let body), .streaming(let body): return body.framing == .chunked
        default: return false
        }
    }

    /// How a response message ended, as the upstream's parser reports it.
    enum ResponseEnd {
        /// An interim response: the final one follows (the parser goes on).
        case interim
        /// The refused (or nonce-challenged) answer drained (the parser stops; the replay follows).
        case refused
        /// The response is complete; for a chunked one, the client gets its last chunk.
        case complete(LastChunk)
    }

    enum LastChunk { case none, upstreamTrailers, empty }

    /// The upstream's message ended (called after `releaseHead`).
    mutating func responseMessageEnded() -> ResponseEnd {
        switch current.response {
        case .interim:
            current.response = .awaited
            return .interim
        case .refused, .nonceChallenged:
            return .refused
        case .streaming(let body), .held(let body):
            current.response = .complete(closeDelimited: body.framing == .close)
            guard body.framing == .chunked else { return .complete(.none) }
            return .complete(body.upstreamChunked ? .upstreamTrailers : .empty)
        case .awaited, .complete, .answeredLocally:
            current.response = .complete(closeDelimited: false)
            return .complete(.none)
        }
    }

    /// What to do when the upstream's read that completed its response is fully parsed.
    enum ResponseFinish {
        /// The refused answer drained: release the upstream connection and wait for a new
        /// token (`tokenMayBeReady`), then send the request again.
        case replay
        /// The nonce challenge drained: release the upstream connection and send the request
        /// again at once, with the same token and a proof carrying the new nonce.
        case replayWithNonce
        /// The connection ends after the response; `upstreamReusable`: the upstream
        /// connection may go back to its pool.
        case close(upstreamReusable: Bool)
        /// The exchange may be over (`finishIfDone`), and the next pipelined request may start.
        case finish
    }

    @inline(__always)
    mutating func responseFinished() -> ResponseFinish {
        if current.response == .refused {
            current.response = .awaited
            current.credential = .waiting(.beforeReplay)
            return .replay
        }
        if current.response == .nonceChallenged {
            current.response = .awaited
            return .replayWithNonce
        }
        if current.response == .complete(closeDelimited: true) { return .close(upstreamReusable: true) }
        // The upstream answered without reading the whole request; the rest of it would be
        // mistaken for a next request, so the connection ends here.
        if current.upload == .pending { return .close(upstreamReusable: false) }
        return .finish
    }

    // MARK: Failures

    /// What to do when the upstream failed before the response was complete.
    enum FailureAction {
        /// Part of the response is out: the client can only learn of the failure by the close.
        case closeNow
        /// Nothing of the response arrived on a reused connection the upstream had closed: send
        /// the request (it has no body) once more on a fresh one.
        case retryOnFreshConnection
        /// Answer the problem (502/504, or 503 `upstream-busy` when the wait for a connection
        /// slot under `maxUpstreamConnections` expired); `close`: the request is not complete,
        /// so the connection ends after the answer.
        case answer(Problem, close: Bool)
    }

    mutating func upstreamFailed(_ failure: UpstreamFailure, reused: Bool, receivedResponseBytes: Bool) -> FailureAction {
        if responseHeadSent { return .closeNow }
        if case .held = current.response { current.response = .awaited }
        if failure.allowsRetryOnFreshConnection && reused && !receivedResponseBytes && !current.retriedOnFreshConnection
            && !current.request.hasBody && current.plan != nil {
            current.retriedOnFreshConnection = true
            return .retryOnFreshConnection
        }
        return .answer(answeringLocally(.upstreamFailure(failure, route: current.plan?.route.name)), close: current.upload == .pending)
    }

    /// Nothing of the response reached the client after all: the connection held what the
    /// upstream read carried, and that read went wrong before its end. A failure now is answered.
    mutating func responseRetracted() {
        current.response = .awaited
    }

    /// Bytes of the upstream's response reached the client.
    var responseHeadSent: Bool {
        switch current.response {
        case .streaming, .complete: return true
        default: return false
        }
    }

    /// The client has its whole answer (the upstream's, or the relay's).
    var responseComplete: Bool {
        switch current.response {
        case .complete, .answeredLocally: return true
        default: return false
        }
    }

    // MARK: Upgrade

    /// The upstream switched protocols: from now on bytes pass both ways unparsed.
    mutating func tunnelStarts() {
        phase = .tunnelling
        current.bodyClock = nil
    }
}
