// Reading a complete head, or a complete trailer section, into an HTTPHead in one pass.
//
// llhttp has already accepted these bytes (strict mode: tokens, the version, the framing fields)
// when they are read here; what it leaves to its user is done here, line by line: where the
// target, the reason, each name and each value lie, which known header a name is, the field
// count, Host and the fetch-metadata fields, and what the relay refuses beyond llhttp 8 (a bare
// LF ending any line, more than one space in the request line, obsolete line folding, NUL or CR
// in a value, an empty name, framing fields in trailers). Pure: bytes in, slots and flags out,
// tested on its own (HeadSectionReaderTests) and through the parser.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension HTTPHead {
    enum Section { case head, trailers }

    /// Reads the complete `section` that begins at `start` and ends, within `count` bytes, with its
    /// empty line; `start` lies at `base` in `bytes` (the bytes are copied there before anything
    /// reads the head). Returns the section's length, its empty line included. The section's size
    /// is counted up to the end of its last line (the empty line is not counted).
    func read(_ section: Section, of kind: HTTP1Parser.Kind, at start: UnsafeRawPointer, count: Int, base: Int,
              limits: HeaderLimits) throws(HTTP1Error) -> Int {
        @inline(__always) func byte(_ offset: Int) -> UInt8 { start.load(fromByteOffset: offset, as: UInt8.self) }
        var position = 0
        if section == .head {
            guard let lineFeedAt = memchr(start, 0x0A, count) else { throw HTTP1Error(.malformed, "the head has no end") }
            let lineEnd = start.distance(to: UnsafeRawPointer(lineFeedAt)) - 1
            guard lineEnd > 0, byte(lineEnd) == 0x0D else { throw HTTP1Error(.malformed, "a bare LF ends the start line") }
            try readStartLine(of: kind, at: start, count: lineEnd, base: base)
            position = lineEnd + 2
        }
        let trailers = section == .trailers
        let lookalikes = kind == .request
        // Counted down: one value live across the loop, not a count and its limit.
        var fieldsLeft = max(limits.maxFieldCount, 0)
        while true {
            guard position < count else { throw HTTP1Error(.malformed, "the head has no end") }
            // A name most often starts with a letter: one comparison for it. Below `A` are CR
            // (the empty line), LF, SP, HTAB, ':' and a few token characters.
            let first = byte(position)
            if first < 0x41 {
                if first == 0x0D {
                    guard position &+ 1 < count, byte(position &+ 1) == 0x0A else { throw HTTP1Error(.malformed, "the head has no end") }
                    guard position <= limits.maxHeadBytes else {
                        throw HTTP1Error(.headTooLarge, trailers ? "trailers exceed maxHeaderBytes" : "header block exceeds maxHeaderBytes")
                    }
                    return position &+ 2
                }
                if first == 0x0A {
                    throw HTTP1Error(.malformed, trailers ? "a bare LF ends the chunked body" : "a bare LF ends the head")
                }
                // llhttp 8 takes a line that starts with white space as the previous value's fold;
                // RFC 9112 §5.2 lets a server reject it with 400.
                if first == 0x20 || first == 0x09 { throw HTTP1Error(.malformed, "obsolete line folding in a header value") }
                // llhttp 8 takes a line that starts with ':' as a field whose name is empty; RFC
                // 9110 §5.1 requires at least one token character.
                if first == 0x3A {
                    throw HTTP1Error(.malformed, trailers ? "a trailer field with an empty name" : "a header field with an empty name")
                }
            }
            let nameEnd = Self.firstColonOrLF(in: start, from: position &+ 1, count: count)
            guard nameEnd < count, byte(nameEnd) == 0x3A else { throw HTTP1Error(.malformed, "a field line without a colon") }
            // Classified before the rest of the line is read (it has no effect and cannot fail):
            // fewer values are then live across the call, which most names (none the relay
            // knows, told by their length and first letter) do not need.
            var known = KnownHeader.other
            if KnownHeader.mayBeKnown(length: nameEnd &- position, first: first) {
                known = KnownHeader.classify(UnsafeRawBufferPointer(start: start + position, count: nameEnd &- position),
                                             lookalikes: lookalikes)
            }
            // The value ends at the line's CR; a NUL, a CR not before LF, or a bare LF ends it
            // otherwise (llhttp 8 in strict mode refuses all but the bare LF itself).
            let lineEnd = Self.firstLineBreakOrNUL(in: start, from: nameEnd &+ 1, count: count)
            guard lineEnd < count else { throw HTTP1Error(.malformed, "the head has no end") }
            guard byte(lineEnd) == 0x0D, lineEnd &+ 1 < count, byte(lineEnd &+ 1) == 0x0A else {
                if byte(lineEnd) == 0x0A { throw HTTP1Error(.malformed, "a bare LF ends a field line") }
                throw HTTP1Error(.invalidHeaderValue, "header value contains a NUL, CR or LF byte")
            }
            if fieldsLeft == 0 {
                throw HTTP1Error(.tooManyHeaders, trailers ? "more than maxHeaderCount trailer fields" : "more than maxHeaderCount header fields")
            }
            fieldsLeft &-= 1
            // White space around the value is not part of it (RFC 9110 §5.5). Usually one
            // space before it and none after: two comparisons.
            var valueStart = nameEnd &+ 1
            if valueStart < lineEnd && byte(valueStart) == 0x20 { valueStart &+= 1 }
            while valueStart < lineEnd, byte(valueStart) == 0x20 || byte(valueStart) == 0x09 { valueStart &+= 1 }
            var valueEnd = lineEnd
            while valueEnd > valueStart, byte(valueEnd &- 1) == 0x20 || byte(valueEnd &- 1) == 0x09 { valueEnd &-= 1 }
            let field = FieldSlot(nameStart: Int32(truncatingIfNeeded: base &+ position),
                                  nameLength: Int32(truncatingIfNeeded: nameEnd &- position),
                                  valueStart: Int32(truncatingIfNeeded: base &+ valueStart),
                                  valueLength: Int32(truncatingIfNeeded: valueEnd &- valueStart),
                                  known: known, listedInConnection: false,
                                  arrivedAsWritten: valueStart == nameEnd &+ 2 && byte(nameEnd &+ 1) == 0x20 && valueEnd == lineEnd)
            position = lineEnd &+ 2
            if trailers {
                // RFC 9110 §6.5.1: framing fields have no business in trailers, and llhttp would
                // take a Content-Length there as the length of the message it is ending.
                if known == .contentLength || known == .transferEncoding {
                    throw HTTP1Error(.malformed, "a trailer field that frames the message (Content-Length or Transfer-Encoding)")
                }
                trailerList.append(field)
                continue
            }
            // Appended before the known fields are noted (at the index it then has): the field's
            // values are dead by then, so the rare known field keeps nothing live but the loop's.
            fieldList.append(field)
            // Most fields are none the relay acts on: one comparison for them.
            if known != .other {
                let index = fieldList.count &- 1
                switch known {
                case .transferEncoding:
                    // Noted here, not from llhttp's flag, which an empty value does not set.
                    hasTransferEncoding = true
                case .host:
                    if hostIndex != nil { throw HTTP1Error(.badHost, "more than one Host header") }
                    hostIndex = index
                    hostStart = Int(field.valueStart)
                    hostLength = Int(field.valueLength)
                case .connection:
                    hasConnectionField = true
                case .origin, .secFetchSite, .secFetchMode, .secFetchDest:
                    fetchMetadata.note(known, at: index)
                default:
                    break
                }
            }
        }
    }

    /// The first byte from `offset` on (`count` if none) for which `matches` sets the high bit
    /// of its lane: eight bytes a load while eight remain, then one at a time. The high bit of a
    /// lane of `(w - 1…1) & ~w & 8…8` is set for a zero lane, exactly for the lowest one (a
    /// borrow only runs upwards), which is all that is read.
    @inline(__always)
    private static func firstMatch(in start: UnsafeRawPointer, from offset: Int, count: Int,
                                   _ matches: (UInt64) -> UInt64) -> Int {
        var offset = offset
        // Two words a turn while sixteen bytes remain (one test of the end for both).
        while offset &+ 16 <= count {
            let hits = matches(start.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            if hits != 0 { return offset &+ hits.trailingZeroBitCount >> 3 }
            let next = matches(start.loadUnaligned(fromByteOffset: offset &+ 8, as: UInt64.self))
            if next != 0 { return offset &+ 8 &+ next.trailingZeroBitCount >> 3 }
            offset &+= 16
        }
        while offset &+ 8 <= count {
            let hits = matches(start.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            if hits != 0 { return offset &+ hits.trailingZeroBitCount >> 3 }
            offset &+= 8
        }
        while offset < count {
            if matches(UInt64(start.load(fromByteOffset: offset, as: UInt8.self))) & 0x80 != 0 { return offset }
            offset &+= 1
        }
        return count
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// High bits of the lanes of `word` that are zero (exact for the lowest one).
    @inline(__always)
    private static func zeroLanes(_ word: UInt64) -> UInt64 { (word &- ones) & ~word & highs }

    /// The first CR, LF or NUL from `offset` on. Searched as the first byte below 0x0E (one
    /// subtraction a word), going on past any other such byte: HTAB may stand in a value, and
    /// the other control bytes llhttp has refused.
    @inline(__always)
    static func firstLineBreakOrNUL(in start: UnsafeRawPointer, from offset: Int, count: Int) -> Int {
        var offset = offset
        while true {
            offset = firstMatch(in: start, from: offset, count: count) { ($0 &- ones &* 0x0E) & ~$0 & highs }
            guard offset < count else { return count }
            let byte = start.load(fromByteOffset: offset, as: UInt8.self)
            if byte == 0x0D || byte == 0x0A || byte == 0 { return offset }
            offset &+= 1
        }
    }

    /// The first ':' or LF from `offset` on.
    @inline(__always)
    static func firstColonOrLF(in start: UnsafeRawPointer, from offset: Int, count: Int) -> Int {
        firstMatch(in: start, from: offset, count: count) { zeroLanes($0 ^ (ones &* 0x3A)) | zeroLanes($0 ^ (ones &* 0x0A)) }
    }

    /// Where the target or the reason lies in the start line (`count` bytes, its CRLF not
    /// included), which llhttp accepted: `method SP target SP version`, `version SP status SP reason`.
    private func readStartLine(of kind: HTTP1Parser.Kind, at start: UnsafeRawPointer, count: Int, base: Int) throws(HTTP1Error) {
        @inline(__always) func byte(_ offset: Int) -> UInt8 { offset < count ? start.load(fromByteOffset: offset, as: UInt8.self) : 0 }
        @inline(__always) func space(from offset: Int) -> Int? {
            guard offset < count, let found = memchr(start + offset, 0x20, count - offset) else { return nil }
            return start.distance(to: UnsafeRawPointer(found))
        }
        // A method is a few letters; a status line starts `HTTP/x.y ` (llhttp checked both).
        var firstSpace = kind == .response && byte(8) == 0x20 ? 8 : 0
        while firstSpace < count, byte(firstSpace) != 0x20 { firstSpace &+= 1 }
        guard firstSpace < count else { throw HTTP1Error(.malformed, "a start line without a space") }
        if kind == .response {
            // llhttp reports everything after the space that follows the status code, up to the
            // line break, as the reason; none when the code is followed by the line break.
            var offset = firstSpace + 1
            while offset < count, byte(offset) &- 0x30 < 10 { offset += 1 }
            if offset < count {
                reasonStart = base + offset + 1
                reasonLength = count - offset - 1
            }
            return
        }
        // `method SP target SP HTTP/x.y`: one space each, not more (llhttp 8 skips extra ones).
        let targetStart = firstSpace + 1
        guard let targetEnd = space(from: targetStart) else { throw HTTP1Error(.malformed, "a request line without a version") }
        guard targetEnd > targetStart, byte(targetEnd + 1) != 0x20 else {
            throw HTTP1Error(.malformed, "more than one space in the request line")
        }
        self.targetStart = base + targetStart
        targetLength = targetEnd - targetStart
    }
}
