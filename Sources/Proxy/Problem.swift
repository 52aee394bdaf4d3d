import OAuth2
import ByteBuffers
import HTTPFields
import LoginPages
import SafeText

/// An error the relay answers itself, as `application/problem+json` (RFC 9457). The body names
/// the route when one was matched and never carries a token, a secret or request bytes beyond
/// what `detail` states. Some answers are not errors: OPTIONS at `Max-Forwards: 0`
/// (`finalRecipientOfOptions`), which the relay answers as the final recipient, without a body;
/// and the login pages and redirects (`page`), whose body is HTML (LoginPages, written here:
/// Problem+LoginPages.swift).
struct Problem {
    let status: Int
    /// Stable slug, the last part of `type` (`urn:oauth-relay:problem:<slug>`).
    let slug: String
    let title: String
    let detail: String
    var route: String?
    var extraHeaders: [(String, String)] = []
    /// For token problems: the identity and what its token endpoint said (RFC 6749 §5.2).
    var identity: String?
    var oauthError: String?
    var oauthErrorDescription: String?
    /// Each error, when there are several (a configuration that failed to load).
    var errors: [String] = []
    /// For a person logging in: the URL that starts the login (`loginUrl`), and a device
    /// login's code and where to enter it.
    var loginUrl: String?
    var deviceLogin: DevicePrompt?
    /// A body other than the problem's JSON: a login page.
    var page: LoginPage?
    /// The `Origin` of a refused cross-site request.
    var origin: String?

    static func badRequest(_ detail: String) -> Problem {
        Problem(status: 400, slug: "bad-request", title: "Bad Request", detail: detail)
    }
    static func noRoute() -> Problem {
        Problem(status: 404, slug: "no-route", title: "No Route", detail: "no route matches this host and path")
    }
    static func methodNotAllowed(_ method: String = "CONNECT") -> Problem {
        Problem(status: 405, slug: "method-not-allowed", title: "Method Not Allowed",
                detail: "\(method) is not supported by this reverse proxy",
                extraHeaders: [("Allow", allowedMethods)])
    }
    /// The methods the relay forwards, as `Allow` lists them: every method llhttp knows but
    /// CONNECT (a tunnel, not a reverse proxy's business) and TRACE (it would echo the injected
    /// token back to the client), of which these are the usual ones.
    static let allowedMethods = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"
    /// OPTIONS with `Max-Forwards: 0` (RFC 9110 §7.6.2): not forwarded; answered 200 with Allow.
    static func finalRecipientOfOptions() -> Problem {
        Problem(status: 200, slug: "", title: "OK", detail: "", extraHeaders: [("Allow", allowedMethods)])
    }
    static func headerTimeout() -> Problem {
        Problem(status: 408, slug: "request-timeout", title: "Request Timeout",
                detail: "the request head did not arrive within headerTimeoutSeconds")
    }
    static func requestBodyTimeout() -> Problem {
        Problem(status: 408, slug: "request-timeout", title: "Request Timeout",
                detail: "the request body did not arrive within requestBodyTimeoutSeconds (at requestBodyMinBytesPerSecond)")
    }
    static func headersTooLarge(_ detail: String) -> Problem {
        Problem(status: 431, slug: "request-header-fields-too-large", title: "Request Header Fields Too Large", detail: detail)
    }
    static func notImplemented(_ detail: String) -> Problem {
        Problem(status: 501, slug: "not-implemented", title: "Not Implemented", detail: detail)
    }
    static func versionNotSupported(_ detail: String) -> Problem {
        Problem(status: 505, slug: "http-version-not-supported", title: "HTTP Version Not Supported", detail: detail)
    }
    static func badGateway(_ detail: String, route: String?) -> Problem {
        Problem(status: 502, slug: "bad-gateway", title: "Bad Gateway", detail: detail, route: route)
    }
    static func gatewayTimeout(_ detail: String, route: String?) -> Problem {
        Problem(status: 504, slug: "gateway-timeout", title: "Gateway Timeout", detail: detail, route: route)
    }

    /// A Host this listener does not serve (`ListenerHosts`): never forwarded. 421 says the
    /// request reached a server not configured for that name (RFC 9110 §15.5.20).
    static func misdirected(host: String, overTLS: Bool) -> Problem {
        Problem(status: 421, slug: "misdirected-request", title: "Misdirected Request",
                detail: "this listener does not serve the host \"\(host)\": it answers to loopback names and the names in "
                    + (overTLS ? "hosts or listenTls.hosts" : "hosts") + " (a web page whose name points here, by DNS rebinding, gets nothing)")
    }

    /// A browser's cross-site request on a route with a credential (`BrowserPolicy`).
    static func crossSite(route: RoutePlan, origin: String?) -> Problem {
        let key = "routes[\(route.route.index)].browser.allowOrigins"
        let who = origin.map { "the page at \($0)" } ?? "a page on another site"
        let allow = origin.map { $0 == "null" ? "; an opaque origin (null) cannot be allowed" : "; to allow it, add \"\($0)\" to \(key)" }
            ?? "; an origin listed in \(key) may call the route with CORS"
        var problem = Problem(status: 403, slug: "cross-site-request", title: "Forbidden",
                              detail: "the relay does not add route \(route.route.name)'s credential to a request \(who) made "
                                  + "the browser send" + allow, route: route.route.name)
        problem.origin = origin
        return problem
    }

    /// The browser's own `/favicon.ico` on a route of a person's identity whose prefix does not
    /// name it: not sent upstream with the person's token.
    static func faviconNotForwarded(route: String) -> Problem {
        Problem(status: 404, slug: "favicon-not-forwarded", title: "Not Found",
                detail: "/favicon.ico is not sent upstream with a person's token; a route whose pathPrefix names it forwards it",
                route: route)
    }

    static let loginRequiredSlug = "login-required"

    /// A request on a route whose identity has no valid token (never carries the token).
    static func tokenUnavailable(_ reason: TokenUnavailable, route: String?) -> Problem {
        let (slug, title): (String, String)
        switch reason.reason {
        case .refused: (slug, title) = ("token-refused", "Bad Gateway")
        case .unavailable: (slug, title) = ("token-endpoint-unavailable", "Service Unavailable")
        case .needsLogin: (slug, title) = (loginRequiredSlug, "Unauthorized")
        case .callerUnauthorized: (slug, title) = ("caller-token-refused", "Unauthorized")
        case .callerForbidden: (slug, title) = ("caller-not-permitted", "Forbidden")
        case .needsConfiguration: (slug, title) = ("needs-configuration", "Bad Gateway")
        }
        var problem = Problem(status: reason.status, slug: slug, title: title, detail: reason.detail, route: route)
        problem.identity = reason.identity
        problem.oauthError = reason.oauthError
        problem.oauthErrorDescription = reason.oauthErrorDescription
        problem.deviceLogin = reason.deviceLogin
        if let seconds = reason.retryAfterSeconds { problem.extraHeaders.append(("Retry-After", "\(seconds)")) }
        // RFC 6750 §3.1: the token endpoint refused the caller's token, or this use of it.
        if reason.reason == .callerUnauthorized {
            problem.extraHeaders.append(("WWW-Authenticate", "Bearer realm=\"\(bearerRealm)\", error=\"invalid_token\""))
        }
        if reason.reason == .callerForbidden {
            problem.extraHeaders.append(("WWW-Authenticate", "Bearer realm=\"\(bearerRealm)\", error=\"insufficient_scope\""))
        }
        return problem
    }

    /// What the client is told when the upstream failed before a response head went out.
    static func upstreamFailure(_ failure: UpstreamFailure, route: String?) -> Problem {
        switch failure {
        case .resolve(let detail):
            return .badGateway(detail, route: route)
        case .connect(let error):
            return .badGateway("cannot connect to the upstream: \(error.name)", route: route)
        case .tls(let reason):
            return .badGateway("TLS with the upstream failed: \(reason)", route: route)
        case .connectTimeout:
            return .gatewayTimeout("connecting to the upstream timed out", route: route)
        case .queueTimeout:
            var problem = Problem(status: 503, slug: "upstream-busy", title: "Service Unavailable",
                                  detail: "every connection to the upstream (maxUpstreamConnections) stayed busy for upstreamQueueTimeoutSeconds",
                                  route: route)
            problem.extraHeaders.append(("Retry-After", "1"))
            return problem
        case .responseTimeout:
            return .gatewayTimeout("the upstream did not respond within upstreamResponseTimeoutSeconds", route: route)
        case .responseTotalTimeout:
            return .gatewayTimeout("the upstream's response did not complete within upstreamResponseTotalSeconds", route: route)
        case .closed(let error):
            return .badGateway(error.map { "the upstream reset the connection before responding (\($0.name))" }
                               ?? "the upstream closed the connection before responding", route: route)
        case .badResponse(let error):
            return .badGateway("the upstream sent an invalid response: \(error.reason)", route: route)
        }
    }

    var reasonPhrase: String { title }

    func json() -> String {
        var body = "{\"type\":\"urn:oauth-relay:problem:\(slug)\",\"title\":\(JSONText.quote(title)),\"status\":\(status),\"detail\":\(JSONText.quote(detail))"
        if let route { body += ",\"route\":\(JSONText.quote(route))" }
        if let identity { body += ",\"identity\":\(JSONText.quote(identity))" }
        if let oauthError { body += ",\"oauthError\":\(JSONText.quote(oauthError))" }
        if let oauthErrorDescription { body += ",\"oauthErrorDescription\":\(JSONText.quote(oauthErrorDescription))" }
        if !errors.isEmpty { body += ",\"errors\":[" + errors.map(JSONText.quote).joined(separator: ",") + "]" }
        if let origin { body += ",\"origin\":\(JSONText.quote(origin))" }
        if let loginUrl { body += ",\"loginUrl\":\(JSONText.quote(loginUrl))" }
        if let deviceLogin { body += deviceLogin.jsonMembers }
        return body + "}"
    }

    /// The whole response; `keepAlive` false adds `Connection: close`. To a HEAD request
    /// (`toHead`) the same head without the body (RFC 9110 §9.3.2).
    func write(keepAlive: Bool, viaSuffix: [UInt8], toHead: Bool = false, into out: inout ByteBuffer) {
        // Below 400 no problem body, but for a redirect the relay explains (a slug: the forward
        // proxy's 308 to https), not a login page's plain 302.
        let explained = status >= 400 || (300..<400).contains(status) && !slug.isEmpty
        let body = page?.html ?? (explained ? json() : "")
        out.appendStatusLine(status, reason: reasonPhrase)
        if !body.isEmpty { out.appendField("Content-Type", page == nil ? "application/problem+json" : "text/html; charset=utf-8") }
        // 204 and 304 have no body and no Content-Length (RFC 9110 §8.6).
        if status != 204 && status != 304 { out.appendContentLength(UInt64(body.utf8.count)) }
        out.appendField("Cache-Control", "no-store")
        for (name, value) in extraHeaders { out.appendField(name, value) }
        if !keepAlive { out.appendField("Connection", "close") }
        out.appendVia(versionMinor: 1, suffix: viaSuffix)
        out.appendEndOfHead()
        if !toHead { out.append(utf8: body) }
    }
}
