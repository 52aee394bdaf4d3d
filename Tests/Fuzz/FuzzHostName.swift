// Fuzz target: the Host check a loopback listener makes on every request (DNS rebinding).
//
// Invariants, for any Host bytes: the loopback test agrees with a plain reading of the same rule
// written with Strings (lowercase, port and one trailing dot removed; `localhost` or a name below
// it, four dotted decimals starting 127, or `[::1]` in any spelling and `[::ffff:127.x.y.z]`); a
// name that merely starts with a loopback name (`localhost.evil`, `127.0.0.1.evil`) is never
// loopback; a name in a host set is matched whatever its case.

import Routing

private let names = HostNameSet([HostPattern.exact("orders.local"), .wildcard(suffix: "dev.example")])

/// The rule, read plainly: what `HostName.isLoopback` must agree with.
private func plainlyLoopback(_ raw: String) -> Bool {
    var host = Substring(raw.lowercased())
    while host.first == " " || host.first == "\t" { host.removeFirst() }
    while host.last == " " || host.last == "\t" { host.removeLast() }
    if host.hasPrefix("[") {
        guard let close = host.firstIndex(of: "]") else { return false }
        let inner = host[host.index(after: host.startIndex)..<close]
        return ipv6IsLoopback(String(inner))
    }
    if let colon = host.firstIndex(of: ":") { host = host[..<colon] }
    if host.count > 1 && host.hasSuffix(".") { host.removeLast() }
    if host == "localhost" { return true }
    if host.hasSuffix(".localhost") && host.count > ".localhost".count { return true }
    let parts = host.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4, parts.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCIIDigit) && !($0.count > 1 && $0.first == "0") }),
          let first = Int(parts[0]), parts.allSatisfy({ Int($0)! <= 255 }) else { return false }
    return first == 127
}

private func ipv6IsLoopback(_ text: String) -> Bool {
    let halves = text.split(separator: "::", omittingEmptySubsequences: false).map(String.init)
    guard halves.count <= 2 else { return false }
    func groups(_ part: String, last: Bool) -> [Int]? {
        if part.isEmpty { return [] }
        var out: [Int] = []
        let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
        for (i, piece) in pieces.enumerated() {
            if last && i == pieces.count - 1 && piece.contains(".") {
                let octets = piece.split(separator: ".", omittingEmptySubsequences: false)
                guard octets.count == 4, octets.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCIIDigit) && !($0.count > 1 && $0.first == "0") }),
                      octets.allSatisfy({ Int($0)! <= 255 }) else { return nil }
                let v = octets.map { Int($0)! }
                out += [v[0] << 8 | v[1], v[2] << 8 | v[3]]
                continue
            }
            guard (1...4).contains(piece.count), let group = Int(piece, radix: 16) else { return nil }
            out.append(group)
        }
        return out
    }
    let all: [Int]
    if halves.count == 1 {
        guard let g = groups(halves[0], last: true), g.count == 8 else { return false }
        all = g
    } else {
        guard let head = groups(halves[0], last: false), let tail = groups(halves[1], last: true), head.count + tail.count <= 7 else { return false }
        all = head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    }
    return all[..<7].allSatisfy { $0 == 0 } && all[7] == 1 || all[..<5].allSatisfy { $0 == 0 } && all[5] == 0xFFFF && all[6] >> 8 == 127
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHostName(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: start, count: count)
    // Host values as the parser passes them: no CR, LF or NUL, ASCII (anything else is a 400 first).
    guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return 0 }
    let text = String(decoding: bytes, as: UTF8.self)
    let bounds = HostName.bounds(in: bytes)
    let loopback = HostName.isLoopback(bytes, bounds)
    precondition(loopback == plainlyLoopback(text), "isLoopback(\(text)) = \(loopback), the plain rule says otherwise")
    for suffix in [".evil.example", "evil.example", "-x"] {
        let longer = Array((text + suffix).utf8)
        let isLoopbackToo = longer.withUnsafeBytes { HostName.isLoopback($0, HostName.bounds(in: $0)) }
        precondition(!isLoopbackToo || plainlyLoopback(text + suffix), "a suffix made \(text) loopback")
    }
    let upper = Array(text.uppercased().utf8)
    let inSet = names.contains(bytes, bounds)
    precondition(upper.withUnsafeBytes { names.contains($0, HostName.bounds(in: $0)) } == inSet, "case changed a host set's answer")
    return 0
}
