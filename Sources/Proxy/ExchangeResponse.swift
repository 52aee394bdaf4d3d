// ExchangeResponse: the response half of an exchange, with no socket. It holds how far the
// upstream's answer got to the client (awaited, interim, refused, held, streaming, complete, or
// answered by the relay itself), how that answer's body is framed for the client, and the two
// limits that bound it (interim answers, the one nonce replay, the one retry). Its decisions take what they need
// of the request as arguments and answer with small enums: the head's classification (interim,
// a refused token, a DPoP nonce challenge, an unasked-for 101, the framing), releasing the held
// head, how body bytes go out, how the message and the response end, and the retry on a fresh
// connection after a failure.
//
// `Exchange` holds it in `current` and forwards the connection's events here
// (Exchange+Response.swift); what a head changes outside it (the status recorded, whether the
// connection stays open) comes in as `inout` arguments, and the token awaited for a replay is
// set by `Exchange`.

import HTTP1
import OAuth2

struct ExchangeResponse {
    /// How far the response got.
    enum Progress: Equatable {
        /// Nothing relayed yet (or only interim responses).
        case awaited
        /// An interim (1xx) response is being parsed.
        case interim
        /// A `retryOnStatus` answer to a refused token, dropped for a replay.
        case refused
        /// A 401 asking for a DPoP nonce (`use_dpop_nonce`), dropped: the request goes again with
        /// the same token and a proof carrying the nonce that answer brought.
        case nonceChallenged
        /// A step-up challenge to a person's token for which a login is now needed, dropped: the
        /// identity is asked again once it drained, and answers with the login problem.
        case steppedUp
        /// The head is written but held back until body bytes follow or the upstream read that
        /// carried it is fully parsed: bad framing right behind it then still becomes a clean 502.
        case held(Body)
        /// The head went to the client; the body follows.
        case streaming(Body)
        /// The upstream's response went to the client whole; `closeDelimited`: its body ended
        /// with the connection (an HTTP/1.0 client without a length), which then closes.
        case complete(closeDelimited: Bool)
        /// The relay answered itself (404, 400, 502, ...); request body bytes are discarded.
        case answeredLocally
    }

    /// The response body as the client gets it.
    struct Body: Equatable {
        var framing: ForwardedHead.Framing
        /// The upstream's body was chunked (its chunks are relayed; otherwise the relay chunks).
        var upstreamChunked: Bool
    }

    // The narrow fields come first, then the wide ones: Swift lays fields out in the order
    // written, and every connection holds this state (an idle one too).
    var progress = Progress.awaited
    /// The request went again after an upstream's `use_dpop_nonce` answer (once per request).
    var dpopNonceReplayed = false
    /// The request went again on a fresh connection after a reused one turned out closed.
    var retriedOnFreshConnection = false
    var interimResponses = 0
    /// The nonce that `use_dpop_nonce` answer asked for: the replay's proof carries it, whatever
    /// the shared nonce holds by then (another worker may have moved it to a nonce this upstream,
    /// or this backend of it, does not take).
    var dpopChallengeNonce: [UInt8]?

    // MARK: The head

    /// What to do with a response head from the upstream.
    enum HeadAction {
        /// An interim response: relay it to the client (an HTTP/1.1 one) and parse on.
        case relayInterim
        /// An interim response an HTTP/1.0 client would not understand (RFC 9110 §15.2): drop it.
        case dropInterim
        /// The upstream misbehaves: fail the exchange with this error (502).
        case reject(HTTP1Error)
        /// A `retryOnStatus` answer to this token: report the token refused (`tokenRefusal`
        /// says what the identity decided), then `refusalReported(kept:)`.
        case reportRefusedToken(WorkerTokens.CachedToken)
        /// A 401 or 403 to a person's token that asks for a step-up (more scope, a stronger or
        /// fresher login): report it to the identity, then `stepUpReported(_:token:head:...)`.
        case reportStepUp(WorkerTokens.CachedToken, StepUp)
        /// Drop this response: the request goes out again with a new token once it has drained.
        case discard
        /// Write the head for the client (held until its body follows) with this framing and
        /// `keepAlive`; `.none`: no body follows.
        case respond(ForwardedHead.Framing)
    }

    /// Interim responses relayed per request before the upstream counts as misbehaving (a 1xx
    /// flood would otherwise keep the exchange, and the client, busy forever).
    static let maxInterimResponses = 16

    /// Classifies the upstream's `head` to `request`, which carries `credential`; `plan`: its
    /// route, whose `retryOnStatus` names the answers that refuse a token.
    /// A head that goes to the client sets `status` and maybe `keepAlive` (`respond`).
    @inline(__always)
    mutating func head(_ head: HTTPHead, to request: borrowing ExchangeRequest, credential: RequestCredential, plan: RoutePlan?,
                       status recorded: inout Int, keepAlive: inout Bool) -> HeadAction {
        let status = head.statusCode
        if status >= 100 && status < 200 && status != 101 {
            interimResponses += 1
            if interimResponses > Self.maxInterimResponses {
                return .reject(HTTP1Error(.malformed, "more than \(Self.maxInterimResponses) interim (1xx) responses"))
            }
            progress = .interim
            return request.versionMinor >= 1 ? .relayInterim : .dropInterim
        }
        if status == 101 && request.upgrade == nil {
            // The relay asked for no protocol switch (it removed the client's `Upgrade`): a
            // tunnel now would carry requests this route never saw.
            return .reject(HTTP1Error(.malformed, "101 Switching Protocols to a request that asked for no upgrade"))
        }
        // Before the refusal check: a nonce challenge is no refusal, the token stays. One that
        // cannot be answered with a replay (a nonce replay happened already) goes to the client
        // as it is.
        if status == 401 && credential.injected?.dpop != nil && DPoPChallenge.asksForNonce(head) {
            guard !dpopNonceReplayed && request.isResendable else {
                return respond(to: head, of: request, status: &recorded, keepAlive: &keepAlive)
            }
            dpopNonceReplayed = true
            dpopChallengeNonce = DPoPChallenge.nonce(in: head).map { Array($0) }
            progress = .nonceChallenged
            return .discard
        }
        // A step-up challenge to a person's token: no refused token, a login is needed. Only
        // 401 and 403 on a route of such an identity read the challenge.
        if status == 401 || status == 403, let plan, plan.stepsUp, let token = credential.injected,
           let stepUp = StepUpChallenge.stepUp(in: head, sentAsDPoP: token.dpop != nil) {
            return .reportStepUp(token, stepUp)
        }
        return refusalOrResponse(head, of: request, credential: credential, plan: plan, status: &recorded, keepAlive: &keepAlive)
    }

    /// A `retryOnStatus` answer (401 by default) to a request that carried a token, that was
    /// not replayed yet and can be sent again, reports the token refused; any other head goes
    /// to the client.
    @inline(__always)
    private mutating func refusalOrResponse(_ head: HTTPHead, of request: borrowing ExchangeRequest, credential: RequestCredential,
                                            plan: RoutePlan?, status recorded: inout Int, keepAlive: inout Bool) -> HeadAction {
        let status = head.statusCode
        // Cheapest first: this runs for every response on a route with an identity.
        if status >= 400, case .carried(let token) = credential, request.isResendable, let plan,
           plan.route.retryOnStatus.contains(status) {
            return .reportRefusedToken(token)
        }
        return respond(to: head, of: request, status: &recorded, keepAlive: &keepAlive)
    }

    /// What the identity made of a step-up challenge (`TokenService.stepUp`): a login is needed,
    /// so the answer is dropped and the request, once it drained, gets the identity's login
    /// problem (as for a first login; a request that cannot be sent again gets the upstream's
    /// answer, and the next one the problem); declined before, so the answer goes to the client;
    /// or granted already, so it is an answer like any other (a `retryOnStatus` refusal).
    mutating func stepUpReported(_ outcome: StepUpOutcome, head: HTTPHead, of request: borrowing ExchangeRequest,
                                 credential: RequestCredential, plan: RoutePlan?, status recorded: inout Int,
                                 keepAlive: inout Bool) -> HeadAction {
        switch outcome {
        case .loginNeeded where request.isResendable:
            progress = .steppedUp
            return .discard
        case .loginNeeded, .declined:
            return respond(to: head, of: request, status: &recorded, keepAlive: &keepAlive)
        case .alreadyGranted:
            return refusalOrResponse(head, of: request, credential: credential, plan: plan, status: &recorded, keepAlive: &keepAlive)
        }
    }

    /// The identity's decision on a refused token: unless it keeps the token
    /// (`minTokenAgeForRetrySeconds`: the token was itself fetched after a refusal, a short
    /// while ago), the answer is dropped and the request replayed; otherwise it goes to the client.
    mutating func refusalReported(kept: Bool, head: HTTPHead, of request: borrowing ExchangeRequest, status recorded: inout Int,
                                  keepAlive: inout Bool) -> HeadAction {
        guard !kept else { return respond(to: head, of: request, status: &recorded, keepAlive: &keepAlive) }
        progress = .refused
        return .discard
    }

    /// The head goes to the client: its body's framing as the client gets it. Its status is
    /// recorded; one that arrives before the whole request did ends the connection after it
    /// (the rest of that request cannot be told from a next one), as does a close-delimited one.
    @inline(__always)
    private mutating func respond(to head: HTTPHead, of request: borrowing ExchangeRequest, status recorded: inout Int,
                                  keepAlive: inout Bool) -> HeadAction {
        let status = head.statusCode
        recorded = status
        let framing: ForwardedHead.Framing
        if request.isHead || status == 204 || status == 304 || status == 101 {
            framing = .none
        } else if head.contentLength != nil {
            framing = .contentLength
        } else if request.versionMinor >= 1 {
            framing = .chunked
        } else {
            framing = .close
        }
        if framing == .close || request.upload == .pending { keepAlive = false }
        progress = .held(Body(framing: framing, upstreamChunked: head.isChunked))
        return .respond(framing)
    }

    // MARK: The body

    /// Sends the held head: returns whether there was one to send.
    mutating func releaseHead() -> Bool {
        guard case .held(let body) = progress else { return false }
        progress = .streaming(body)
        return true
    }

    /// How response body bytes go to the client.
    enum Bytes {
        case drop
        case write
        /// Inside a chunk of the relay's own (the upstream delimited its body by closing).
        case writeAsChunk
    }

    /// `count` response body bytes arrived (after `releaseHead`); those written are added to `sent`.
    mutating func body(_ count: Int, sent: inout Int) -> Bytes {
        guard case .streaming(let body) = progress else { return .drop }
        sent += count
        return body.framing == .chunked && !body.upstreamChunked ? .writeAsChunk : .write
    }

    /// The client's body is chunked: the upstream's chunk boundaries are written anew.
    /// Body bytes go to the client now, unchanged (`body` would answer `.write` for a body
    /// framed by Content-Length).
    var relaysBodyAsIs: Bool {
        guard case .streaming(let body) = progress else { return false }
        return body.framing == .contentLength
    }

    var relaysChunks: Bool {
        switch progress {
        case .held(let body), .streaming(let body): return body.framing == .chunked
        default: return false
        }
    }

    // MARK: The end

    /// How a response message ended, as the upstream's parser reports it.
    enum End {
        /// An interim response: the final one follows (the parser goes on).
        case interim
        /// The refused (or nonce-challenged) answer drained (the parser stops; the replay follows).
        case refused
        /// The response is complete; for a chunked one, the client gets its last chunk.
        case complete(LastChunk)
    }

    enum LastChunk { case none, upstreamTrailers, empty }

    /// The upstream's message ended (called after `releaseHead`).
    mutating func messageEnded() -> End {
        switch progress {
        case .interim:
            progress = .awaited
            return .interim
        case .refused, .nonceChallenged, .steppedUp:
            return .refused
        case .streaming(let body), .held(let body):
            progress = .complete(closeDelimited: body.framing == .close)
            guard body.framing == .chunked else { return .complete(.none) }
            return .complete(body.upstreamChunked ? .upstreamTrailers : .empty)
        case .awaited, .complete, .answeredLocally:
            progress = .complete(closeDelimited: false)
            return .complete(.none)
        }
    }

    /// What to do when the upstream's read that completed its response is fully parsed.
    enum Finish {
        /// The refused answer drained: release the upstream connection and wait for a new
        /// token (`tokenMayBeReady`), then send the request again. `afterStepUp`: the answer
        /// asked for a step-up, and the identity answers with its login problem.
        case replay(afterStepUp: Bool)
        /// The nonce challenge drained: release the upstream connection and send the request
        /// again at once, with the same token and a proof carrying the new nonce.
        case replayWithNonce
        /// The connection ends after the response; `upstreamReusable`: the upstream
        /// connection may go back to its pool.
        case close(upstreamReusable: Bool)
        /// The exchange may be over (`finishIfDone`), and the next pipelined request may start.
        case finish
    }

    /// The read that completed the response is parsed; `requestComplete`: the whole request
    /// arrived from the client.
    @inline(__always)
    mutating func finished(requestComplete: Bool) -> Finish {
        if progress == .refused || progress == .steppedUp {
            defer { progress = .awaited }
            return .replay(afterStepUp: progress == .steppedUp)
        }
        if progress == .nonceChallenged {
            progress = .awaited
            return .replayWithNonce
        }
        if progress == .complete(closeDelimited: true) { return .close(upstreamReusable: true) }
        // The upstream answered without reading the whole request; the rest of it would be
        // mistaken for a next request, so the connection ends here.
        if !requestComplete { return .close(upstreamReusable: false) }
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

    /// Whether the request goes once more on a fresh connection: nothing of the response came
    /// on a `reused` connection that the upstream had closed, and the request has no body (it
    /// was not kept). Once per request.
    mutating func retriesOnFreshConnection(after failure: UpstreamFailure, reused: Bool, receivedResponseBytes: Bool,
                                           requestHasBody: Bool) -> Bool {
        guard failure.allowsRetryOnFreshConnection && reused && !receivedResponseBytes && !retriedOnFreshConnection
                && !requestHasBody else { return false }
        retriedOnFreshConnection = true
        return true
    }

    /// Nothing of the response reached the client: a head held back is forgotten, and a failure
    /// is answered as if no response had come.
    mutating func withdrawHeldHead() {
        if case .held = progress { progress = .awaited }
    }

    /// Bytes of the upstream's response reached the client.
    var headSent: Bool {
        switch progress {
        case .streaming, .complete: return true
        default: return false
        }
    }

    /// The client has its whole answer (the upstream's, or the relay's).
    var isComplete: Bool {
        switch progress {
        case .complete, .answeredLocally: return true
        default: return false
        }
    }
}
