// HTTP1Parser: llhttp behind a Swift API that the proxy drives with raw socket bytes.
//
// Design: llhttp does the tokenising and framing in strict mode (no lenient flag is ever set);
// this type adds what llhttp leaves to its user — head size and field count limits, Host rules,
// forbidden bytes in values — and collects the head into one reused buffer as offsets (see
// HTTPHead), so a warm connection parses without allocating. Body bytes are not copied: the
// delegate sees slices of the caller's input buffer and forwards them.
//
// llhttp callbacks are non-capturing closures that recover the parser from `llhttp_t.data`.
// The parser pauses after every complete message when the delegate asks (pipelined requests are
// handled one at a time): `feed` then reports how many bytes it consumed, and the caller keeps
// the rest until it calls `resume()` and feeds them again.

internal import CLLHTTP
import ByteBuffers
import HTTPFields

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

public struct HeaderLimits: Sendable {
    public var maxHeadBytes: Int
    public var maxFieldCount: Int
    public init(maxHeadBytes: Int, maxFieldCount: Int) {
        self.maxHeadBytes = maxHeadBytes
        self.maxFieldCount = maxFieldCount
    }
}

public final class HTTP1Parser {
    public enum Kind: Sendable { case request, response }

    public enum BodyExpectation {
        /// Framing decides (Content-Length, chunked, or until close for responses).
        case framed
        /// No body whatever the headers say (a response to HEAD, or 1xx/204/304).
        case none
        /// Framing decides, but stop here: `feed` reports `.paused` with the bytes of the head
        /// consumed, and parsing goes on after `resume()` (the relay waits for a token).
        case pauseAfterHead
        /// The delegate refuses the message (a 101 nobody asked for): `feed` fails with this.
        case reject(HTTP1Error)
    }

    public enum FeedResult: Equatable {
        /// Every byte was consumed; feed more when it arrives.
        case consumed
        /// Paused after a complete message; `consumed` bytes were used, the rest belongs to the
        /// next message. Call `resume()` before feeding them.
        case paused(consumed: Int)
        /// The connection switches protocols after the message: the bytes from `consumed` on are
        /// the other protocol's.
        case upgraded(consumed: Int)
        case failed(HTTP1Error)
    }

    public let kind: Kind
    public let head = HTTPHead()
    public var limits: HeaderLimits
    /// Unowned: the delegate owns the parser and outlives it.
    public unowned(unsafe) var delegate: (any HTTP1ParserDelegate)?

    /// Heap-allocated, not a stored struct: llhttp calls back into the parser during
    /// `llhttp_execute`, and `&storedProperty` would then be an overlapping access.
    private let state: UnsafeMutablePointer<llhttp_t>
    private var headBytesSeen = 0
    private var inTrailers = false
    private var fieldStart = 0
    private var inFieldName = false
    // Bounds of the bytes given to the current `feed`, and what is known of the value being
    // read, for telling a value split between reads from a folded one.
    private var feedStart: UnsafePointer<CChar>?
    private var feedEnd: UnsafePointer<CChar>?
    private var valuePieces = 0
    private var previousValuePieceEndedRead = false
    /// The last byte other than SP or HTAB of the bytes fed before this `feed`, for telling a
    /// value that is the fold of an empty one (`X:` CRLF SP `value`) when it starts a read.
    private var lastNonBlankBeforeFeed: UInt8 = 0
    /// The last four bytes fed before this `feed`, the latest in the low byte: line breaks are
    /// checked a few bytes back from where llhttp reports, which may be in the previous read.
    private var bytesBeforeFeed: UInt32 = 0
    /// The line break ending the start line was checked (at the first field name).
    private var startLineChecked = false
    /// The space after the request target was the last byte of the previous read.
    private var targetSpaceEndedRead = false
    /// Chunk-extension bytes of the current message (llhttp sets no bound on them).
    private var chunkExtensionBytes = 0
    static let maxChunkExtensionBytes = 16 * 1024
    /// Where the last header value of this `feed` ended (nil: none yet, or empty).
    private var lastValueEnd: UnsafePointer<CChar>?
    /// A message boundary whose empty line is checked in `feed`, where llhttp says where it
    /// ended, before the delegate hears of it.
    private enum DeferredBoundary { case none, head, message }
    private var deferred = DeferredBoundary.none
    private var pendingError: HTTP1Error?
    private var paused = false
    /// Between the first byte of a message and its end.
    public private(set) var isInMessage = false

    public init(kind: Kind, limits: HeaderLimits) {
        self.kind = kind
        self.limits = limits
        state = .allocate(capacity: 1)
        state.initialize(to: llhttp_t())
        llhttp_init(state, kind == .request ? HTTP_REQUEST : HTTP_RESPONSE, &parserSettings)
    }

    deinit {
        state.deallocate()
    }

    /// Parses `bytes`. Data callbacks to the delegate happen inside this call.
    public func feed(_ bytes: UnsafeRawBufferPointer) -> FeedResult {
        guard bytes.count > 0, let base = bytes.baseAddress else { return .consumed }
        // `state.data` is set per call rather than once: `self` is a class, so its address is
        // stable, and setting it here keeps init free of escaping `self`.
        state.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let start = base.assumingMemoryBound(to: CChar.self)
        let end = start + bytes.count
        feedStart = start
        feedEnd = end
        lastValueEnd = nil
        defer { rememberTail(of: bytes) }
        if targetSpaceEndedRead {
            targetSpaceEndedRead = false
            if bytes[0] == 0x20 { return .failed(HTTP1Error(.malformed, "more than one space in the request line")) }
        }
        var rc = llhttp_execute(state, start, bytes.count)
        while rc == HPE_PAUSED && deferred != .none, let boundary = llhttp_get_error_pos(state) {
            let check = deferred
            deferred = .none
            guard lineBreakIsCRLF(before: boundary) else {
                return .failed(HTTP1Error(.malformed, check == .head ? "a bare LF ends the head" : "a bare LF ends the chunked body"))
            }
            // A head without fields: the start line's break comes right before the empty line.
            if check == .head && head.fields.isEmpty && !lineBreakIsCRLF(before: boundary - 2) {
                return .failed(HTTP1Error(.malformed, "a bare LF ends the start line"))
            }
            let answer: Int32
            if check == .head {
                answer = headDelegateAnswer()
            } else {
                answer = delegate?.parserDidFinishMessage(self) == true ? Int32(HPE_PAUSED.rawValue) : 0
            }
            switch answer {
            case 0:
                break
            case 1:
                // What on_headers_complete returning 1 would have done: no body.
                state.pointee.flags |= UInt16(F_SKIPBODY.rawValue)
            case Int32(HPE_PAUSED.rawValue):
                paused = true
                return .paused(consumed: start.distance(to: boundary))
            default:
                return .failed(takeError(HPE_USER))
            }
            llhttp_resume(state)
            rc = llhttp_execute(state, boundary, boundary.distance(to: end))
        }
        switch rc {
        case HPE_OK:
            return .consumed
        case HPE_PAUSED:
            paused = true
            return .paused(consumed: consumedCount(from: start))
        case HPE_PAUSED_UPGRADE:
            paused = true
            return .upgraded(consumed: consumedCount(from: start))
        default:
            return .failed(takeError(rc))
        }
    }

    /// Keeps what the next read's checks look back at: the last four bytes, and the last one
    /// that is not SP or HTAB. Loops written out: this runs for every read.
    @inline(__always)
    private func rememberTail(of bytes: UnsafeRawBufferPointer) {
        let count = bytes.count
        if count >= 4 {
            bytesBeforeFeed = UInt32(bytes[count - 4]) << 24 | UInt32(bytes[count - 3]) << 16
                | UInt32(bytes[count - 2]) << 8 | UInt32(bytes[count - 1])
        } else {
            for index in 0..<count { bytesBeforeFeed = bytesBeforeFeed << 8 | UInt32(bytes[index]) }
        }
        var index = count - 1
        while index >= 0 {
            let byte = bytes[index]
            if byte != 0x20 && byte != 0x09 {
                lastNonBlankBeforeFeed = byte
                return
            }
            index -= 1
        }
    }

    /// The method llhttp did not know, when it is a well-formed token followed by a space (a
    /// request line with a method the relay does not implement, not garbage): read from the
    /// start of its line in this read, up to 32 bytes.
    private func unknownMethodToken() -> String? {
        guard kind == .request, let feedStart, let feedEnd, let failedAt = llhttp_get_error_pos(state) else { return nil }
        var start = failedAt
        while start > feedStart, (start - 1).pointee != 0x0A, failedAt - start < 32 { start -= 1 }
        var end = start
        while end < feedEnd, ASCII.isTokenCharacter(UInt8(bitPattern: end.pointee)), end - start < 32 { end += 1 }
        guard end > start, end < feedEnd, end.pointee == 0x20 else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: start, count: end - start), as: UTF8.self)
    }

    /// Whether the line break that ends at `boundary` (just after its LF) is CRLF. RFC 9112
    /// §2.2 lets a recipient accept a bare LF; the relay does not, since its upstream might
    /// not, and llhttp 8 takes one as the empty line that ends a head or chunked body.
    private func lineBreakIsCRLF(before boundary: UnsafePointer<CChar>) -> Bool {
        byte(at: boundary - 2) == 0x0D
    }

    /// The byte at `position`, in this read or up to four bytes before it (0 before that).
    @inline(__always)
    private func byte(at position: UnsafePointer<CChar>) -> UInt8 {
        guard let feedStart else { return 0 }
        if position >= feedStart { return UInt8(bitPattern: position.pointee) }
        let back = feedStart - position
        return back <= 4 ? UInt8(truncatingIfNeeded: bytesBeforeFeed >> (8 * UInt32(back - 1))) : 0
    }

    private func consumedCount(from start: UnsafePointer<CChar>) -> Int {
        guard let position = llhttp_get_error_pos(state) else { return 0 }
        return start.distance(to: position)
    }

    private func takeError(_ rc: llhttp_errno_t) -> HTTP1Error {
        if let error = pendingError {
            pendingError = nil
            return error
        }
        if rc == HPE_INVALID_METHOD, let method = unknownMethodToken() {
            return HTTP1Error(.unsupportedMethod, "the method \(method) is not implemented")
        }
        let reason = llhttp_get_error_reason(state).map { String(cString: $0) } ?? "invalid message"
        return HTTP1Error(.malformed, "\(String(cString: llhttp_errno_name(rc))): \(reason)")
    }

    /// Continues after `.paused` (or `.upgraded`, when the other side declined the upgrade).
    public func resume() {
        guard paused else { return }
        paused = false
        if llhttp_get_errno(state) == HPE_PAUSED_UPGRADE {
            llhttp_resume_after_upgrade(state)
        } else {
            llhttp_resume(state)
        }
    }

    /// The peer closed. Completes a message delimited by the close (a response without length),
    /// or reports a truncated one.
    public func finish() -> HTTP1Error? {
        state.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let rc = llhttp_finish(state)
        if rc == HPE_OK || rc == HPE_PAUSED { return nil }
        return HTTP1Error(.truncated, "connection closed before the message was complete")
    }

    /// Whether the peer closing now would complete the current message (close-delimited body).
    /// Only after a complete head: llhttp answers yes for a response parser that has seen nothing.
    public var messageNeedsEOF: Bool { isInMessage && headComplete && llhttp_message_needs_eof(state) != 0 }
    private var headComplete = false

    /// Forgets everything, for a connection reused for a new exchange.
    public func reset() {
        llhttp_reset(state)
        paused = false
        isInMessage = false
        pendingError = nil
        head.reset()
        headBytesSeen = 0
        inTrailers = false
    }

    // MARK: Callbacks from llhttp

    fileprivate func messageBegin() -> Int32 {
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
    fileprivate func appendHeadBytes(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        headBytesSeen += length
        if headBytesSeen > limits.maxHeadBytes {
            return fail(.headTooLarge, inTrailers ? "trailers exceed maxHeaderBytes" : "header block exceeds maxHeaderBytes")
        }
        head.bytes.append(UnsafeRawBufferPointer(start: at, count: length))
        return 0
    }

    fileprivate func url(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
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

    fileprivate func status(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        if head.reasonLength == 0 { head.reasonStart = head.bytes.count }
        head.reasonLength += length
        return appendHeadBytes(at, length)
    }

    fileprivate func headerField(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
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

    fileprivate func headerFieldComplete() -> Int32 {
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
        let field = FieldSlot(nameStart: Int32(fieldStart), nameLength: Int32(nameLength),
                                valueStart: Int32(head.bytes.count), valueLength: 0,
                                known: KnownHeader(name: head.slice(fieldStart, nameLength), lookalikes: kind == .request),
                                listedInConnection: false)
        if inTrailers { head.trailers.append(field) } else { head.fields.append(field) }
        return 0
    }

    fileprivate func headerValue(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
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
    private func followsLineBreak(_ at: UnsafePointer<CChar>) -> Bool {
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

    fileprivate func headerValueComplete() -> Int32 {
        var field = inTrailers ? head.trailers.removeLast() : head.fields.removeLast()
        var end = head.bytes.count
        // llhttp leaves trailing white space in the value; it is not part of it (RFC 9110 §5.5).
        while end > Int(field.valueStart) {
            let byte = head.bytes.baseAddress!.load(fromByteOffset: end - 1, as: UInt8.self)
            guard byte == 0x20 || byte == 0x09 else { break }
            end -= 1
        }
        field.valueLength = Int32(end - Int(field.valueStart))
        for byte in head.value(field) where byte == 0 || byte == 0x0A || byte == 0x0D {
            return fail(.invalidHeaderValue, "header value contains a NUL, CR or LF byte")
        }
        if inTrailers {
            // RFC 9110 §6.5.1: framing fields have no business in trailers, and llhttp would
            // take a Content-Length there as the length of the message it is ending.
            if field.known == .contentLength || field.known == .transferEncoding {
                return fail(.malformed, "a trailer field that frames the message (Content-Length or Transfer-Encoding)")
            }
            head.trailers.append(field)
            return 0
        }
        // Counted here, not from llhttp's flag, which an empty value does not set.
        if field.known == .transferEncoding { head.hasTransferEncoding = true }
        if field.known == .host {
            if head.hostIndex != nil { return fail(.badHost, "more than one Host header") }
            head.hostIndex = head.fields.count
        }
        head.fields.append(field)
        return 0
    }

    fileprivate func headersComplete() -> Int32 {
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
    private func headDelegateAnswer() -> Int32 {
        switch delegate?.parserDidParseHead(self) ?? .framed {
        case .framed: return 0
        case .none: return 1
        case .pauseAfterHead: return Int32(HPE_PAUSED.rawValue)
        case .reject(let error): return fail(error.kind, error.reason)
        }
    }

    fileprivate func body(_ at: UnsafePointer<CChar>?, _ length: Int) -> Int32 {
        delegate?.parser(self, didParseBody: UnsafeRawBufferPointer(start: at, count: length))
        return 0
    }

    fileprivate func chunkExtension(_ length: Int) -> Int32 {
        chunkExtensionBytes += length
        guard chunkExtensionBytes <= Self.maxChunkExtensionBytes else {
            return fail(.malformed, "chunk extensions exceed \(Self.maxChunkExtensionBytes / 1024) KiB")
        }
        return 0
    }

    fileprivate func chunkHeader() -> Int32 {
        delegate?.parser(self, didStartChunkOfSize: state.pointee.content_length)
        return 0
    }

    fileprivate func chunkComplete() -> Int32 {
        // The last chunk's completion comes after the trailers; the delegate ends the body with
        // the message instead.
        if inTrailers && state.pointee.content_length == 0 && head.isChunked && lastChunkSeen { return 0 }
        delegate?.parserDidFinishChunk(self)
        return 0
    }

    private var lastChunkSeen: Bool { (UInt32(state.pointee.flags) & F_TRAILING.rawValue) != 0 }

    fileprivate func messageComplete() -> Int32 {
        isInMessage = false
        // The empty line after the last chunk (and its trailers): checked in `feed`.
        if head.isChunked {
            deferred = .message
            return Int32(HPE_PAUSED.rawValue)
        }
        let pause = delegate?.parserDidFinishMessage(self) ?? false
        return pause ? Int32(HPE_PAUSED.rawValue) : 0
    }

    private func fail(_ kind: HTTP1Error.Kind, _ reason: String) -> Int32 {
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

nonisolated(unsafe) private var parserSettings: llhttp_settings_t = {
    var s = llhttp_settings_t()
    llhttp_settings_init(&s)
    s.on_message_begin = { withParser($0) { $0.messageBegin() } }
    s.on_url = { state, at, length in withParser(state) { $0.url(at, length) } }
    s.on_status = { state, at, length in withParser(state) { $0.status(at, length) } }
    s.on_header_field = { state, at, length in withParser(state) { $0.headerField(at, length) } }
    s.on_header_field_complete = { withParser($0) { $0.headerFieldComplete() } }
    s.on_header_value = { state, at, length in withParser(state) { $0.headerValue(at, length) } }
    s.on_header_value_complete = { withParser($0) { $0.headerValueComplete() } }
    s.on_headers_complete = { withParser($0) { $0.headersComplete() } }
    s.on_body = { state, at, length in withParser(state) { $0.body(at, length) } }
    s.on_chunk_header = { withParser($0) { $0.chunkHeader() } }
    s.on_chunk_extension_name = { state, _, length in withParser(state) { $0.chunkExtension(length) } }
    s.on_chunk_extension_value = { state, _, length in withParser(state) { $0.chunkExtension(length) } }
    s.on_chunk_complete = { withParser($0) { $0.chunkComplete() } }
    s.on_message_complete = { withParser($0) { $0.messageComplete() } }
    return s
}()
