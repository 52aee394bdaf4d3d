import HTTP1
import HTTPFields

/// What a browser said about where a request comes from: `Origin` (RFC 6454) and Fetch
/// Metadata (W3C: `Sec-Fetch-Site`, `-Mode`, `-Dest`), read from a head that carries any (curl,
/// SDKs and services send none, and never get here).
struct BrowserRequest: Equatable {
    /// `Sec-Fetch-Site`: how the page that asked relates to the request's origin.
    enum Site: Equatable {
        case sameOrigin, sameSite, crossSite
        /// The person asked: a typed URL, a bookmark, a link from another program.
        case none
        /// A value no browser sends: taken as cross-site.
        case unknown
    }

    /// Nil when the browser sent no Fetch Metadata (older ones).
    var site: Site?
    /// `Sec-Fetch-Mode: navigate` (the page itself, not a part of it or a script's request).
    var navigates: Bool
    /// `Sec-Fetch-Dest`, lowercased; nil when not sent. `document` is a top-level page.
    var dest: String?
    /// `Origin` as sent (`null` for opaque origins); nil when not sent.
    var origin: String?
    /// GET or HEAD: the methods a SameSite=Lax cookie goes along with on a navigation.
    var isSafeMethod: Bool
    /// OPTIONS with `Access-Control-Request-Method`: a CORS preflight.
    var isPreflight: Bool
    /// The origin this request was sent to, as a browser would write it (`http://localhost:8180`),
    /// from the listener's scheme and the Host; nil without a Host.
    var ownOrigin: String?

    /// The fields of a head that carries Fetch Metadata or `Origin`. A field sent twice makes
    /// the request cross-site: a browser never does that, so none of its words are trusted.
    init(head: HTTPHead, host: UnsafeRawBufferPointer?, overTLS: Bool) {
        let fields = head.fetchMetadata
        func value(_ index: Int32) -> String? {
            index < 0 ? nil : String(decoding: head.value(head.fields[Int(index)]), as: UTF8.self)
        }
        let method = head.methodName
        isSafeMethod = head.isHead || ASCII.equalsIgnoringCase(method, Self.get)
        isPreflight = head.isOptions && fields.origin >= 0
            && head.fields.contains { ASCII.equalsIgnoringCase(head.name($0), Self.requestMethodName) }
        if fields.repeated {
            site = .unknown
            navigates = false
            dest = nil
            origin = nil
        } else {
            site = value(fields.site).map(Self.site)
            navigates = value(fields.mode).map { $0.lowercased() == "navigate" } ?? false
            dest = value(fields.dest)?.lowercased()
            origin = value(fields.origin)
        }
        ownOrigin = host.flatMap { Self.origin(host: $0, overTLS: overTLS) }
    }

    private static let get = Array("get".utf8)
    private static let requestMethodName = Array("access-control-request-method".utf8)

    static func site(_ value: String) -> Site {
        switch value.lowercased() {
        case "same-origin": .sameOrigin
        case "same-site": .sameSite
        case "cross-site": .crossSite
        case "none": .none
        default: .unknown
        }
    }

    /// A top-level page the person goes to (`Sec-Fetch-Mode: navigate`, `Sec-Fetch-Dest:
    /// document`) with GET or HEAD: what a SameSite=Lax cookie goes along with from another site.
    var isLaxNavigation: Bool {
        isSafeMethod && navigates && dest == "document"
    }

    /// The origin of a request to `host` (a Host value, with or without a port), as a browser
    /// serializes it: lowercased, the scheme's default port left out.
    static func origin(host: UnsafeRawBufferPointer, overTLS: Bool) -> String? {
        guard !host.isEmpty else { return nil }
        var authority = String(decoding: host, as: UTF8.self).lowercased()
        let defaultPort = overTLS ? ":443" : ":80"
        if authority.hasSuffix(defaultPort) { authority.removeLast(defaultPort.count) }
        return (overTLS ? "https://" : "http://") + authority
    }
}
