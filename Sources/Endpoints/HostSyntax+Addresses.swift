import HTTPFields

// The addresses a host names, read from bytes: the dotted IPv4 form, IPv6 groups, and the one
// rule for a loopback host, which the Host check on every request (Routing's `HostName`, on the
// bytes of a Host header) and the checks of configured and discovered URLs and listener
// addresses (on strings) both ask.
extension HostSyntax {
    /// `host[bounds]` as a dotted-decimal IPv4 address (four numbers 0-255, no leading zero but
    /// a lone 0): the one form browsers write.
    public static func ipv4Octets(_ host: UnsafeRawBufferPointer, _ bounds: Range<Int>) -> (UInt8, UInt8, UInt8, UInt8)? {
        var address: UInt32 = 0
        var dots = 0, value: UInt32 = 0, digits = 0
        for index in bounds {
            let byte = host[index]
            if byte == UInt8(ascii: ".") {
                guard digits > 0, dots < 3 else { return nil }
                address = address << 8 | value
                dots += 1; value = 0; digits = 0
            } else if ASCII.isDigit(byte) {
                if digits == 1 && value == 0 { return nil }
                value = value * 10 + UInt32(byte - UInt8(ascii: "0"))
                digits += 1
                guard value <= 255 else { return nil }
            } else {
                return nil
            }
        }
        guard digits > 0, dots == 3 else { return nil }
        address = address << 8 | value
        return (UInt8(address >> 24), UInt8(truncatingIfNeeded: address >> 16), UInt8(truncatingIfNeeded: address >> 8),
                UInt8(truncatingIfNeeded: address))
    }

    /// The eight groups of the IPv6 address in `host[bounds]` (with `::` and an IPv4 tail), or nil.
    public static func ipv6Groups(_ host: UnsafeRawBufferPointer, _ bounds: Range<Int>) -> [UInt16]? {
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: host[bounds]), as: UTF8.self)
        let halves = text.split(separator: "::", maxSplits: 2, omittingEmptySubsequences: false)
        guard halves.count <= 2 else { return nil }
        func groups(_ part: Substring, allowsIPv4: Bool) -> [UInt16]? {
            guard !part.isEmpty else { return [] }
            var result: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, piece) in pieces.enumerated() {
                if allowsIPv4 && index == pieces.count - 1 && piece.contains(".") {
                    let bytes = Array(piece.utf8)
                    guard let v4 = bytes.withUnsafeBytes({ ipv4Octets($0, 0..<$0.count) }) else { return nil }
                    result += [UInt16(v4.0) << 8 | UInt16(v4.1), UInt16(v4.2) << 8 | UInt16(v4.3)]
                    continue
                }
                guard (1...4).contains(piece.utf8.count), let group = UInt16(piece, radix: 16) else { return nil }
                result.append(group)
            }
            return result
        }
        guard let head = groups(halves[0], allowsIPv4: halves.count == 1) else { return nil }
        if halves.count == 1 { return head.count == 8 ? head : nil }
        guard let tail = groups(halves[1], allowsIPv4: true), head.count + tail.count <= 7 else { return nil }
        return head + Array(repeating: 0, count: 8 - head.count - tail.count) + tail
    }

    /// A loopback name or address, which only this machine can mean: `localhost` and names
    /// below it (RFC 6761 §6.3; browsers resolve them to loopback themselves), 127.0.0.0/8, and
    /// the IPv6 loopback `::1` (also as `::ffff:127.x.y.z`). `localhost.evil.example` and
    /// `127.0.0.1.evil.example` are names like any other. `isIPv6`: `host[bounds]` is the text
    /// of an IPv6 address (written in brackets in a Host header or URL, without them here).
    public static func isLoopback(_ host: UnsafeRawBufferPointer, _ bounds: Range<Int>, isIPv6: Bool) -> Bool {
        guard !bounds.isEmpty else { return false }
        if isIPv6 {
            return ipv6Groups(host, bounds).map { groups in
                groups[..<7].allSatisfy { $0 == 0 } && groups[7] == 1
                    || groups[..<5].allSatisfy { $0 == 0 } && groups[5] == 0xFFFF && groups[6] >> 8 == 127
            } ?? false
        }
        if ASCII.isDigit(host[bounds.upperBound - 1]) {
            return ipv4Octets(host, bounds)?.0 == 127
        }
        let localhost = Self.localhost
        let count = bounds.count
        guard count >= localhost.count else { return false }
        for offset in 0..<localhost.count where ASCII.lowercased(host[bounds.upperBound - localhost.count + offset]) != localhost[offset] {
            return false
        }
        return count == localhost.count || host[bounds.upperBound - localhost.count - 1] == UInt8(ascii: ".") && count > localhost.count + 1
    }

    /// The same rule for a host as a listener address or a parsed URL holds it: a name, an IPv4
    /// address, or an IPv6 address without brackets (its `%zone`, if any, ignored).
    public static func isLoopback(_ host: String) -> Bool {
        let isIPv6 = host.contains(":")
        let address = isIPv6 ? host.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)[0] : Substring(host)
        return Array(address.utf8).withUnsafeBytes { isLoopback($0, 0..<$0.count, isIPv6: isIPv6) }
    }

    private static let localhost = Array("localhost".utf8)
}
