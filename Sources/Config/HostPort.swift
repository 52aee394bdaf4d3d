import Endpoints
import HTTPFields
import Routing

/// A listening address, written `host:port` in the config; IPv6 as `[::1]:8180`.
public struct HostPort: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// Host name or IP address, IPv6 without brackets.
    public var host: String
    /// 0 asks the system for an ephemeral port.
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `host:port` or `[ipv6]:port`; nil for any other form.
    public init?(parsing text: String) {
        guard let parsed = try? Self.parse(text) else { return nil }
        self = parsed
    }

    /// `host:port`, with brackets around an IPv6 host.
    public var description: String {
        "\(HostSyntax.bracketed(host)):\(port)"
    }

    static func parse(_ text: String) throws(InvalidValue) -> HostPort {
        let example = "expected \"host:port\" like \"127.0.0.1:8180\" or \"[::1]:8180\""
        let host: Substring
        let port: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw InvalidValue("unclosed \"[\" in \"\(text)\"; \(example)") }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw InvalidValue("missing port in \"\(text)\"; \(example)") }
            port = rest.dropFirst()
            guard HostSyntax.isIPv6(host) else { throw InvalidValue("\"\(host)\" is not an IPv6 address") }
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw InvalidValue("missing port in \"\(text)\"; \(example)") }
            host = text[..<colon]
            port = text[text.index(after: colon)...]
            if host.contains(":") {
                throw InvalidValue("write an IPv6 address in brackets, like \"[::1]:8180\"")
            }
            guard !host.isEmpty, host != "*" else {
                throw InvalidValue("missing host in \"\(text)\"; use \"0.0.0.0:\(port)\" or \"[::]:\(port)\" to listen on every address")
            }
            guard HostSyntax.isHostName(host) else { throw InvalidValue("\"\(host)\" is not a valid host name or address") }
        }
        return HostPort(host: String(host), port: try parsePort(port, in: text))
    }

    /// A decimal port number 0...65535.
    static func parsePort(_ text: Substring, in whole: String) throws(InvalidValue) -> UInt16 {
        guard !text.isEmpty, text.utf8.allSatisfy(ASCII.isDigit) else {
            throw InvalidValue("invalid port \"\(text)\" in \"\(whole)\" (expected a number 0-65535)")
        }
        guard let port = UInt16(text) else {
            throw InvalidValue("port \(text) in \"\(whole)\" is out of range (0-65535)")
        }
        return port
    }
}
