/// What an `HTTP1Parser` reports as it parses. Every call happens inside the parser's `feed` or
/// `finish`.
///
/// Lifetime: the parser holds its delegate unowned and calls it without retaining it (a retain
/// and a release around each call were five pairs per proxied request). So a delegate must be
/// held by a strong reference elsewhere from the time it is set until it is unset or the parser
/// is gone, and that reference must not be dropped while the parser runs (during `feed` and
/// `finish`), not even by the delegate's own callbacks. The conformers meet it so:
/// - `UpstreamConnection` and LocalHTTP's connection own their parsers and feed them only from
///   their own methods (stream callbacks), whose callers hold them for the call.
/// - The proxy's `RequestLeg` is held by its client connection, which feeds the parser from its
///   own methods and lets the leg go only with the workspace that holds the parser
///   (`releaseExchangeParts`: when the socket has closed, a libuv close callback, or when a
///   `CONNECT` takes the socket, after `feed` returned).
/// - Tests keep their delegates in locals that outlive every `feed`.
public protocol HTTP1ParserDelegate: AnyObject {
    /// The head is complete (`parser.head`). Return what the parser should assume of the body.
    func parserDidParseHead(_ parser: HTTP1Parser) -> HTTP1Parser.BodyExpectation
    /// A piece of body; for chunked messages the bytes of the current chunk (no framing).
    func parser(_ parser: HTTP1Parser, didParseBody bytes: UnsafeRawBufferPointer)
    /// A chunk of `size` bytes starts (chunked messages only; size 0 is the last chunk).
    func parser(_ parser: HTTP1Parser, didStartChunkOfSize size: UInt64)
    /// The data of the current chunk has ended (not called for the last, empty chunk).
    func parserDidFinishChunk(_ parser: HTTP1Parser)
    /// The message (with trailers, in `parser.head.trailers`) is complete. Return true to pause
    /// the parser here: `feed` stops and reports the bytes it consumed.
    func parserDidFinishMessage(_ parser: HTTP1Parser) -> Bool
}

extension HTTP1ParserDelegate {
    /// Calls `call` with the delegate at `object`, an instance of this type, without retaining
    /// it: `HTTP1Parser.withDelegate` reaches it through its address and its type, neither of
    /// which holds a reference to copy.
    @inline(__always)
    static func withUnretained<Result>(_ object: UnsafeMutableRawPointer, _ call: (any HTTP1ParserDelegate) -> Result) -> Result {
        Unmanaged<Self>.fromOpaque(object)._withUnsafeGuaranteedRef { call($0) }
    }

    /// The delegate at `object`, an instance of this type (for `HTTP1Parser.delegate`).
    static func instance(at object: UnsafeMutableRawPointer) -> any HTTP1ParserDelegate {
        Unmanaged<Self>.fromOpaque(object).takeUnretainedValue()
    }
}
