import BrowserSafety
import Config
import HTTP1
import HTTPFields
import OAuth2

/// What the login endpoints and the login answers read of a request: copied out of the head
/// only when a request is about a login, never on the forwarding path.
public struct LoginRequest: Sendable {
    let method: String
    /// The path as the client sent it, and the query without its `?`.
    let path: String
    let query: String
    /// The `Host` (or absolute-form authority), as sent.
    let host: String
    let overTLS: Bool
    /// GET or HEAD whose `Accept` prefers `text/html`: a browser, which can be sent to log in.
    let isBrowserNavigation: Bool
    let cookies: [(name: String, value: String)]
    /// What the browser said of where the request comes from (Origin, Fetch Metadata); nil when
    /// it said nothing (curl, scripts, older browsers).
    let browser: BrowserRequest?

    /// `path`: the path as routing reads it (dot segments resolved), or as sent when that is not
    /// known; `queryWithMark` and `authority`: the request-target's (`RequestTarget`, in Proxy).
    public init(head: HTTPHead, path: UnsafeRawBufferPointer, queryWithMark: UnsafeRawBufferPointer,
                authority: UnsafeRawBufferPointer?, overTLS: Bool) {
        method = String(decoding: head.methodName, as: UTF8.self)
        self.path = String(decoding: path, as: UTF8.self)
        query = String(decoding: queryWithMark.dropFirst(), as: UTF8.self)
        host = String(decoding: authority ?? head.host ?? UnsafeRawBufferPointer(start: nil, count: 0), as: UTF8.self)
        self.overTLS = overTLS
        var accept: [String] = []
        var cookies: [(String, String)] = []
        for field in head.fields {
            let name = head.name(field)
            let value = { String(decoding: head.value(field), as: UTF8.self) }
            if field.known == .cookie {
                cookies += Self.cookies(value())
            } else if ASCII.equalsIgnoringCase(name, Self.acceptName) {
                accept.append(value())
            }
        }
        self.cookies = cookies
        browser = head.fetchMetadata.isEmpty ? nil
            : BrowserRequest(head: head, host: authority ?? head.host, overTLS: overTLS)
        isBrowserNavigation = (head.isHead || method == "GET") && Self.prefersHTML(accept.joined(separator: ","))
    }

    private static let acceptName = Array("accept".utf8)

    /// `Host` read as host and port (the scheme's default port when it names none), the host
    /// lowercased; nil when it is not a host name or address.
    var authority: HostPort? {
        let withPort = host.contains(":") && !host.hasSuffix("]") ? host : host + ":" + (overTLS ? "443" : "80")
        return HostPort(parsing: withPort).map { HostPort(host: $0.host.lowercased(), port: $0.port) }
    }

    /// The origin the client named (`http://localhost:8180`), in one spelling for comparing; nil
    /// without a readable `Host`.
    var origin: String? {
        authority.map { "\(overTLS ? "https" : "http")://\($0)" }
    }

    /// Why a login start must not run for this request, or nil (`BrowserRequest.loginStartRefusal`:
    /// the one rule for the login pages and for a route's request that would start a device login).
    var loginStartRefusal: String? {
        BrowserRequest.loginStartRefusal(isHead: method == "HEAD", browser: browser)
    }

    /// The absolute URL of `path` on the listener this request came to, as the client named it.
    func url(_ path: String) -> String {
        "\(overTLS ? "https" : "http")://\(host)\(path)"
    }

    /// The URL the client asked for, to come back to after a login.
    var requestedURL: String {
        url(query.isEmpty ? path : "\(path)?\(query)")
    }

    func queryValue(_ name: String) -> String? {
        FormURLEncoding.decode(query).first { $0.name == name }?.value
    }

    func cookie(_ name: String) -> String? {
        cookies.first { $0.name == name }?.value
    }

    /// `Accept` prefers `text/html` when it lists it (or `application/xhtml+xml`) with a
    /// quality above zero that no other listed type beats; `*/*` alone (curl, scripts) does not.
    static func prefersHTML(_ accept: String) -> Bool {
        var html = 0.0, best = 0.0
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { ASCII.trimmingWhitespace($0).lowercased() }
            guard let type = parts.first, !type.isEmpty else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                quality = Double(parameter.dropFirst(2)) ?? 0
            }
            if type == "text/html" || type == "application/xhtml+xml" {
                html = max(html, quality)
            } else if type != "*/*" {
                best = max(best, quality)
            }
        }
        return html > 0 && html >= best
    }

    /// The pairs of a `Cookie` header (RFC 6265 §5.4: `name=value` separated by `; `).
    static func cookies(_ header: String) -> [(String, String)] {
        header.split(separator: ";").compactMap { pair in
            let trimmed = ASCII.trimmingWhitespace(pair)
            guard let equals = trimmed.firstIndex(of: "=") else { return nil }
            return (String(trimmed[..<equals]), String(trimmed[trimmed.index(after: equals)...]))
        }
    }
}
