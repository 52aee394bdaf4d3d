// HTTP1Parser: llhttp behind a Swift API that the proxy drives with raw socket bytes.
//
// Design: llhttp does the tokenising and framing in strict mode (no lenient flag is ever set;
// llhttp 8, Debian 12's, built with LLHTTP_STRICT_MODE, llhttp 9, Debian 13's, strict as built);
// this type adds what llhttp leaves to its user — head size and field count limits, Host rules,
// forbidden bytes in values, extra spaces in the request line and the bare LFs llhttp 8 takes
// (llhttp 9 refuses those itself) — and collects the head into one reused buffer as offsets (see
// HTTPHead), so a warm connection parses without allocating. The pieces llhttp reports (target,
// names, values) are not copied one by one: each is noted as the offset it will have, and the
// bytes from a read's first piece to its last are copied in one go (`copyHeadPieces`), when
// the head is complete or the read ends. Body bytes are not copied: the
// delegate sees slices of the caller's input buffer and forwards them.
//
// llhttp callbacks (`ParserCallbacks`, routed by `ParserSettings`) are non-capturing closures
// that recover the parser from `llhttp_t.data`.
// The parser pauses after every complete message when the delegate asks (pipelined requests are
// handled one at a time): `feed` then reports how many bytes it consumed, and the caller keeps
// the rest until it calls `resume()` and feeds them again.

internal import CLLHTTP
import ByteBuffers
import HTTPFields

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
    let state: UnsafeMutablePointer<llhttp_t>
    var headBytesSeen = 0
    var inTrailers = false
    var inFieldName = false
    /// Where the pieces of the head llhttp reported in this read begin, while they are not yet
    /// copied into `head.bytes` (nil: none). The head is copied a read's worth at a time rather
    /// than piece by piece: a piece's offset is where it will land, `head.bytes.count` plus its
    /// distance from here; `copyHeadPieces()` copies up to `piecesEnd`, the end of the last one.
    var uncopiedFrom: UnsafePointer<CChar>?
    var piecesEnd: UnsafePointer<CChar>?
    /// The most bytes between two pieces of one read that are copied with them (the white
    /// space around a value, a line break): past this the pieces are copied apart, so bytes
    /// that are not part of the head (long runs of white space) never fill its buffer.
    static let maxCopiedGap = 64
    /// The field being read: its name's place once the name is complete, its value's as the
    /// value arrives; appended to the head when the value completes (one write per field).
    var pendingField = FieldSlot(nameStart: 0, nameLength: 0, valueStart: 0, valueLength: 0, known: .other, listedInConnection: false)
    // Bounds of the bytes given to the current `feed`, and what is known of the value being
    // read, for telling a value split between reads from a folded one.
    var feedStart: UnsafePointer<CChar>?
    var feedEnd: UnsafePointer<CChar>?
    var valuePieces = 0
    var previousValuePieceEndedRead = false
    /// The last byte other than SP or HTAB of the bytes fed before this `feed`, for telling a
    /// value that is the fold of an empty one (`X:` CRLF SP `value`) when it starts a read.
    var lastNonBlankBeforeFeed: UInt8 = 0
    /// The last four bytes fed before this `feed`, the latest in the low byte: line breaks are
    /// checked a few bytes back from where llhttp reports, which may be in the previous read.
    var bytesBeforeFeed: UInt32 = 0
    /// The line break ending the start line was checked (at the first field name).
    var startLineChecked = false
    /// The space after the request target was the last byte of the previous read.
    var targetSpaceEndedRead = false
    /// Chunk-extension bytes of the current message (llhttp sets no bound on them).
    var chunkExtensionBytes = 0
    static let maxChunkExtensionBytes = 16 * 1024
    /// Where the last header value of this `feed` ended (nil: none yet, or empty).
    var lastValueEnd: UnsafePointer<CChar>?
    /// A message boundary whose empty line is checked in `feed`, where llhttp says where it
    /// ended, before the delegate hears of it.
    enum DeferredBoundary { case none, head, message }
    var deferred = DeferredBoundary.none
    var pendingError: HTTP1Error?
    var paused = false
    /// Between the first byte of a message and its end.
    public internal(set) var isInMessage = false

    public init(kind: Kind, limits: HeaderLimits) {
        self.kind = kind
        self.limits = limits
        state = .allocate(capacity: 1)
        state.initialize(to: llhttp_t())
        llhttp_init(state, kind == .request ? HTTP_REQUEST : HTTP_RESPONSE, ParserSettings.shared.pointer)
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
        defer {
            // Pieces of a head this read did not complete, before the read's bytes go away.
            if uncopiedFrom != nil { copyHeadPieces() }
            rememberTail(of: bytes)
        }
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

    /// Where the piece of `length` bytes at `at` lies in `head.bytes` (once copied).
    @inline(__always)
    func headOffset(of at: UnsafePointer<CChar>, length: Int) -> Int {
        if let from = uncopiedFrom, let end = piecesEnd {
            if at - end <= Self.maxCopiedGap {
                piecesEnd = at + length
                return head.bytes.count + (at - from)
            }
            copyHeadPieces()
        }
        uncopiedFrom = at
        piecesEnd = at + length
        return head.bytes.count
    }

    /// The bytes of the head from `offset` on, contiguous up to the end of the last piece:
    /// in this read while they are not copied yet, else (copying the rest now) in `head.bytes`.
    @inline(__always)
    func headBytes(at offset: Int) -> UnsafeRawPointer? {
        let copied = head.bytes.count
        if offset >= copied, let from = uncopiedFrom { return UnsafeRawPointer(from + (offset - copied)) }
        copyHeadPieces()
        return head.bytes.baseAddress.map { UnsafeRawPointer($0 + offset) }
    }

    /// Copies the pieces not yet in `head.bytes` (and what lies between them) into it.
    func copyHeadPieces() {
        guard let from = uncopiedFrom, let end = piecesEnd else { return }
        head.bytes.append(UnsafeRawBufferPointer(start: from, count: from.distance(to: end)))
        uncopiedFrom = nil
        piecesEnd = nil
    }

    /// Keeps what the next read's checks look back at: the last four bytes, and the last one
    /// that is not SP or HTAB. Loops written out: this runs for every read.
    @inline(__always)
    func rememberTail(of bytes: UnsafeRawBufferPointer) {
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

    /// The method llhttp did not know, when its line is a request line (a token of up to 32
    /// bytes, a space, a target, ` HTTP/`) with a method the relay does not implement rather than
    /// garbage: read from the start of its line in this read.
    func unknownMethodToken() -> String? {
        guard kind == .request, let feedStart, let feedEnd, let failedAt = llhttp_get_error_pos(state) else { return nil }
        var start = failedAt
        while start > feedStart, (start - 1).pointee != 0x0A, failedAt - start < 32 { start -= 1 }
        var end = start
        while end < feedEnd, ASCII.isTokenCharacter(UInt8(bitPattern: end.pointee)), end - start < 32 { end += 1 }
        guard end > start, end < feedEnd, end.pointee == 0x20 else { return nil }
        // Then a target and ` HTTP/`: a request line, not a line of something else.
        var afterTarget = end + 1
        while afterTarget < feedEnd, afterTarget.pointee > 0x20 { afterTarget += 1 }
        guard afterTarget > end + 1, feedEnd - afterTarget >= 6,
              Array(UnsafeRawBufferPointer(start: afterTarget, count: 6)) == Array(" HTTP/".utf8) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: start, count: end - start), as: UTF8.self)
    }

    /// Whether the line break that ends at `boundary` (just after its LF) is CRLF. RFC 9112
    /// §2.2 lets a recipient accept a bare LF; the relay does not, since its upstream might
    /// not, and llhttp 8 takes one as the empty line that ends a head or chunked body.
    func lineBreakIsCRLF(before boundary: UnsafePointer<CChar>) -> Bool {
        byte(at: boundary - 2) == 0x0D
    }

    /// The byte at `position`, in this read or up to four bytes before it (0 before that).
    @inline(__always)
    func byte(at position: UnsafePointer<CChar>) -> UInt8 {
        guard let feedStart else { return 0 }
        if position >= feedStart { return UInt8(bitPattern: position.pointee) }
        let back = feedStart - position
        return back <= 4 ? UInt8(truncatingIfNeeded: bytesBeforeFeed >> (8 * UInt32(back - 1))) : 0
    }

    func consumedCount(from start: UnsafePointer<CChar>) -> Int {
        guard let position = llhttp_get_error_pos(state) else { return 0 }
        return start.distance(to: position)
    }

    func takeError(_ rc: llhttp_errno_t) -> HTTP1Error {
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
    var headComplete = false

    /// Bytes still due of a body framed by Content-Length, while the parser is inside it and
    /// running (not paused, not failed); 0 otherwise (no body, a chunked or close-delimited one,
    /// a body skipped for HEAD or a 304, between messages).
    public var lengthFramedBodyRemaining: UInt64 {
        guard isInMessage, headComplete, !paused, llhttp_get_errno(state) == HPE_OK else { return 0 }
        let flags = UInt32(state.pointee.flags)
        guard flags & F_CONTENT_LENGTH.rawValue != 0, flags & (F_CHUNKED.rawValue | F_SKIPBODY.rawValue) == 0 else { return 0 }
        return state.pointee.content_length
    }

    /// The most `skipBody` takes now: all of the body but its last byte, which the parser must
    /// see to end the message.
    public var skippableBodyBytes: Int { Int(clamping: max(lengthFramedBodyRemaining, 1) - 1) }

    /// `count` body bytes went past the parser (spliced between sockets): they count as parsed.
    /// At most `skippableBodyBytes`, so the message still ends in `feed`, with its callbacks,
    /// when its last bytes arrive.
    public func skipBody(_ count: Int) {
        precondition(count <= skippableBodyBytes, "skipping the body's last byte")
        state.pointee.content_length -= UInt64(count)
    }

    /// Forgets everything, for a connection reused for a new exchange, or a parser lent to
    /// another connection: nothing of the bytes fed before is looked back at.
    public func reset() {
        llhttp_reset(state)
        paused = false
        isInMessage = false
        headComplete = false
        pendingError = nil
        deferred = .none
        head.reset()
        headBytesSeen = 0
        inTrailers = false
        uncopiedFrom = nil
        piecesEnd = nil
        targetSpaceEndedRead = false
        bytesBeforeFeed = 0
        lastNonBlankBeforeFeed = 0
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

    /// Records why the message is refused, for `feed` to report, and tells llhttp to stop.
    func fail(_ kind: HTTP1Error.Kind, _ reason: String) -> Int32 {
        pendingError = HTTP1Error(kind, reason)
        return Int32(HPE_USER.rawValue)
    }

    /// The last chunk (size 0) was read: its completion ends the trailers, not a chunk.
    var lastChunkSeen: Bool { (UInt32(state.pointee.flags) & F_TRAILING.rawValue) != 0 }

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
}
