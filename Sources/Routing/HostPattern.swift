import Endpoints

/// The host a route matches: an exact name (`orders.local`, `10.0.0.7`, `[::1]`) or a wildcard
/// (`*.example.com`, matching `a.example.com` and `a.b.example.com` but not `example.com`).
/// Stored lowercased, without a trailing dot, IPv6 without brackets.
public enum HostPattern: Sendable, Equatable, Hashable, CustomStringConvertible {
    case exact(String)
    /// `*.example.com` is `.wildcard(suffix: "example.com")`.
    case wildcard(suffix: String)

    public init?(parsing text: String) {
        guard let pattern = try? Self.parse(text) else { return nil }
        self = pattern
    }

    public var description: String {
        switch self {
        case .exact(let host): HostSyntax.bracketed(host)
        case .wildcard(let suffix): "*." + suffix
        }
    }

    /// Why a text is not a host pattern, as the config reports it.
    public struct SyntaxError: Error, Sendable, Equatable {
        public let message: String
        init(_ message: String) { self.message = message }
    }

    public static func parse(_ text: String) throws(SyntaxError) -> HostPattern {
        // Bytes, not Characters, for the ASCII delimiters: counting and comparing Characters made
        // this function 23,000 instructions a pattern (now 3,700), with 10,000 routes at each load.
        var host = Substring(text.lowercased())
        let bytes = host.utf8
        if bytes.first == UInt8(ascii: "[") && bytes.last == UInt8(ascii: "]") {
            // Sliced by byte, not with dropFirst(): "[" with a combining mark after it is one
            // Character, and dropping it would read "[\u{301}::1]" as "::1".
            let address = host[bytes.index(after: bytes.startIndex)..<bytes.index(before: bytes.endIndex)]
            guard HostSyntax.isIPv6(address) else { throw SyntaxError("\"\(text)\" is not an IPv6 address") }
            return .exact(String(address))
        }
        if host.utf8.last == UInt8(ascii: ".") && host.utf8.count > 1 {
            host = host[..<host.utf8.index(before: host.utf8.endIndex)]
        }
        if host.utf8.contains(UInt8(ascii: ":")) {
            throw SyntaxError("a host pattern has no port (the port in the Host header is ignored); write an IPv6 address as \"[::1]\"")
        }
        if host == "*" {
            throw SyntaxError("\"*\" matches nothing special; leave out \"host\" to match any host")
        }
        if host.utf8.starts(with: "*.".utf8) {
            let suffix = host[host.utf8.index(host.utf8.startIndex, offsetBy: 2)...]
            guard HostSyntax.isHostName(suffix) else {
                throw SyntaxError("\"\(text)\" is not a valid wildcard pattern (expected \"*.\" and a host name, like \"*.example.com\")")
            }
            return .wildcard(suffix: String(suffix))
        }
        guard HostSyntax.isHostName(host) else {
            throw SyntaxError("\"\(text)\" is not a valid host name (a \"*\" may only stand for the leftmost labels, as in \"*.example.com\")")
        }
        return .exact(String(host))
    }
}

extension HostPattern {
    /// The DNS name the pattern is about: an exact host, or a wildcard's suffix.
    public var name: String {
        switch self {
        case .exact(let host): host
        case .wildcard(let suffix): suffix
        }
    }

    /// A DNS name, or a wildcard over one: not an IP address (`10.0.0.5`, `::1`), nor a wildcard
    /// over an IPv4 address (`*.10.0.0.1`). The one rule for what the forward proxy intercepts
    /// (`RelayConfig.interceptedHosts`) and what its CA may be constrained to
    /// (`NameConstraintSet`), so that `check` and `run` agree.
    public var isDNSName: Bool {
        let name = name
        guard HostSyntax.isHostName(Substring(name)) else { return false }
        return Array(name.utf8).withUnsafeBytes { HostSyntax.ipv4Octets($0, 0..<$0.count) == nil }
    }
}
