// The state of the request under way on a client connection, and the parts it is made of: what
// its head said, how far its body and its response got, its token, whether it can be sent again,
// its route, its body's deadline and what the metrics and the access log keep of it.
//
// A parsed head replaces it whole (`Exchange.headParsed`), so nothing of one request carries
// over to the next. What outlives a request stays on `Exchange`: the connection's phase, the
// count of its requests, whether it stays open, and which reads the write backlogs stopped.
// Between a finished exchange and the next head it still holds the last request's state (its
// route let go), until the next head replaces it; a request the parser rejects before its head,
// or whose head does not arrive in time, starts from an empty one.

import HTTP1

extension Exchange {
    /// Everything about one request and its response; changed only by the exchange's events.
    /// `headParsed` builds it with the memberwise initializer: a field added here starts from its
    /// default for every request.
    struct Current {
        var request = Request()
        var upload = Upload.pending
        /// The route identity's token for this request.
        var credential = RequestCredential.none
        var bodyReplay = BodyReplay.withoutBody
        var response = Response.awaited
        var interimResponses = 0
        /// The request went again on a fresh connection after a reused one turned out closed.
        var retriedOnFreshConnection = false
        /// The request went again after an upstream's `use_dpop_nonce` answer (once per request).
        var dpopNonceReplayed = false
        /// The route of the exchange (nil before the head, when none matched, or once the
        /// exchange finished: `nextRequest` lets go of it).
        var plan: RoutePlan?
        /// The listed origin (`browser.allowOrigins`) whose page sent the request: its answers
        /// carry that origin's CORS fields.
        var cors: Int?
        /// The request may start a person's device login (`BrowserRequest.loginStartRefusal`):
        /// asked again when a parked request looks its token up anew.
        var startsLogin = false
        var bodyClock: BodyClock?
        /// For the metrics and the access log.
        var record = ExchangeRecord()
    }

    /// What the head said about the request (fixed for the exchange).
    struct Request {
        var versionMinor: UInt8 = 1
        var isHead = false
        var isUpgrade = false
        var framing = ForwardedHead.Framing.none
        /// A body follows the head (chunked, or a Content-Length above zero).
        var hasBody = false
        /// The client sent `Expect: 100-continue`: it waits for the interim answer (or a
        /// second) before its body, so the body's clock starts with its first byte instead.
        var expectsContinue = false
        /// No declared length over `maxReplayBodyBytes` (a chunked body is kept until it passes it).
        var lengthFitsReplay = true
        /// The `Upgrade` value forwarded (the protocols the route allows), nil for none: an
        /// upstream's 101 is accepted only when there is one.
        var upgrade: [UInt8]?
    }

    /// How far the request got from the client.
    enum Upload { case pending, complete }

    /// Whether the request can be sent again with a new token.
    enum BodyReplay: Equatable {
        /// Nothing to keep: no body.
        case withoutBody
        /// The body sent so far is kept by the connection (this many bytes, within the limit).
        case keeping(Int)
        /// The body is not kept (no token route with `retryOnStatus` or DPoP, or over the limit).
        case impossible
    }

    /// The response body as the client gets it.
    struct ResponseBody: Equatable {
        var framing: ForwardedHead.Framing
        /// The upstream's body was chunked (its chunks are relayed; otherwise the relay chunks).
        var upstreamChunked: Bool
    }

    /// How far the response got.
    enum Response: Equatable {
        /// Nothing relayed yet (or only interim responses).
        case awaited
        /// An interim (1xx) response is being parsed.
        case interim
        /// A `retryOnStatus` answer to a refused token, dropped for a replay.
        case refused
        /// A 401 asking for a DPoP nonce (`use_dpop_nonce`), dropped: the request goes again with
        /// the same token and a proof carrying the nonce that answer brought.
        case nonceChallenged
        /// The head is written but held back until body bytes follow or the upstream read that
        /// carried it is fully parsed: bad framing right behind it then still becomes a clean 502.
        case held(ResponseBody)
        /// The head went to the client; the body follows.
        case streaming(ResponseBody)
        /// The upstream's response went to the client whole; `closeDelimited`: its body ended
        /// with the connection (an HTTP/1.0 client without a length), which then closes.
        case complete(closeDelimited: Bool)
        /// The relay answered itself (404, 400, 502, ...); request body bytes are discarded.
        case answeredLocally
    }

    /// A deadline of the request body: `requestBodyTimeoutSeconds` from `startedAt` (loop
    /// milliseconds), extended by 1/`requestBodyMinBytesPerSecond` s per byte received since.
    struct BodyClock {
        var startedAt: UInt64
        var bytesSinceStart: UInt64 = 0
    }
}

extension Exchange.Request {
    /// What `head` says (its `upgrade` is the route's to set).
    init(_ head: HTTPHead) {
        let hasBody = head.isChunked || (head.contentLength ?? 0) > 0
        self.init(versionMinor: head.versionMinor, isHead: head.isHead, isUpgrade: head.isUpgrade,
                  framing: head.isChunked ? .chunked : (head.contentLength != nil ? .contentLength : .none),
                  hasBody: hasBody,
                  expectsContinue: hasBody && head.fields.contains(where: { $0.known == .expect }),
                  lengthFitsReplay: (head.contentLength ?? 0) <= UInt64(Exchange.maxReplayBodyBytes), upgrade: nil)
    }
}
