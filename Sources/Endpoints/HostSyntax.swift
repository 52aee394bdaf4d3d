import HTTPFields

/// Syntax checks for host names and IP literals shared by addresses, URLs and host patterns.
public enum HostSyntax {
    /// A DNS name or IPv4 address: labels of letters, digits, `-` and `_`, separated by dots.
    public static func isHostName(_ text: Substring) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 253 else { return false }
        // One pass over the bytes (splitting into Substrings of Characters cost 8,000
        // instructions a name, now 700, with 10,000 routes' hosts and upstreams checked at each load).
        var labelLength = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard labelLength > 0 else { return false }
                labelLength = 0
                continue
            }
            guard ASCII.isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") else { return false }
            labelLength += 1
            guard labelLength <= 63 else { return false }
        }
        return labelLength > 0
    }

    /// An IPv6 address (hex groups, colons, an optional embedded IPv4 and `%zone`).
    public static func isIPv6(_ text: Substring) -> Bool {
        let address = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)[0]
        guard address.contains(":"), address.utf8.count <= 45 else { return false }
        return address.utf8.allSatisfy { byte in
            ASCII.hexDigitValue(byte) != nil || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".")
        }
    }

    /// The host as written in a URL authority or `host:port`: IPv6 in brackets.
    public static func bracketed(_ host: String) -> String {
        host.utf8.contains(UInt8(ascii: ":")) ? "[" + host + "]" : host
    }

    /// `host`, or `host:port` when the port is not the scheme's default (a Host header).
    public static func authority(host: String, port: UInt16, defaultPort: UInt16) -> String {
        // Appended, not interpolated: a reload writes one for each of 10,000 routes, and
        // interpolating the port cost 2,900 instructions an authority (callgrind).
        var text = bracketed(host)
        if port != defaultPort {
            text.append(":")
            text.append(String(port))
        }
        return text
    }

    /// What is wrong with the host of a URL authority (`splitAuthority`).
    public enum AuthorityProblem: Equatable {
        case unclosedBracket
        /// Text after a bracketed IPv6 address that is no `:port`.
        case unexpectedAfterHost(Substring)
        case notIPv6(Substring)
        case missingHost
        case invalidHost(Substring)
    }

    /// Splits a URL authority without user info (`host`, `host:port`, `[v6]`, `[v6]:port`) into
    /// its host, checked (a host name or IPv4 address, or an IPv6 address in brackets, returned
    /// without them), and the text after the port's colon, unchecked. `wording` turns a problem
    /// into the caller's error: an http URL may be quoted in it, a redis:// URL (a password) not.
    public static func splitAuthority<Failure: Error>(_ authority: Substring, wording: (AuthorityProblem) -> Failure)
        throws(Failure) -> (host: Substring, port: Substring?) {
        // Read as UTF-8 bytes, as HTTPURL(absolute:) is: the delimiters are ASCII.
        let bytes = authority.utf8
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { throw wording(.unclosedBracket) }
            let host = authority[bytes.index(after: bytes.startIndex)..<close]
            let afterHost = authority[bytes.index(after: close)...]
            guard afterHost.isEmpty || afterHost.utf8.first == UInt8(ascii: ":") else { throw wording(.unexpectedAfterHost(afterHost)) }
            guard isIPv6(host) else { throw wording(.notIPv6(host)) }
            return (host, afterHost.isEmpty ? nil : authority[bytes.index(after: afterHost.startIndex)...])
        }
        let colon = bytes.firstIndex(of: UInt8(ascii: ":"))
        let host = authority[..<(colon ?? bytes.endIndex)]
        guard !host.isEmpty else { throw wording(.missingHost) }
        guard isHostName(host) else { throw wording(.invalidHost(host)) }
        return (host, colon.map { authority[bytes.index(after: $0)...] })
    }

    /// The port of an authority (`splitAuthority`'s text after the colon): digits only, 1-65535.
    public static func port(_ text: Substring) -> UInt16? {
        guard !text.isEmpty, text.utf8.allSatisfy(ASCII.isDigit), let port = UInt16(text), port != 0 else { return nil }
        return port
    }
}
