import HTTP1

/// What a request's head said about it, fixed for its exchange: how its body is framed, whether
/// the client waits for `100 Continue`, whether it fits the replay limit, and the protocol switch
/// the route lets it ask for. The response half reads it to frame the answer.
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
    /// The `Upgrade` value forwarded (the protocols the route allows), nil for none: an
    /// upstream's 101 is accepted only when there is one.
    var upgrade: [UInt8]?
}

extension ExchangeRequest {
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
