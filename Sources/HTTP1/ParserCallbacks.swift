// The llhttp callbacks of every HTTP1Parser: where the head is recorded and checked as it
// arrives (sizes, field counts, Host, forbidden bytes, bare LFs, folded values), and where the
// delegate hears of bodies, chunks and message ends. `ParserSettings` routes llhttp's calls here,
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
        parser.headBytesSeen = 0
        parser.inTrailers = false
        parser.inFieldName = false
        parser.headComplete = false
        parser.isInMessage = true
        parser.lastValueEnd = nil
        parser.chunkExtensionBytes = 0
        parser.startLineChecked = false
        parser.uncopiedFrom = nil
        return 0
    }

    /// Counts a piece of the head against the size limit and returns where it lies in the
    /// head's bytes (see `HTTP1Parser.headOffset(of:length:)`), or nil after `fail`.
    @inline(__always)
    static func notePiece(_ parser: HTTP1Parser, _ at: UnsafePointer<CChar>, _ length: Int) -> Int? {
        parser.headBytesSeen += length
        if parser.headBytesSeen > parser.limits.maxHeadBytes {
            _ = parser.fail(.headTooLarge, parser.inTrailers ? "trailers exceed maxHeaderBytes" : "header block exceeds maxHeaderBytes")
            return nil
        }
        return parser.headOffset(of: at, length: length)
    }

    static func url(_ parser: HTTP1Parser, _ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard let at else { return 0 }
        let first = parser.head.targetLength == 0
        // `method SP target`: one space, not two (llhttp 8 skips extra ones).
        if first && parser.byte(at: at - 2) == 0x20 { return parser.fail(.malformed, "more than one space in the request line") }
        // `target SP HTTP/`: the byte after the space, in this read or first in the next.
        if let feedEnd = parser.feedEnd, at + length < feedEnd {
            if at + length + 1 < feedEnd {
                if (at + length + 1).pointee == 0x20 { return parser.fail(.malformed, "more than one space in the request line") }
            } else {
                parser.targetSpaceEndedRead = true
            }
        }
        guard let offset = notePiece(parser, at, length) else { return Int32(HPE_USER.rawValue) }
        if first { parser.head.targetStart = offset }
        parser.head.targetLength += length
        return 0
    }

    static func status(_ parser: HTTP1Parser, _ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard let at else { return 0 }
        guard let offset = notePiece(parser, at, length) else { return Int32(HPE_USER.rawValue) }
        if parser.head.reasonLength == 0 { parser.head.reasonStart = offset }
        parser.head.reasonLength += length
        return 0
    }

    static func headerField(_ parser: HTTP1Parser, _ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        guard let at else { return 0 }
        // A name may arrive in several pieces when it straddles two reads.
        let first = !parser.inFieldName
        if first {
            parser.inFieldName = true
            parser.pendingField.nameLength = 0
            // The start line ends in CRLF: llhttp 8 takes a bare LF after a request line.
            if !parser.startLineChecked {
                parser.startLineChecked = true
                if parser.byte(at: at - 2) != 0x0D { return parser.fail(.malformed, "a bare LF ends the start line") }
            }
        }
        guard let offset = notePiece(parser, at, length) else { return Int32(HPE_USER.rawValue) }
        if first { parser.pendingField.nameStart = Int32(truncatingIfNeeded: offset) }
        parser.pendingField.nameLength &+= Int32(truncatingIfNeeded: length)
        return 0
    }

    static func headerFieldComplete(_ parser: HTTP1Parser) -> Int32 {
        // llhttp 8 reports a line that starts with ':' as a field whose name is empty (no name
        // callback at all); RFC 9110 §5.1 requires at least one token character.
        guard parser.inFieldName && parser.pendingField.nameLength > 0 else {
            return parser.fail(.malformed, parser.inTrailers ? "a trailer field with an empty name" : "a header field with an empty name")
        }
        let count = parser.inTrailers ? parser.head.trailerList.count : parser.head.fieldList.count
        if count >= parser.limits.maxFieldCount {
            return parser.fail(.tooManyHeaders,
                               parser.inTrailers ? "more than maxHeaderCount trailer fields" : "more than maxHeaderCount header fields")
        }
        parser.inFieldName = false
        parser.valuePieces = 0
        parser.lastValueEnd = nil
        // Each line also costs its ": " and CRLF on the wire.
        parser.headBytesSeen += 4
        let nameStart = Int(parser.pendingField.nameStart)
        let nameLength = Int(parser.pendingField.nameLength)
        let name = UnsafeRawBufferPointer(start: parser.headBytes(at: nameStart), count: nameLength)
        parser.pendingField.known = KnownHeader(name: name, lookalikes: parser.kind == .request)
        // An empty value has no piece: it is empty where the name ends.
        parser.pendingField.valueStart = Int32(nameStart + nameLength)
        parser.pendingField.valueLength = 0
        return 0
    }

    static func headerValue(_ parser: HTTP1Parser, _ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        // llhttp 8 accepts obsolete line folding (a value continued on a line that starts with
        // white space) and reports the continuation as a further piece of the value. A value
        // legitimately arrives in pieces only when it straddles two reads: the earlier piece
        // ends where that read ended and the next starts where the next read starts. Any other
        // further piece is a fold, which RFC 9112 §5.2 lets a server reject with 400.
        if parser.valuePieces > 0 && !(parser.previousValuePieceEndedRead && at == parser.feedStart) {
            return parser.fail(.malformed, "obsolete line folding in a header value")
        }
        // The first piece of a value that was empty on its own line arrives right after the
        // fold's line break (llhttp reports no piece for the empty part).
        if parser.valuePieces == 0, length > 0, let at, followsLineBreak(parser, at) {
            return parser.fail(.malformed, "obsolete line folding in a header value")
        }
        guard let at else { return 0 }
        guard let offset = notePiece(parser, at, length) else { return Int32(HPE_USER.rawValue) }
        if parser.valuePieces == 0 { parser.pendingField.valueStart = Int32(truncatingIfNeeded: offset) }
        parser.pendingField.valueLength &+= Int32(truncatingIfNeeded: length)
        parser.valuePieces += 1
        parser.previousValuePieceEndedRead = at + length == parser.feedEnd
        if length > 0 { parser.lastValueEnd = at + length }
        return 0
    }

    /// Whether only SP or HTAB stand between the last line break and `at`.
    @inline(__always)
    static func followsLineBreak(_ parser: HTTP1Parser, _ at: UnsafePointer<CChar>) -> Bool {
        guard let feedStart = parser.feedStart else { return false }
        // The usual case, `name: value` within one read, answered in two loads.
        if at - 2 >= feedStart && (at - 1).pointee == 0x20 && (at - 2).pointee == 0x3A { return false }
        var position = at
        while position > feedStart {
            position -= 1
            let byte = UInt8(bitPattern: position.pointee)
            if byte == 0x20 || byte == 0x09 { continue }
            return byte == 0x0A
        }
        return parser.lastNonBlankBeforeFeed == 0x0A
    }

    static func headerValueComplete(_ parser: HTTP1Parser) -> Int32 {
        // llhttp completes every value, an empty one too, after its name: the field goes into
        // the head now, its value filled in.
        var field = parser.pendingField
        var length = Int(field.valueLength)
        if length > 0, let value = parser.headBytes(at: Int(field.valueStart)) {
            // llhttp leaves trailing white space in the value; it is not part of it (RFC 9110 §5.5).
            while length > 0 {
                let byte = value.load(fromByteOffset: length - 1, as: UInt8.self)
                guard byte == 0x20 || byte == 0x09 else { break }
                length -= 1
            }
            if HTTP1Parser.containsNULOrLineBreak(value, count: length) {
                return parser.fail(.invalidHeaderValue, "header value contains a NUL, CR or LF byte")
            }
        }
        field.valueLength = Int32(length)
        if parser.inTrailers {
            // RFC 9110 §6.5.1: framing fields have no business in trailers, and llhttp would
            // take a Content-Length there as the length of the message it is ending.
            if field.known == .contentLength || field.known == .transferEncoding {
                return parser.fail(.malformed, "a trailer field that frames the message (Content-Length or Transfer-Encoding)")
            }
            parser.head.trailerList.append(field)
            return 0
        }
        // Most fields are none the relay acts on: one comparison for them.
        if field.known != .other {
            switch field.known {
            case .transferEncoding:
                // Counted here, not from llhttp's flag, which an empty value does not set.
                parser.head.hasTransferEncoding = true
            case .host:
                if parser.head.hostIndex != nil { return parser.fail(.badHost, "more than one Host header") }
                parser.head.hostIndex = parser.head.fields.count
            case .origin, .secFetchSite, .secFetchMode, .secFetchDest:
                parser.head.fetchMetadata.note(field.known, at: parser.head.fields.count)
            default:
                break
            }
        }
        parser.head.fieldList.append(field)
        return 0
    }

    static func headersComplete(_ parser: HTTP1Parser) -> Int32 {
        // Everything after reads the head from its bytes.
        parser.copyHeadPieces()
        parser.head.method = llhttp_get_method(parser.state)
        parser.head.statusCode = Int(llhttp_get_status_code(parser.state))
        parser.head.versionMajor = llhttp_get_http_major(parser.state)
        parser.head.versionMinor = llhttp_get_http_minor(parser.state)
        let flags = UInt32(parser.state.pointee.flags)
        parser.head.isChunked = flags & F_CHUNKED.rawValue != 0
        parser.head.contentLength = flags & F_CONTENT_LENGTH.rawValue != 0 ? parser.state.pointee.content_length : nil
        parser.head.keepAlive = llhttp_should_keep_alive(parser.state) != 0
        parser.head.isUpgrade = parser.state.pointee.upgrade != 0
        parser.head.markConnectionListedFields()
        if let problem = parser.head.framingProblem(of: parser.kind) { return parser.fail(problem.kind, problem.reason) }
        parser.inTrailers = true
        parser.startLineChecked = true
        parser.headComplete = true
        parser.headBytesSeen = 0
        // The empty line ending the head must be CRLF. Usually the head's last value ends in
        // this read, followed by its CRLF and the empty line's first byte: two loads. Otherwise
        // (a head split there between reads, or whose last value is empty) llhttp pauses and
        // `feed` checks at the position it reports.
        if let valueEnd = parser.lastValueEnd, let feedEnd = parser.feedEnd, valueEnd + 2 < feedEnd {
            guard (valueEnd + 2).pointee == 0x0D else { return parser.fail(.malformed, "a bare LF ends the head") }
            return parser.headDelegateAnswer()
        }
        parser.deferred = .head
        return Int32(HPE_PAUSED.rawValue)
    }

    static func body(_ parser: HTTP1Parser, _ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        parser.delegate?.parser(parser, didParseBody: UnsafeRawBufferPointer(start: at, count: length))
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
        parser.delegate?.parser(parser, didStartChunkOfSize: parser.state.pointee.content_length)
        return 0
    }

    static func chunkComplete(_ parser: HTTP1Parser) -> Int32 {
        // The last chunk's completion comes after the trailers; the delegate ends the body with
        // the message instead.
        if parser.inTrailers && parser.state.pointee.content_length == 0 && parser.head.isChunked && parser.lastChunkSeen { return 0 }
        parser.delegate?.parserDidFinishChunk(parser)
        return 0
    }

    static func messageComplete(_ parser: HTTP1Parser) -> Int32 {
        parser.isInMessage = false
        // The trailers, for the delegate.
        if parser.uncopiedFrom != nil { parser.copyHeadPieces() }
        // The empty line after the last chunk (and its trailers): checked in `feed`.
        if parser.head.isChunked {
            parser.deferred = .message
            return Int32(HPE_PAUSED.rawValue)
        }
        let pause = parser.delegate?.parserDidFinishMessage(parser) ?? false
        return pause ? Int32(HPE_PAUSED.rawValue) : 0
    }
}
