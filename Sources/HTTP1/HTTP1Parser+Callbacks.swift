// The llhttp callbacks of HTTP1Parser: where the head is recorded and checked as it arrives,
// and the settings table that routes llhttp's calls to them.

internal import CLLHTTP
import ByteBuffers
import HTTPFields

extension HTTP1Parser {
    // MARK: Callbacks from llhttp

    func messageBegin() -> Int32 {
        head.reset()
        headBytesSeen = 0
        inTrailers = false
        inFieldName = false
        headComplete = false
        isInMessage = true
        lastValueEnd = nil
        chunkExtensionBytes = 0
        startLineChecked = false
        return 0
    }

    /// Appends a piece of the head and enforces the size limit. Returns an llhttp status.
    func appendHeadBytes(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        headBytesSeen += length
        if headBytesSeen > limits.maxHeadBytes {
            return fail(.headTooLarge, inTrailers ? "trailers exceed maxHeaderBytes" : "header block exceeds maxHeaderBytes")
        }
        head.bytes.append(UnsafeRawBufferPointer(start: at, count: length))
        return 0
    }

    func url(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        if head.targetLength == 0 {
            head.targetStart = head.bytes.count
            // `method SP target`: one space, not two (llhttp 8 skips extra ones).
            if let at, byte(at: at - 2) == 0x20 { return fail(.malformed, "more than one space in the request line") }
        }
        // `target SP HTTP/`: the byte after the space, in this read or first in the next.
        if let at, let feedEnd, at + length < feedEnd {
            if at + length + 1 < feedEnd {
                if (at + length + 1).pointee == 0x20 { return fail(.malformed, "more than one space in the request line") }
            } else {
                targetSpaceEndedRead = true
            }
        }
        head.targetLength += length
        return appendHeadBytes(at, length)
    }

    func status(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        if head.reasonLength == 0 { head.reasonStart = head.bytes.count }
        head.reasonLength += length
        return appendHeadBytes(at, length)
    }

    func headerField(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        // A name may arrive in several pieces when it straddles two reads.
        if !inFieldName {
            inFieldName = true
            fieldStart = head.bytes.count
            // The start line ends in CRLF: llhttp 8 takes a bare LF after a request line.
            if !startLineChecked {
                startLineChecked = true
                if let at, byte(at: at - 2) != 0x0D { return fail(.malformed, "a bare LF ends the start line") }
            }
        }
        return appendHeadBytes(at, length)
    }

    func headerFieldComplete() -> Int32 {
        // llhttp 8 reports a line that starts with ':' as a field whose name is empty (no name
        // callback at all); RFC 9110 §5.1 requires at least one token character.
        guard inFieldName && head.bytes.count > fieldStart else {
            return fail(.malformed, inTrailers ? "a trailer field with an empty name" : "a header field with an empty name")
        }
        let count = inTrailers ? head.trailers.count : head.fields.count
        if count >= limits.maxFieldCount {
            return fail(.tooManyHeaders, inTrailers ? "more than maxHeaderCount trailer fields" : "more than maxHeaderCount header fields")
        }
        inFieldName = false
        valuePieces = 0
        lastValueEnd = nil
        // Each line also costs its ": " and CRLF on the wire.
        headBytesSeen += 4
        let nameLength = head.bytes.count - fieldStart
        pendingField = FieldSlot(nameStart: Int32(fieldStart), nameLength: Int32(nameLength),
                                 valueStart: Int32(head.bytes.count), valueLength: 0,
                                 known: KnownHeader(name: head.slice(fieldStart, nameLength), lookalikes: kind == .request),
                                 listedInConnection: false)
        return 0
    }

    func headerValue(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        // llhttp 8 accepts obsolete line folding (a value continued on a line that starts with
        // white space) and reports the continuation as a further piece of the value. A value
        // legitimately arrives in pieces only when it straddles two reads: the earlier piece
        // ends where that read ended and the next starts where the next read starts. Any other
        // further piece is a fold, which RFC 9112 §5.2 lets a server reject with 400.
        if valuePieces > 0 && !(previousValuePieceEndedRead && at == feedStart) {
            return fail(.malformed, "obsolete line folding in a header value")
        }
        // The first piece of a value that was empty on its own line arrives right after the
        // fold's line break (llhttp reports no piece for the empty part).
        if valuePieces == 0, length > 0, let at, followsLineBreak(at) {
            return fail(.malformed, "obsolete line folding in a header value")
        }
        valuePieces += 1
        previousValuePieceEndedRead = at.map { $0 + length == feedEnd } ?? false
        if length > 0, let at { lastValueEnd = at + length }
        return appendHeadBytes(at, length)
    }

    /// Whether only SP or HTAB stand between the last line break and `at`.
    @inline(__always)
    func followsLineBreak(_ at: UnsafePointer<CChar>) -> Bool {
        guard let feedStart else { return false }
        // The usual case, `name: value` within one read, answered in two loads.
        if at - 2 >= feedStart && (at - 1).pointee == 0x20 && (at - 2).pointee == 0x3A { return false }
        var position = at
        while position > feedStart {
            position -= 1
            let byte = UInt8(bitPattern: position.pointee)
            if byte == 0x20 || byte == 0x09 { continue }
            return byte == 0x0A
        }
        return lastNonBlankBeforeFeed == 0x0A
    }

    func headerValueComplete() -> Int32 {
        // llhttp completes every value, an empty one too, after its name: the field goes into
        // the head now, its value filled in.
        var field = pendingField
        let start = Int(field.valueStart)
        var end = head.bytes.count
        if let base = head.bytes.baseAddress {
            // llhttp leaves trailing white space in the value; it is not part of it (RFC 9110 §5.5).
            while end > start {
                let byte = base.load(fromByteOffset: end - 1, as: UInt8.self)
                guard byte == 0x20 || byte == 0x09 else { break }
                end -= 1
            }
            if Self.containsNULOrLineBreak(UnsafeRawPointer(base + start), count: end - start) {
                return fail(.invalidHeaderValue, "header value contains a NUL, CR or LF byte")
            }
        }
        field.valueLength = Int32(end - start)
        if inTrailers {
            // RFC 9110 §6.5.1: framing fields have no business in trailers, and llhttp would
            // take a Content-Length there as the length of the message it is ending.
            if field.known == .contentLength || field.known == .transferEncoding {
                return fail(.malformed, "a trailer field that frames the message (Content-Length or Transfer-Encoding)")
            }
            head.trailerList.append(field)
            return 0
        }
        // Most fields are none the relay acts on: one comparison for them.
        if field.known != .other {
            switch field.known {
            case .transferEncoding:
                // Counted here, not from llhttp's flag, which an empty value does not set.
                head.hasTransferEncoding = true
            case .host:
                if head.hostIndex != nil { return fail(.badHost, "more than one Host header") }
                head.hostIndex = head.fields.count
            case .origin, .secFetchSite, .secFetchMode, .secFetchDest:
                head.fetchMetadata.note(field.known, at: head.fields.count)
            default:
                break
            }
        }
        head.fieldList.append(field)
        return 0
    }

    /// Whether any of `count` bytes at `start` is NUL, CR or LF: eight bytes at a time (a word
    /// has a byte equal to `b` when `word ^ b…b` has a zero byte), since every value of every
    /// head passes here.
    @inline(__always)
    static func containsNULOrLineBreak(_ start: UnsafeRawPointer, count: Int) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZeroByte(_ word: UInt64) -> Bool { (word &- ones) & ~word & highs != 0 }
        @inline(__always) func hasNULOrLineBreak(_ word: UInt64) -> Bool {
            hasZeroByte(word) || hasZeroByte(word ^ (ones &* 0x0A)) || hasZeroByte(word ^ (ones &* 0x0D))
        }
        guard count >= 8 else {
            for offset in 0..<count {
                let byte = start.load(fromByteOffset: offset, as: UInt8.self)
                if byte == 0 || byte == 0x0A || byte == 0x0D { return true }
            }
            return false
        }
        var offset = 0
        while offset + 8 <= count {
            if hasNULOrLineBreak(start.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) { return true }
            offset += 8
        }
        // The last bytes in one more word, overlapping the one before.
        return offset < count && hasNULOrLineBreak(start.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
    }

    func headersComplete() -> Int32 {
        head.method = llhttp_get_method(state)
        head.statusCode = Int(llhttp_get_status_code(state))
        head.versionMajor = llhttp_get_http_major(state)
        head.versionMinor = llhttp_get_http_minor(state)
        let flags = UInt32(state.pointee.flags)
        head.isChunked = flags & F_CHUNKED.rawValue != 0
        head.contentLength = flags & F_CONTENT_LENGTH.rawValue != 0 ? state.pointee.content_length : nil
        head.keepAlive = llhttp_should_keep_alive(state) != 0
        head.isUpgrade = state.pointee.upgrade != 0
        head.markConnectionListedFields()
        if let problem = head.framingProblem(of: kind) { return fail(problem.kind, problem.reason) }
        inTrailers = true
        startLineChecked = true
        headComplete = true
        headBytesSeen = 0
        // The empty line ending the head must be CRLF. Usually the head's last value ends in
        // this read, followed by its CRLF and the empty line's first byte: two loads. Otherwise
        // (a head split there between reads, or whose last value is empty) llhttp pauses and
        // `feed` checks at the position it reports.
        if let valueEnd = lastValueEnd, let feedEnd, valueEnd + 2 < feedEnd {
            guard (valueEnd + 2).pointee == 0x0D else { return fail(.malformed, "a bare LF ends the head") }
            return headDelegateAnswer()
        }
        deferred = .head
        return Int32(HPE_PAUSED.rawValue)
    }

    /// The delegate's answer to the head, as llhttp's on_headers_complete status.
    func headDelegateAnswer() -> Int32 {
        switch delegate?.parserDidParseHead(self) ?? .framed {
        case .framed: return 0
        case .none: return 1
        case .pauseAfterHead: return Int32(HPE_PAUSED.rawValue)
        case .reject(let error): return fail(error.kind, error.reason)
        }
    }

    func body(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        delegate?.parser(self, didParseBody: UnsafeRawBufferPointer(start: at, count: length))
        return 0
    }

    func chunkExtension(_ length: Int) -> Int32 {
        chunkExtensionBytes += length
        guard chunkExtensionBytes <= Self.maxChunkExtensionBytes else {
            return fail(.malformed, "chunk extensions exceed \(Self.maxChunkExtensionBytes / 1024) KiB")
        }
        return 0
    }

    func chunkHeader() -> Int32 {
        delegate?.parser(self, didStartChunkOfSize: state.pointee.content_length)
        return 0
    }

    func chunkComplete() -> Int32 {
        // The last chunk's completion comes after the trailers; the delegate ends the body with
        // the message instead.
        if inTrailers && state.pointee.content_length == 0 && head.isChunked && lastChunkSeen { return 0 }
        delegate?.parserDidFinishChunk(self)
        return 0
    }

    var lastChunkSeen: Bool { (UInt32(state.pointee.flags) & F_TRAILING.rawValue) != 0 }

    func messageComplete() -> Int32 {
        isInMessage = false
        // The empty line after the last chunk (and its trailers): checked in `feed`.
        if head.isChunked {
            deferred = .message
            return Int32(HPE_PAUSED.rawValue)
        }
        let pause = delegate?.parserDidFinishMessage(self) ?? false
        return pause ? Int32(HPE_PAUSED.rawValue) : 0
    }

    func fail(_ kind: HTTP1Error.Kind, _ reason: String) -> Int32 {
        pendingError = HTTP1Error(kind, reason)
        return Int32(HPE_USER.rawValue)
    }
}

// MARK: llhttp settings shared by every parser (llhttp keeps a pointer; it must outlive them)

/// Runs `body` on the parser that owns `state`. `_withUnsafeGuaranteedRef` skips the
/// retain/release pair of `takeUnretainedValue()`: the parser is alive for the whole
/// `llhttp_execute` call that invokes these callbacks.
@inline(__always)
private func withParser(_ state: UnsafeMutablePointer<llhttp_t>?, _ body: (HTTP1Parser) -> Int32) -> Int32 {
    Unmanaged<HTTP1Parser>.fromOpaque(state!.pointee.data)._withUnsafeGuaranteedRef(body)
}

/// The settings every parser hands `llhttp_init`, at an address that never changes: llhttp keeps
/// the pointer for the parser's life, so it cannot be `&` of a Swift variable (valid only for
/// the call). Allocated once, filled once, never freed (one per process, like OpenSSL's BIO
/// method in CiphertextBuffers), and only read afterwards — by llhttp.
struct ParserSettings: @unchecked Sendable {
    // @unchecked: the pointee is written once, inside the initializer of `shared` (which Swift
    // runs exactly once, thread-safely, before any reader has the pointer), and only read after.
    let pointer: UnsafePointer<llhttp_settings_t>

    static let shared: ParserSettings = {
        let settings = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        settings.initialize(to: llhttp_settings_t())
        llhttp_settings_init(settings)
        settings.pointee.on_message_begin = { withParser($0) { $0.messageBegin() } }
        settings.pointee.on_url = { state, at, length in withParser(state) { $0.url(at, length) } }
        settings.pointee.on_status = { state, at, length in withParser(state) { $0.status(at, length) } }
        settings.pointee.on_header_field = { state, at, length in withParser(state) { $0.headerField(at, length) } }
        settings.pointee.on_header_field_complete = { withParser($0) { $0.headerFieldComplete() } }
        settings.pointee.on_header_value = { state, at, length in withParser(state) { $0.headerValue(at, length) } }
        settings.pointee.on_header_value_complete = { withParser($0) { $0.headerValueComplete() } }
        settings.pointee.on_headers_complete = { withParser($0) { $0.headersComplete() } }
        settings.pointee.on_body = { state, at, length in withParser(state) { $0.body(at, length) } }
        settings.pointee.on_chunk_header = { withParser($0) { $0.chunkHeader() } }
        settings.pointee.on_chunk_extension_name = { state, _, length in withParser(state) { $0.chunkExtension(length) } }
        settings.pointee.on_chunk_extension_value = { state, _, length in withParser(state) { $0.chunkExtension(length) } }
        settings.pointee.on_chunk_complete = { withParser($0) { $0.chunkComplete() } }
        settings.pointee.on_message_complete = { withParser($0) { $0.messageComplete() } }
        return ParserSettings(pointer: UnsafePointer(settings))
    }()
}
