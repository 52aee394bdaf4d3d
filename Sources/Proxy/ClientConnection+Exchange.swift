extension ClientConnection {
    /// What the connection knows of the request and response under way; reset for each request.
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
        var interimResponses = 0
        var retried = false
        /// The token injected into this request (for invalidation after an upstream 401).
        var token: WorkerTokens.CachedToken?
        /// Parked until the identity's token fetch ends (at most `tokenWaitSeconds`).
        var waitingForToken = false
        /// The `Upgrade` value forwarded (the protocols the route allows), nil for none: an
        /// upstream's 101 is accepted only when there is one.
        var upgrade: [UInt8]?
        /// When the request body's deadline was last started (loop milliseconds; 0: not
        /// running), and the body bytes received since, each of which extends it.
        var bodyClockStartedAt: UInt64 = 0
        var bodyBytesSinceClockStart: UInt64 = 0
        /// The parser stopped right after this request's head (so it must be resumed).
        var pausedAtHead = false
        /// The upstream refused the token (`retryOnStatus`): its response is dropped and the
        /// request sent again, once, with a new token.
        var discardingRefusedResponse = false
        var replayedWithNewToken = false
        /// The body sent so far is in `replayBody` (it fits the replay limit).
        var bodyReplayable = false
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
}
