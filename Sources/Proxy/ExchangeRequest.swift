// ExchangeRequest: the request half of an exchange, with no socket. It holds what the request's
// head said (fixed for the exchange: its framing, whether the client waits for `100 Continue`,
// whether it fits the replay limit, the protocol switch the route lets it ask for), how far its
// body got from the client, how much of that body the connection keeps for a replay, and the
// body's deadline. Its decisions answer with small values: what to keep of body bytes sent
// upstream, and when the body's deadline falls due.
//
// `Exchange` holds it in `current.request` and forwards the connection's events here; what also
// depends on the response or the connection (whether body bytes go upstream at all, whether the
// relay stopped reading) it decides itself and passes in.

import HTTP1

struct ExchangeRequest {
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
    // The one-byte fields come first, then the wider ones: Swift lays fields out in the order
    // written, and every connection holds this state (an idle one too).
    var upload = Upload.pending
    /// The `Upgrade` value forwarded (the protocols the route allows), nil for none: an
    /// upstream's 101 is accepted only when there is one.
    var upgrade: [UInt8]?
    var bodyReplay = BodyReplay.withoutBody
    /// The client asked for the connection to end after this exchange (`Connection: close`, or
    /// HTTP/1.0 without keep-alive): it sends nothing after the request. After `bodyReplay`,
    /// in its padding: with the one-byte fields above it would push the wider ones 8 bytes on.
    var clientCloses = false
    var bodyClock: BodyClock?

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

    /// A deadline of the request body: `requestBodyTimeoutSeconds` from `startedAt` (loop
    /// milliseconds), extended by 1/`requestBodyMinBytesPerSecond` s per byte received since.
    struct BodyClock {
        var startedAt: UInt64
        var bytesSinceStart: UInt64 = 0
    }

    /// The buffered-replay limit of a request body (issue 4: 64 KiB).
    static let maxReplayBodyBytes = 64 * 1024

    /// The request can go out again: it is complete, and its body (if any) kept for a replay.
    var isResendable: Bool { upload == .complete && bodyReplay != .impossible }

    // MARK: The body kept for a replay

    /// A route with a token may send the request again (it has `retryOnStatus`, or DPoP): the
    /// body, if any, is kept while it fits the limit.
    @inline(__always)
    mutating func keepsBodyForReplay(on plan: RoutePlan) {
        guard hasBody else { return }
        let mayReplay = !plan.route.retryOnStatus.isEmpty || plan.usesDPoP
        bodyReplay = mayReplay && lengthFitsReplay ? .keeping(0) : .impossible
    }

    /// What to do with request body bytes the connection sent upstream, for a replay.
    enum BodyKeeping { case none, keep, dropKept }

    /// `count` request body bytes (framing included) went upstream: whether the connection keeps
    /// them for a replay with a new token (up to `maxReplayBodyBytes`).
    mutating func sentBody(_ count: Int) -> BodyKeeping {
        guard case .keeping(let kept) = bodyReplay else { return .none }
        if kept + count > Self.maxReplayBodyBytes {
            bodyReplay = .impossible
            return .dropKept
        }
        bodyReplay = .keeping(kept + count)
        return .keep
    }

    // MARK: The end

    /// What the upstream gets at the end of the request.
    enum End {
        /// Nothing: the relay answered itself.
        case discarded
        /// The end is reported to the upstream connection (its response clock starts), after
        /// the last chunk for a chunked body.
        case forwarded(lastChunk: Bool)
    }

    /// The parser stops at the end of each request so that pipelined ones wait for this one's
    /// response. Not an upgrade request: llhttp then stops by itself with HPE_PAUSED_UPGRADE.
    var pausesParserAtEnd: Bool { !isUpgrade }

    // MARK: The body's deadline

    /// The body clock starts when the request goes upstream, unless the client waits for
    /// `100 Continue`.
    var startsBodyClockWithHead: Bool { hasBody && !expectsContinue }

    /// The body's deadline starts (again) at `now`, if a body is still to come. The caller
    /// checked that the relay forwards it.
    mutating func startBodyClock(now: UInt64) -> Bool {
        guard hasBody, upload == .pending else { return false }
        bodyClock = BodyClock(startedAt: max(1, now))
        return true
    }

    /// `count` body bytes arrived on a running clock. Returns when the body's deadline falls due
    /// (loop milliseconds), nil while `readsStopped`: the relay itself stopped reading, and that
    /// time is not the body's.
    mutating func bodyBytesArrived(_ count: Int, readsStopped: Bool, timeoutMilliseconds: UInt64, minBytesPerSecond: UInt64) -> UInt64? {
        guard var clock = bodyClock else { return nil }
        clock.bytesSinceStart += UInt64(count)
        bodyClock = clock
        guard !readsStopped else { return nil }
        return clock.startedAt + timeoutMilliseconds + clock.bytesSinceStart * 1000 / minBytesPerSecond
    }

    /// Stops the body's deadline; returns whether it ran.
    mutating func stopBodyClock() -> Bool {
        guard bodyClock != nil else { return false }
        bodyClock = nil
        return true
    }
}

extension ExchangeRequest {
    /// What `head` says (its `upgrade` is the route's to set). Borrowed: an initializer takes its
    /// arguments owned, and the head was retained and released around the call.
    init(_ head: borrowing HTTPHead) {
        let hasBody = head.isChunked || (head.contentLength ?? 0) > 0
        self.init(versionMinor: head.versionMinor, isHead: head.isHead, isUpgrade: head.isUpgrade,
                  framing: head.isChunked ? .chunked : (head.contentLength != nil ? .contentLength : .none),
                  hasBody: hasBody,
                  expectsContinue: hasBody && head.fields.contains(where: { $0.known == .expect }),
                  lengthFitsReplay: (head.contentLength ?? 0) <= UInt64(Self.maxReplayBodyBytes), upgrade: nil,
                  clientCloses: !head.keepAlive)
    }
}
