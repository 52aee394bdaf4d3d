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
