import HTTPFields

/// Request-path normalization, done once per request before routing so that routing and the
/// upstream see the same path (no `/public/../admin` slipping past a `pathPrefix`).
///
/// Works on bytes into a caller-owned buffer: with a buffer reused across requests
/// (`removeAll(keepingCapacity:)` is done here), normalizing allocates nothing.
public enum RequestPath {
    /// Normalizes the path part of a request-target (the caller has split off `?query`) into
    /// `output`, replacing its contents. Returns false when the path is malformed (answer 400):
    /// it does not start with `/`, has a bad `%` escape, or holds a control character, a
    /// space, DEL, `#` or `?`.
    ///
    /// - `%XX` of an unreserved character (ALPHA DIGIT `-` `.` `_` `~`) is decoded (`%41` → `A`);
    ///   every other escape is kept with uppercase hex (`%2f` → `%2F`), so `%2F` never splits
    ///   a segment.
    /// - Other printable bytes that RFC 3986 does not allow in a path (`"` `<` `>` `\` `^`
    ///   `` ` `` `{` `|` `}`) and non-ASCII bytes are percent-encoded, so the upstream gets a
    ///   well-formed URI with the same meaning.
    /// - `.` and `..` segments (also when written as `%2E`) are resolved per RFC 3986 §5.2.4;
    ///   `..` above the root stays at the root. Empty segments (`//`) and a trailing slash
    ///   are kept.
    public static func normalize(_ target: UnsafeRawBufferPointer, into output: inout [UInt8]) -> Bool {
        guard target.first == UInt8(ascii: "/"), isNormal(target) else {
            output.removeAll(keepingCapacity: true)
            return target.first == UInt8(ascii: "/") && walk(target, into: &output)
        }
        // One call that empties and fills: `removeAll` and `append` took twice the instructions.
        output.replaceSubrange(output.startIndex..<output.endIndex, with: target)
        return true
    }

    /// `normalize` segment by segment, escape by escape: for a path that is not its own normal
    /// form (`isNormal`). `output` is empty, `target` starts with `/`.
    static func walk(_ target: UnsafeRawBufferPointer, into output: inout [UInt8]) -> Bool {
        let count = target.count
        var index = 0
        var endsWithDotSegment = false
        while index < count {
            index += 1  // the "/" that starts the segment
            let segmentStart = output.count
            output.append(UInt8(ascii: "/"))
            while index < count {
                let byte = target[index]
                if byte == UInt8(ascii: "/") { break }
                if byte == UInt8(ascii: "%") {
                    guard index + 2 < count, let high = ASCII.hexDigitValue(target[index + 1]),
                          let low = ASCII.hexDigitValue(target[index + 2]) else { return false }
                    let decoded = high << 4 | low
                    if ASCII.isUnreserved(decoded) {
                        output.append(decoded)
                    } else {
                        appendEscaped(decoded, to: &output)
                    }
                    index += 3
                    continue
                }
                if ASCII.isPathCharacter(byte) {
                    output.append(byte)
                } else if byte <= 0x20 || byte == 0x7F || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "?") {
                    return false
                } else {
                    appendEscaped(byte, to: &output)
                }
                index += 1
            }
            endsWithDotSegment = removeDotSegment(startingAt: segmentStart, in: &output)
        }
        if endsWithDotSegment || output.isEmpty {
            output.append(UInt8(ascii: "/"))
        }
        return true
    }

    /// Whether `path` (starting with `/`) is its own normal form, as most requests' paths are:
    /// path characters and slashes only, no `%` escape, no segment starting with `.` (a dot
    /// segment, or a name like `.well-known`, which the full walk then reads). The walk would
    /// copy it byte by byte unchanged; this reads one table entry a byte and copies it whole.
    @inline(__always)
    static func isNormal(_ path: UnsafeRawBufferPointer) -> Bool {
        var afterSlash = false
        for byte in path {
            let kind = pathByteKinds.utf8Start[Int(byte)]
            if kind == UInt8(ascii: "p") {
                afterSlash = false
            } else if kind == UInt8(ascii: "/") {
                afterSlash = true
            } else if kind != UInt8(ascii: ".") || afterSlash {
                return false
            }
        }
        return true
    }

    /// What each of the 256 byte values is in a path, 32 a line: `p` a path character other
    /// than `.` (RFC 3986 pchar without pct-encoded: unreserved, sub-delims, `:`, `@`), `.`,
    /// `/`, `_` anything else (`%` and every byte from 128 included). RequestPathTests checks
    /// them against those characters. A literal: its bytes are constant data, read without a
    /// lazy global.
    @inline(__always)
    static var pathByteKinds: StaticString {
        """
        ________________________________\
        _p__p_pppppppp./pppppppppppp_p__\
        ppppppppppppppppppppppppppp____p\
        _pppppppppppppppppppppppppp___p_\
        ________________________________\
        ________________________________\
        ________________________________\
        ________________________________
        """
    }

    /// Appends `path` without its first `prefixLength` bytes (a matched `pathPrefix`) to
    /// `output`; the appended part always starts with `/`: stripping `/api/` or `/api` from
    /// `/api/x` gives `/x`, and from `/api` gives `/`.
    public static func appendStripped(_ path: UnsafeRawBufferPointer, prefixLength: Int, to output: inout [UInt8]) {
        precondition(prefixLength >= 0 && prefixLength <= path.count, "prefix longer than the path")
        if prefixLength > 0 && path[prefixLength - 1] == UInt8(ascii: "/") {
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: path[(prefixLength - 1)...]))
            return
        }
        let rest = UnsafeRawBufferPointer(rebasing: path[prefixLength...])
        if rest.first != UInt8(ascii: "/") {
            output.append(UInt8(ascii: "/"))
        }
        output.append(contentsOf: rest)
    }

    /// Convenience for configuration and tests (allocates): the normalized path, or nil.
    public static func normalize(_ path: String) -> String? {
        var path = path
        var output: [UInt8] = []
        let valid = path.withUTF8 { normalize(UnsafeRawBufferPointer($0), into: &output) }
        return valid ? String(decoding: output, as: UTF8.self) : nil
    }

    /// If the segment just written at `start` (`/` + segment) is `.` or `..`, removes it (and
    /// for `..` the segment before it) and returns true.
    private static func removeDotSegment(startingAt start: Int, in output: inout [UInt8]) -> Bool {
        let length = output.count - start - 1
        let dot = UInt8(ascii: ".")
        if length == 1 && output[start + 1] == dot {
            output.removeLast(2)
            return true
        }
        guard length == 2 && output[start + 1] == dot && output[start + 2] == dot else { return false }
        output.removeLast(3)
        while let last = output.last, last != UInt8(ascii: "/") {
            output.removeLast()
        }
        if !output.isEmpty {
            output.removeLast()  // the "/" before the removed segment
        }
        return true
    }

    @inline(__always)
    private static func appendEscaped(_ byte: UInt8, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "%"))
        output.append(uppercaseHexDigit(byte >> 4))
        output.append(uppercaseHexDigit(byte & 0x0F))
    }

    @inline(__always)
    private static func uppercaseHexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }
}
