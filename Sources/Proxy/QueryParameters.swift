import OAuth2

/// Query strings as `application/x-www-form-urlencoded` pairs joined by `&` (WHATWG URL), read
/// in place: for query injection, which must take the client's own parameters of the token's
/// name out before it adds the relay's, so the upstream sees one token — the relay's.
enum QueryParameters {
    /// Appends `query` (without its `?`) to `out` without the parameters whose decoded name is
    /// exactly `name`; every other parameter, and the `&`s between them (empty ones included),
    /// byte for byte. Returns whether anything of the query was kept.
    static func append(_ query: UnsafeRawBufferPointer, removing name: [UInt8], to out: inout [UInt8]) -> Bool {
        guard !query.isEmpty else { return false }
        var kept = 0
        var start = 0
        while start <= query.count {
            var end = start
            while end < query.count && query[end] != UInt8(ascii: "&") { end += 1 }
            let parameter = UnsafeRawBufferPointer(rebasing: query[start..<end])
            if !nameDecodes(parameter, to: name) {
                if kept > 0 { out.append(UInt8(ascii: "&")) }
                out.append(contentsOf: parameter)
                kept += 1
            }
            start = end + 1
        }
        return kept > 0
    }

    /// Whether the name of `parameter` (the bytes before its first `=`, or all of them) decodes
    /// to `expected`: `+` is a space, `%XX` a byte, a `%` without two hex digits itself.
    static func nameDecodes(_ parameter: UnsafeRawBufferPointer, to expected: [UInt8]) -> Bool {
        var index = 0
        var matched = 0
        while index < parameter.count && parameter[index] != UInt8(ascii: "=") {
            var byte = parameter[index]
            index += 1
            if byte == UInt8(ascii: "+") {
                byte = UInt8(ascii: " ")
            } else if byte == UInt8(ascii: "%"), index + 1 < parameter.count,
                      let high = FormURLEncoding.hexValue(parameter[index]),
                      let low = FormURLEncoding.hexValue(parameter[index + 1]) {
                byte = high << 4 | low
                index += 2
            }
            guard matched < expected.count, expected[matched] == byte else { return false }
            matched += 1
        }
        return matched == expected.count
    }
}
