// The llhttp callbacks of every HTTP1Parser: where a head or a trailer section begins and
// ends (what is between is read in one pass, `HTTPHead.read`), and where the delegate hears of
// heads, bodies, chunks and message ends. `ParserSettings` routes llhttp's calls here,
// with the parser recovered from `llhttp_t.data`; each returns an llhttp status (0 to go on,
// `HPE_PAUSED` to pause, `HPE_USER` after `parser.fail`).
//
// Caseless: the state they read and write is the parser's (one parser per connection), and
// they are called from C, so each is a static function of the parser, inlined into the
// non-capturing closure llhttp calls: no allocation and no indirection beyond llhttp's own call.

internal import CLLHTTP
import ByteBuffers
import HTTPFields

/// The llhttp callbacks, as functions of the parser llhttp is running.
enum ParserCallbacks {
    static func messageBegin(_ parser: HTTP1Parser) -> Int32 {
        parser.head.reset()
        parser.inTrailers = false
        parser.headComplete = false
        parser.isInMessage = true
        parser.chunkExtensionBytes = 0
        // Before a message llhttp skips CR and LF, nothing else: when it began this read between
        // messages, the message begins at the read's first other byte. Otherwise only llhttp
        // knows where: it pauses, and `feed` hears it.
        if parser.messageMayBeginAtFeedStart, var at = parser.feedStart, let end = parser.feedEnd {
            while at < end && (at.pointee == 0x0D || at.pointee == 0x0A) { at += 1 }
            parser.begin(.head, at: at)
            return 0
        }
        parser.deferred = .messageBegin
        return Int32(HPE_PAUSED.rawValue)
    }

    static func headersComplete(_ parser: HTTP1Parser) -> Int32 {
        // The usual case: the head began in this read, so all of it is here, up to the read's
        // end at most. Otherwise llhttp pauses, and `feed` completes the head where it ended.
        guard let from = parser.sectionFrom, let end = parser.feedEnd else {
            parser.deferred = .head
            return Int32(HPE_PAUSED.rawValue)
        }
        return parser.completeHead(at: UnsafeRawPointer(from), count: from.distance(to: end))
    }

    static func body(_ parser: HTTP1Parser, _ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        parser.withDelegate { $0.parser(parser, didParseBody: UnsafeRawBufferPointer(start: at, count: length)) }
        return 0
    }

    static func chunkExtension(_ parser: HTTP1Parser, _ length: Int) -> Int32 {
        parser.chunkExtensionBytes += length
        guard parser.chunkExtensionBytes <= HTTP1Parser.maxChunkExtensionBytes else {
            return parser.fail(.malformed, "chunk extensions exceed \(HTTP1Parser.maxChunkExtensionBytes / 1024) KiB")
        }
        return 0
    }

    static func chunkHeader(_ parser: HTTP1Parser) -> Int32 {
        let size = parser.state.pointee.content_length
        parser.withDelegate { $0.parser(parser, didStartChunkOfSize: size) }
        // The last chunk: the trailer section begins after its line, where llhttp pauses.
        guard size == 0 else { return 0 }
        parser.deferred = .trailers
        return Int32(HPE_PAUSED.rawValue)
    }

    static func chunkComplete(_ parser: HTTP1Parser) -> Int32 {
        // The last chunk's completion comes after the trailers; the delegate ends the body with
        // the message instead. Told by the section being read, not by llhttp's length, which a
        // trailer's Content-Length sets (refused then, with nothing told after the last chunk).
        if parser.collecting == .trailers { return 0 }
        parser.withDelegate { $0.parserDidFinishChunk(parser) }
        return 0
    }

    static func messageComplete(_ parser: HTTP1Parser) -> Int32 {
        parser.isInMessage = false
        parser.messageMayBeginAtFeedStart = false
        // The trailer section (at least the empty line after the last chunk) is read in `feed`,
        // where llhttp says where it ended, before the delegate hears of the message's end.
        if parser.collecting == .trailers {
            parser.deferred = .message
            return Int32(HPE_PAUSED.rawValue)
        }
        let pause = parser.withDelegate { $0.parserDidFinishMessage(parser) } ?? false
        return pause ? Int32(HPE_PAUSED.rawValue) : 0
    }
}
