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
            // RFC 9110 §4.2.4: userinfo in an http(s) URI is an error (and `user@host` would
            // route and forward as a different host than it names).
            guard Self.isAuthority(authority!) else { return nil }
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

    /// Whether `bytes` can be a `uri-host [ ":" port ]` (RFC 9112 §3.2, RFC 3986 §3.2.2): a
    /// reg-name or IPv4 address (unreserved, %-escapes, sub-delims), or an IP literal in
    /// brackets, and digits after the colon. Anything else (white space, `@`, `/`, a list) is a
    /// request to refuse: a Host value the relay and the upstream might read differently.
    static func isAuthority(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let first = bytes.first else { return false }
        var index = 0
        if first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")), close > 1 else { return false }
            for byte in bytes[1..<close] where !(isHex(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".")) {
                return false
            }
            index = close + 1
        } else {
            // `d` and `r` are the kinds after all others (`:` and `_`): one comparison a byte.
            while index < bytes.count && hostByteKind(bytes[index]) >= UInt8(ascii: "d") { index += 1 }
            guard index > 0 else { return false }
        }
        guard index < bytes.count else { return true }
        guard bytes[index] == UInt8(ascii: ":") else { return false }
        index += 1
        while index < bytes.count {
            guard hostByteKind(bytes[index]) == UInt8(ascii: "d") else { return false }
            index += 1
        }
        return true
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || ((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "f"))
    }

    /// What a byte of a Host value is, read from `hostByteKinds`: `d` a digit, `r` another
    /// reg-name byte (unreserved, `%`, sub-delims: RFC 3986 §3.2.2), `:` the colon before a
    /// port, `_` none of them. Checked for every byte of every request's Host: one load a byte,
    /// where the range tests of a bit map cost half as much again (callgrind).
    @inline(__always)
    static func hostByteKind(_ byte: UInt8) -> UInt8 {
        hostByteKinds.utf8Start[Int(byte)]
    }

    /// The kinds of the 256 byte values, 32 a line; RequestTargetTests checks them against the
    /// characters of RFC 3986. A literal: its bytes are constant data, read without a lazy global.
    @inline(__always)
    static var hostByteKinds: StaticString {
        """
        ________________________________\
        _r__rrrrrrrrrrr_dddddddddd:r_r__\
        _rrrrrrrrrrrrrrrrrrrrrrrrrr____r\
        _rrrrrrrrrrrrrrrrrrrrrrrrrr___r_\
        ________________________________\
        ________________________________\
        ________________________________\
        ________________________________
        """
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
