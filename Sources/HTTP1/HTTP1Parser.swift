// HTTP1Parser: llhttp behind a Swift API that the proxy drives with raw socket bytes.
//
// Design: llhttp does the tokenising and framing in strict mode (no lenient flag is ever set;
// llhttp 8, Debian 12's, built with LLHTTP_STRICT_MODE, llhttp 9, Debian 13's, strict as built);
// this type adds what llhttp leaves to its user — head size and field count limits, Host rules,
// forbidden bytes in values, extra spaces in the request line, folded values and the bare LFs
// llhttp 8 takes (llhttp 9 refuses those itself) — and collects the head into one reused buffer
// as offsets (see HTTPHead), so a warm connection parses without allocating.
//
// A head is read in one pass once llhttp has accepted all of it (`HTTPHead.read`), not piece by
// piece as llhttp reports names and values: llhttp is given no callback for the pieces of a head
// at all. The parser only needs to know where a head (or a trailer section) begins and ends.
// It begins at the read's first byte that is not CR or LF when the read starts between messages
// (llhttp skips those, and nothing else, before a message), else where llhttp pauses at
// on_message_begin (or, for trailers, at the last chunk's header); it ends where llhttp calls
// on_headers_complete (or ends a chunked message), which is in the same read in the usual case
// (the head is read where it lies, then copied), else where llhttp pauses there. Until it ends,
// each read's part of it is copied into the head's buffer, bounded by the size limit. Body bytes
// are not copied: the delegate sees slices of the caller's input buffer and forwards them.
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
    /// Unowned, and called without a retain: see the lifetime rule of `HTTP1ParserDelegate`.
    public var delegate: (any HTTP1ParserDelegate)? {
        get { delegateObject.flatMap { object in delegateType?.instance(at: object) } }
        set {
            delegateObject = newValue.map { Unmanaged.passUnretained($0 as AnyObject).toOpaque() }
            delegateType = newValue.map { type(of: $0) }
        }
    }
    /// The delegate as its address and its dynamic type: loading them copies no reference, so a
    /// call through them (`withDelegate`) needs no retain, where a call through an
    /// `unowned(unsafe)` existential copies it first (a retain and a release per call).
    private var delegateObject: UnsafeMutableRawPointer?
    private var delegateType: (any HTTP1ParserDelegate.Type)?

    /// Heap-allocated, not a stored struct: llhttp calls back into the parser during
    /// `llhttp_execute`, and `&storedProperty` would then be an overlapping access.
    let state: UnsafeMutablePointer<llhttp_t>
    var inTrailers = false
    /// The section (head or trailers) being collected, begun but not yet complete (nil: none).
    var collecting: HTTPHead.Section?
    /// Where the section being collected begins in this read; nil when it began in an earlier
    /// read (its bytes so far are in `head.bytes`, from `sectionBase`).
    var sectionFrom: UnsafePointer<CChar>?
    var sectionBase = 0
    /// The read began between messages and no message ended in it yet: a message that begins
    /// in it begins at its first byte other than CR or LF.
    var messageMayBeginAtFeedStart = false
    // Bounds of the bytes given to the current `feed`.
    var feedStart: UnsafePointer<CChar>?
    var feedEnd: UnsafePointer<CChar>?
    /// Chunk-extension bytes of the current message (llhttp sets no bound on them).
    var chunkExtensionBytes = 0
    static let maxChunkExtensionBytes = 16 * 1024
    /// Where llhttp was paused for `feed` to go on with a position only it knows: a message's
    /// first byte, the end of a head that began in an earlier read, the first byte of a trailer
    /// section, the end of a chunked message (its trailers).
    enum DeferredBoundary { case none, messageBegin, head, trailers, message }
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
        sectionFrom = nil
        messageMayBeginAtFeedStart = !isInMessage
        var rc = llhttp_execute(state, start, bytes.count)
        while rc == HPE_PAUSED && deferred != .none, let boundary = llhttp_get_error_pos(state) {
            let check = deferred
            deferred = .none
            var answer: Int32 = 0
            switch check {
            case .messageBegin:
                begin(.head, at: boundary)
            case .trailers:
                begin(.trailers, at: boundary)
            case .head:
                keepSectionBytes(upTo: boundary)
                answer = completeHead(at: UnsafeRawPointer(head.bytes.baseAddress! + sectionBase), count: head.bytes.count - sectionBase)
            case .message:
                if collecting == .trailers {
                    keepSectionBytes(upTo: boundary)
                    do {
                        _ = try head.read(.trailers, of: kind, at: UnsafeRawPointer(head.bytes.baseAddress! + sectionBase),
                                          count: head.bytes.count - sectionBase, base: sectionBase, limits: limits)
                    } catch {
                        return .failed(error)
                    }
                    collecting = nil
                }
                answer = withDelegate { $0.parserDidFinishMessage(self) } == true ? Int32(HPE_PAUSED.rawValue) : 0
            case .none:
                break
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
            // A head (or trailers) this read did not complete: its bytes, before they go away.
            if collecting != nil {
                let received = head.bytes.count - sectionBase + (sectionFrom ?? start).distance(to: end)
                // Incomplete, the section is longer than what came of it, and all but its last
                // CRLF counts: one byte more than the limit may have come of a head that fits.
                guard received <= limits.maxHeadBytes + 1 else {
                    return .failed(HTTP1Error(.headTooLarge, inTrailers ? "trailers exceed maxHeaderBytes" : "header block exceeds maxHeaderBytes"))
                }
                keepSectionBytes(upTo: end)
            }
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

    /// A head or a trailer section begins at `at`, in this read.
    @inline(__always)
    func begin(_ section: HTTPHead.Section, at: UnsafePointer<CChar>) {
        collecting = section
        sectionFrom = at
        sectionBase = head.bytes.count
    }

    /// Copies the bytes of the section being collected that this read holds, up to `end`.
    func keepSectionBytes(upTo end: UnsafePointer<CChar>) {
        guard let from = sectionFrom ?? feedStart, from < end else { return }
        head.bytes.append(UnsafeRawBufferPointer(start: from, count: from.distance(to: end)))
        sectionFrom = nil
    }

    /// The head is complete and lies at `start` (in this read, or in `head.bytes` at
    /// `sectionBase`) within `count` bytes: reads it, checks it and asks the delegate; returns an
    /// llhttp status for on_headers_complete.
    func completeHead(at start: UnsafeRawPointer, count: Int) -> Int32 {
        // Read from llhttp's state as its accessors do, without a call each.
        head.method = state.pointee.method
        head.statusCode = Int(state.pointee.status_code)
        head.versionMajor = state.pointee.http_major
        head.versionMinor = state.pointee.http_minor
        // An HTTP/0.9 request line has no version and the request no fields: nothing to read.
        if head.versionMajor == 0 { return fail(.malformed, "HTTP/0.9 is not supported") }
        let length: Int
        do {
            length = try head.read(.head, of: kind, at: start, count: count, base: sectionBase, limits: limits)
        } catch {
            return fail(error.kind, error.reason)
        }
        if sectionFrom != nil {
            head.bytes.append(UnsafeRawBufferPointer(start: start, count: length))
            sectionFrom = nil
        }
        collecting = nil
        let flags = UInt32(state.pointee.flags)
        head.isChunked = flags & F_CHUNKED.rawValue != 0
        head.contentLength = flags & F_CONTENT_LENGTH.rawValue != 0 ? state.pointee.content_length : nil
        head.keepAlive = llhttp_should_keep_alive(state) != 0
        head.isUpgrade = state.pointee.upgrade != 0
        head.markConnectionListedFields()
        if let problem = head.framingProblem(of: kind) { return fail(problem.kind, problem.reason) }
        inTrailers = true
        headComplete = true
        return headDelegateAnswer()
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
        // Tested first: assigning nil releases the old value's reason even when there is none,
        // a runtime call per reset (one per exchange on a reused upstream connection).
        if pendingError != nil { pendingError = nil }
        deferred = .none
        head.reset()
        inTrailers = false
        collecting = nil
        sectionFrom = nil
    }

    /// The delegate's answer to the head, as llhttp's on_headers_complete status.
    func headDelegateAnswer() -> Int32 {
        switch withDelegate({ $0.parserDidParseHead(self) }) ?? .framed {
        case .framed: return 0
        case .none: return 1
        case .pauseAfterHead: return Int32(HPE_PAUSED.rawValue)
        case .reject(let error): return fail(error.kind, error.reason)
        }
    }

    /// Calls the delegate, if there is one, without retaining it for the call: its lifetime rule
    /// (`HTTP1ParserDelegate`) keeps it alive, even should the call unset it.
    @inline(__always)
    func withDelegate<Result>(_ call: (any HTTP1ParserDelegate) -> Result) -> Result? {
        guard let delegateObject, let delegateType else { return nil }
        #if DEBUG
        // The rule checked where the tests run (debug builds, the sanitizers'): a delegate whose
        // last strong reference went during its own call would be used after it was freed.
        weak let held = delegateType.instance(at: delegateObject)
        defer { assert(held != nil, "the parser's delegate lost its last strong reference during its own call") }
        #endif
        return delegateType.withUnretained(delegateObject, call)
    }

    /// Records why the message is refused, for `feed` to report, and tells llhttp to stop.
    func fail(_ kind: HTTP1Error.Kind, _ reason: String) -> Int32 {
        pendingError = HTTP1Error(kind, reason)
        return Int32(HPE_USER.rawValue)
    }
}
