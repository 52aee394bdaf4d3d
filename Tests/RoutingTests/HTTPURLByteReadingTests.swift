import Endpoints
import HTTPFields
import Routing
import XCTest

/// `HTTPURL(absolute:)` and `HostPattern.parse` read UTF-8 bytes; they gave the same answers when
/// they read Characters. The Character readers are kept here, as they were, as the reference.
final class HTTPURLByteReadingTests: XCTestCase {
    /// URLs that pass and URLs that fail at each step, with non-ASCII text in each part.
    private static let urls = [
        "http://localhost", "HTTPS://IdP.Example.com:8443/realms/a/../b/token?tenant=acme", "http://[::1]:9000",
        "http://[fe80::1%25eth0]/x", "https://svc-00003.scale.test/api/", "http://10.0.0.5:8080/v1/", "http://a.b/%7Ex/%2f/./y",
        "http://a_b-c.d/", "idp.example.com/token", "javascript://x", "HtTp://x", "https:/x", "https:x//y", "ftp://x://y",
        "https://user:pw@idp/", "https://idp/#x", "https://idp/?a=1", "https://idp?a=1", "https://idp/?a b", "https://idp/?é",
        "https://idp:0/", "https://idp:99999/", "https://idp:/", "https://idp:8a/", "https://:443/", "https://[::1/",
        "https://[::1]x/", "https://[::1]:0/", "https://[nope]/", "https://[]/", "https://id p/", "https://idp../",
        "https://.idp/", "https://idp./", "https://" + String(repeating: "a", count: 64) + ".b/",
        "https://" + String(repeating: "a", count: 63) + ".b/", "https://" + String(repeating: "a.", count: 127) + "b/",
        "https://é.example/", "https://idp/é/ü?x", "https://idp/a b", "https://idp/\u{7F}", "https://idp/a\tb", "",
        "://", "http://", "http:///x", "http://?x", "http://#x", "http://x?", "http://x?#", "😀://x", "http://😀/",
        "http://x:😀/", "http://[😀]/", "http://x/😀?y", "https://idp/a?b?c", "https://idp/a?b#c",
    ]

    /// Host patterns as the `host` key takes them, and ones it refuses.
    private static let patterns = [
        "api.example.com", "API.Example.COM.", ".", "x.", "*.example.com", "*.", "*", "*.*.example.com", "a*.example.com",
        "[::1]", "[nope]", "[::1", "example.com:8080", "é.example", "*.é", "", "a..b", "10.0.0.1", "*.10.0.0.1",
        String(repeating: "a", count: 64) + ".com", "xn--nxasmq6b.example",
    ]

    func testURLsReadAsTheCharacterReaderReadThem() {
        for allowsQuery in [true, false] {
            for text in Self.urls {
                XCTAssertEqual(Self.answer { try HTTPURL(absolute: text, allowsQuery: allowsQuery) },
                               Self.answer { try ReferenceReader.url(text, allowsQuery: allowsQuery) }, text)
            }
        }
    }

    func testHostPatternsReadAsTheCharacterReaderReadThem() {
        for text in Self.patterns {
            XCTAssertEqual(Self.answer { try HostPattern.parse(text) }, Self.answer { try ReferenceReader.hostPattern(text) }, text)
        }
    }

    /// The value, or the error's text (the reference readers throw their texts as HTTPURLSyntaxError).
    private static func answer<Value>(_ read: () throws -> Value) -> String {
        do {
            return "\(try read())"
        } catch let error as HostPattern.SyntaxError {
            return "error: \(error.message)"
        } catch {
            return "error: \(error)"
        }
    }
}

/// The Character readers as they were before the byte readers replaced them.
private enum ReferenceReader {
    static func url(_ text: String, allowsQuery: Bool) throws -> HTTPURL {
        guard let separator = text.firstRange(of: "://") else {
            throw HTTPURLSyntaxError("\"\(text)\" is not an absolute URL (expected http://… or https://…)")
        }
        let schemeName = text[..<separator.lowerBound].lowercased()
        guard let scheme = URLScheme(rawValue: schemeName) else {
            throw HTTPURLSyntaxError("unsupported scheme \"\(schemeName)\" in \"\(text)\" (expected http or https)")
        }
        let afterScheme = text[separator.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        var rest = afterScheme[authorityEnd...]
        guard !authority.contains("@") else {
            throw HTTPURLSyntaxError("user info (user:password@) is not allowed in a URL; put credentials in an identity")
        }
        if rest.contains("#") {
            throw HTTPURLSyntaxError("a fragment (#…) is not allowed in \"\(text)\"")
        }
        var query: String?
        if let questionMark = rest.firstIndex(of: "?") {
            guard allowsQuery else { throw HTTPURLSyntaxError("a query (?…) is not allowed in \"\(text)\"") }
            let queryText = rest[rest.index(after: questionMark)...]
            guard queryText.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw HTTPURLSyntaxError("the query in \"\(text)\" contains spaces or characters that must be percent-encoded")
            }
            query = String(queryText)
            rest = rest[..<questionMark]
        }
        let (host, portText) = try splitAuthority(authority, in: text)
        var port = scheme.defaultPort
        if let portText {
            guard let number = HostSyntax.port(portText) else {
                throw HTTPURLSyntaxError("invalid port \"\(portText)\" in \"\(text)\" (expected a number 1-65535)")
            }
            port = number
        }
        guard let path = RequestPath.normalize(rest.isEmpty ? "/" : String(rest)) else {
            throw HTTPURLSyntaxError("invalid path \"\(rest)\" in \"\(text)\"")
        }
        return HTTPURL(scheme: scheme, host: host.lowercased(), port: port, path: path, query: query)
    }

    private static func splitAuthority(_ authority: Substring, in text: String) throws -> (host: Substring, port: Substring?) {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw HTTPURLSyntaxError("unclosed \"[\" in \"\(text)\"") }
            let host = authority[authority.index(after: authority.startIndex)..<close]
            let afterHost = authority[authority.index(after: close)...]
            guard afterHost.isEmpty || afterHost.hasPrefix(":") else {
                throw HTTPURLSyntaxError("unexpected \"\(afterHost)\" after the host in \"\(text)\"")
            }
            guard HostSyntax.isIPv6(host) else { throw HTTPURLSyntaxError("\"\(host)\" is not an IPv6 address") }
            return (host, afterHost.isEmpty ? nil : afterHost.dropFirst())
        }
        let colon = authority.firstIndex(of: ":")
        let host = authority[..<(colon ?? authority.endIndex)]
        guard !host.isEmpty else { throw HTTPURLSyntaxError("missing host in \"\(text)\"") }
        guard isHostName(host) else { throw HTTPURLSyntaxError("\"\(host)\" is not a valid host name or address") }
        return (host, colon.map { authority[authority.index(after: $0)...] })
    }

    private static func isHostName(_ text: Substring) -> Bool {
        guard !text.isEmpty, text.utf8.count <= 253 else { return false }
        return text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63
                && label.utf8.allSatisfy { ASCII.isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
        }
    }

    static func hostPattern(_ text: String) throws -> HostPattern {
        var host = Substring(text.lowercased())
        if host.hasPrefix("[") && host.hasSuffix("]") {
            let address = host.dropFirst().dropLast()
            guard HostSyntax.isIPv6(address) else { throw HTTPURLSyntaxError("\"\(text)\" is not an IPv6 address") }
            return .exact(String(address))
        }
        if host.hasSuffix(".") && host.count > 1 { host = host.dropLast() }
        if host.contains(":") {
            throw HTTPURLSyntaxError("a host pattern has no port (the port in the Host header is ignored); write an IPv6 address as \"[::1]\"")
        }
        if host == "*" {
            throw HTTPURLSyntaxError("\"*\" matches nothing special; leave out \"host\" to match any host")
        }
        if host.hasPrefix("*.") {
            let suffix = host.dropFirst(2)
            guard isHostName(suffix) else {
                throw HTTPURLSyntaxError("\"\(text)\" is not a valid wildcard pattern (expected \"*.\" and a host name, like \"*.example.com\")")
            }
            return .wildcard(suffix: String(suffix))
        }
        guard isHostName(host) else {
            throw HTTPURLSyntaxError("\"\(text)\" is not a valid host name (a \"*\" may only stand for the leftmost labels, as in \"*.example.com\")")
        }
        return .exact(String(host))
    }
}
