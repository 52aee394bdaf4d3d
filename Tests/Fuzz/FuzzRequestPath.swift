// Fuzz target: request-path normalisation and the route table it feeds.
//
// Invariants: a normalised path is a fixed point (normalising it again changes nothing); it
// starts with "/" and has no "." or ".." segment, no "//"-free climb; decoding an unreserved
// byte's %-escape does not change where a path normalises to; and the route a request takes
// depends neither on such escapes nor on the case of its host.

import Endpoints
import Routing

/// Routes whose prefixes and hosts overlap, as in a real configuration.
private let table = RouteTable([
    RouteMatch(host: HostPattern(parsing: "api.example.test"), pathPrefix: "/v1/"),
    RouteMatch(host: HostPattern(parsing: "*.example.test"), pathPrefix: "/v1/Orders"),
    RouteMatch(host: HostPattern(parsing: "*.example.test"), pathPrefix: "/"),
    RouteMatch(host: nil, pathPrefix: "/a%2Fb/"),
    RouteMatch(host: nil, pathPrefix: "/static/"),
])
private let hosts = ["api.example.test", "API.Example.TEST", "www.example.test", "Www.EXAMPLE.test", "other.test", "api.example.test:8080"]

/// The route for `host` and the raw path, as the relay picks it (normalise, then match).
private func route(host: String, rawPath: [UInt8]) -> Int?? {
    var normalized: [UInt8] = []
    guard rawPath.withUnsafeBytes({ RequestPath.normalize($0, into: &normalized) }) else { return .none }
    return .some(host.utf8.withContiguousStorageIfAvailable { host in
        normalized.withUnsafeBytes { table.matchIndex(host: UnsafeRawBufferPointer(host), path: $0) }
    } ?? nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestPath(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: start, count: count)
    var normalized: [UInt8] = []
    guard RequestPath.normalize(raw, into: &normalized) else { return 0 }
    precondition(normalized.first == UInt8(ascii: "/"), "a normalised path does not start with /")
    var again: [UInt8] = []
    let ok = normalized.withUnsafeBytes { RequestPath.normalize($0, into: &again) }
    precondition(ok && again == normalized, "normalisation is not a fixed point")
    let segments = normalized.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
    precondition(!segments.contains { $0.elementsEqual([0x2E]) || $0.elementsEqual([0x2E, 0x2E]) }, "a dot segment survived")
    // Spelling every unreserved letter of the normalised path as %XX normalises back to it.
    let escaped = escapedLetters(normalized)
    var fromEscaped: [UInt8] = []
    let escapedOK = escaped.withUnsafeBytes { RequestPath.normalize($0, into: &fromEscaped) }
    precondition(escapedOK && fromEscaped == normalized, "%-escaping unreserved letters changed the normalised path")
    // The route: the same for the raw path and its letters %-escaped, and for any case of the host.
    let rawPath = Array(raw)
    let host = hosts[count % hosts.count]
    let taken = route(host: host, rawPath: rawPath)
    precondition(route(host: host, rawPath: escapedLetters(rawPath)) == taken, "%-escaped letters took another route")
    let lowered = hosts[count % hosts.count].lowercased()
    precondition(route(host: lowered, rawPath: rawPath) == taken, "the host's case changed the route")
    return 0
}

/// `bytes` with every ASCII letter outside a %-escape spelled as %XX.
private func escapedLetters(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        if byte == UInt8(ascii: "%") {
            out += bytes[index..<min(index + 3, bytes.count)]
            index += 3
            continue
        }
        if (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) {
            out += Array("%\(String(byte, radix: 16, uppercase: true))".utf8)
        } else {
            out.append(byte)
        }
        index += 1
    }
    return out
}
