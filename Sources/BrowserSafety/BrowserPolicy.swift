// BrowserPolicy: whether a browser's request may go through a route with the route's
// credential. The relay adds the credential the way a browser adds a cookie, so it is as careful
// as browsers are with cookies: a SameSite=Lax cookie plus a Fetch Metadata resource-isolation
// policy (web.dev/fetch-metadata). Decided on the head alone, before any token is looked up.
//
//   request                                              credential route   + allowOrigins lists it
//   no Origin, no Sec-Fetch-* (curl, SDKs, services)     allow              allow
//   Sec-Fetch-Site: same-origin | none                   allow              allow
//   Sec-Fetch-Site: cross-site | same-site | other:
//     GET/HEAD, Sec-Fetch-Mode: navigate, Dest: document allow (Lax)        allow, CORS headers
//     anything else (form POST, img, script, iframe,      refuse 403         allow, CORS headers
//     fetch in any mode)
//   no Fetch Metadata, Origin = the relay's own origin   allow              allow
//   no Fetch Metadata, any other Origin, or `null`       refuse 403         allow, CORS headers
//   a preflight (OPTIONS + Access-Control-Request-Method) refuse 403        answered by the relay
//
// A route "guards" when it injects a credential (an identity, or an `Authorization` or `Cookie`
// it sets) or has a `browser` block; other routes forward every request as they come.
//
// The BrowserSafety module: this policy, what a browser said (BrowserRequest.swift), the Host
// names a listener serves (ListenerHosts.swift: DNS rebinding) and what the refusals are
// counted as (BrowserRefusal.swift). Values only, no socket: the data listeners (Proxy's
// `RequestPlacement`), the admin listener (AdminAPI) and the login pages (LoginPages) ask them.

/// The verdict on one request.
public enum BrowserVerdict: Equatable, Sendable {
    /// Not a browser's cross-site request, or one SameSite=Lax lets through: forwarded as is.
    case allow
    /// From an origin the route lists (`browser.allowOrigins`, this index): forwarded, and its
    /// answer carries the CORS headers that let the page read it.
    case allowCORS(origin: Int)
    /// A preflight from a listed origin: the relay answers it and the upstream never sees it.
    case preflight(origin: Int)
    /// Cross-site: refused (403) before anything else happens.
    case refuse
}

public enum BrowserPolicy {
    /// `request`: what the browser said; `guards`: the route injects a credential or has a
    /// `browser` block; `allowOrigins`: the origins its `browser` block lists (nil without one),
    /// compared exactly: browsers write origins lowercased. (A request that says nothing of a
    /// browser — no `Origin`, no `Sec-Fetch-*` — is allowed without asking.)
    public static func verdict(_ request: BrowserRequest, guards: Bool, allowOrigins: [String]?) -> BrowserVerdict {
        guard guards else { return .allow }
        let listed = request.origin.flatMap { allowOrigins?.firstIndex(of: $0) }
        if let listed { return request.isPreflight ? .preflight(origin: listed) : .allowCORS(origin: listed) }
        if request.isPreflight { return .refuse }
        if let site = request.site {
            switch site {
            case .sameOrigin, .none: return .allow
            case .sameSite, .crossSite, .unknown: return request.isLaxNavigation ? .allow : .refuse
            }
        }
        guard let origin = request.origin else { return .allow }
        return origin.lowercased() == request.ownOrigin ? .allow : .refuse
    }
}
