import ByteBuffers

/// The parts of a request-target (RFC 9112 §3.2) as views into the head's bytes.
/// Origin-form `/path?query`, absolute-form `http://authority/path?query` (sent by clients that
/// use the relay as a forward proxy, e.g. `curl -x`), or asterisk-form `*` (OPTIONS).
struct RequestTarget {
    /// The path, without the query (`/` when absolute-form has none).
    let path: UnsafeRawBufferPointer
    /// `?query` including the mark, or empty.
    let queryWithMark: UnsafeRawBufferPointer
    /// What to send upstream as the request-target when not rewritten: path and query.
    /// Nil for an absolute-form target with a query but no path (`http://host?q`): its origin
    /// form `/?q` is not a slice of the input, so the caller composes it.
    let originForm: UnsafeRawBufferPointer?
    /// Host (and port) of an absolute-form target.
    let authority: UnsafeRawBufferPointer?
    let isAsterisk: Bool

    private static var slash: UnsafeRawBufferPointer { staticBytes("/") }

    init?(_ raw: UnsafeRawBufferPointer) {
        guard let first = raw.first else { return nil }
        if raw.count == 1 && first == UInt8(ascii: "*") {
            path = Self.slash
            queryWithMark = UnsafeRawBufferPointer(start: nil, count: 0)
            originForm = raw
            authority = nil
            isAsterisk = true
            return
        }
        isAsterisk = false
        var start = 0
        if first == UInt8(ascii: "/") {
            authority = nil
        } else {
            // absolute-form: scheme "://" authority path-abempty [ "?" query ]
            guard let schemeEnd = Self.schemeEnd(raw) else { return nil }
            let authorityStart = schemeEnd + 3
            var end = authorityStart
            while end < raw.count && raw[end] != UInt8(ascii: "/") && raw[end] != UInt8(ascii: "?") { end += 1 }
            guard end > authorityStart else { return nil }
            authority = UnsafeRawBufferPointer(rebasing: raw[authorityStart..<end])
            start = end
        }
        var queryStart = start
        while queryStart < raw.count && raw[queryStart] != UInt8(ascii: "?") { queryStart += 1 }
        if start == raw.count || raw[start] == UInt8(ascii: "?") {
            // `http://host` or `http://host?q`: the path is "/".
            path = Self.slash
            originForm = start == raw.count ? Self.slash : nil
        } else {
            path = UnsafeRawBufferPointer(rebasing: raw[start..<queryStart])
            originForm = UnsafeRawBufferPointer(rebasing: raw[start...])
        }
        queryWithMark = UnsafeRawBufferPointer(rebasing: raw[queryStart...])
    }

    /// Index of "://" after an `http` or `https` scheme (any case), or nil.
    private static func schemeEnd(_ raw: UnsafeRawBufferPointer) -> Int? {
        for (scheme, length) in [("http", 4), ("https", 5)] where raw.count > length + 3 {
            var matches = true
            for (i, byte) in scheme.utf8.enumerated() where (raw[i] | 0x20) != byte { matches = false }
            if matches && raw[length] == UInt8(ascii: ":") && raw[length + 1] == UInt8(ascii: "/") && raw[length + 2] == UInt8(ascii: "/") {
                return length
            }
        }
        return nil
    }
}
