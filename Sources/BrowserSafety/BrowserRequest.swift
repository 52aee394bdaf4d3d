import HTTP1
import HTTPFields

/// What a browser said about where a request comes from: `Origin` (RFC 6454) and Fetch
/// Metadata (W3C: `Sec-Fetch-Site`, `-Mode`, `-Dest`), read from a head that carries any (curl,
/// SDKs and services send none, and never get here).
public struct BrowserRequest: Equatable, Sendable {
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
    public internal(set) var origin: String?
    /// GET or HEAD: the methods a SameSite=Lax cookie goes along with on a navigation.
    var isSafeMethod: Bool
    /// OPTIONS with `Access-Control-Request-Method`: a CORS preflight.
    var isPreflight: Bool
    /// The origin this request was sent to, as a browser would write it (`http://localhost:8180`),
    /// from the listener's scheme and the Host; nil without a Host.
    var ownOrigin: String?

    /// What a browser said, from the fields' values (nil: not sent). `repeated`: one of them came
    /// twice, which a browser never does, so none of its words are trusted: the request is
    /// cross-site. `host`: the Host the request named, for its own origin.
    public init(isSafeMethod: Bool, isPreflight: Bool, site: String?, mode: String?, dest: String?, origin: String?, repeated: Bool,
                host: String?, overTLS: Bool) {
        self.isSafeMethod = isSafeMethod
        self.isPreflight = isPreflight
        if repeated {
            self.site = .unknown
            navigates = false
            self.dest = nil
            self.origin = nil
        } else {
            self.site = site.map(Self.site)
            navigates = mode.map { $0.lowercased() == "navigate" } ?? false
            self.dest = dest?.lowercased()
            self.origin = origin
        }
        ownOrigin = host.flatMap { Self.origin(host: $0, overTLS: overTLS) }
    }

    /// The fields of a head that carries Fetch Metadata or `Origin`.
    public init(head: HTTPHead, host: UnsafeRawBufferPointer?, overTLS: Bool) {
        let fields = head.fetchMetadata
        func value(_ index: Int32) -> String? {
            index < 0 ? nil : String(decoding: head.value(head.fields[Int(index)]), as: UTF8.self)
        }
        self.init(isSafeMethod: head.isHead || ASCII.equalsIgnoringCase(head.methodName, Self.get),
                  isPreflight: head.isOptions && fields.origin >= 0
                      && head.fields.contains { ASCII.equalsIgnoringCase(head.name($0), Self.requestMethodName) },
                  site: value(fields.site), mode: value(fields.mode), dest: value(fields.dest), origin: value(fields.origin),
                  repeated: fields.repeated, host: host.map { String(decoding: $0, as: UTF8.self) }, overTLS: overTLS)
    }

    /// Why a request may not start a person's login (nil: it may). A start has effects — a device
    /// authorization at the IdP, a browser login's place among the few kept per identity — and
    /// any web page can make a browser send one (`<img src=…>`, a frame, a script's request, a
    /// link it follows). So not a HEAD (it only asks what the answer would be: link checkers,
    /// prefetchers), and from a browser only what a person opens: a top-level page
    /// (`Sec-Fetch-Dest: document`) that no other site sent. Curl and scripts send no Fetch
    /// Metadata and start logins as before. `browser`: nil when the request carries none.
    public static func loginStartRefusal(isHead: Bool, browser: BrowserRequest?) -> String? {
        if isHead { return "a HEAD request only asks what the page would be" }
        guard let browser else { return nil }
        if browser.site == .crossSite || browser.site == .unknown {
            return "the browser was sent here by a page on another site"
        }
        if let dest = browser.dest, dest != "document" {
            return "the browser asked for it as \(dest == "empty" ? "a script's request" : "a part of another page (\(dest))")"
        }
        return nil
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
    static func origin(host: String, overTLS: Bool) -> String? {
        guard !host.isEmpty else { return nil }
        var authority = host.lowercased()
        let defaultPort = overTLS ? ":443" : ":80"
        if authority.hasSuffix(defaultPort) { authority.removeLast(defaultPort.count) }
        return (overTLS ? "https://" : "http://") + authority
    }
}
