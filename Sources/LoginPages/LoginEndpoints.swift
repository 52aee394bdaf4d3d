// LoginEndpoints: the relay's own pages for a person logging in, served on the listeners that
// serve routes (a browser reaches them where it reaches the routes), never forwarded:
//
//   GET /.oauth-relay/login/NAME[?return=PATH]   start NAME's login: to the IdP (browser login)
//                                                or to the status page (device login)
//   GET <redirectUri's path>                     the IdP's redirect back (default
//                                                /.oauth-relay/callback): the code is exchanged,
//                                                then back to PATH or to the status page
//   GET /.oauth-relay/status/NAME[?return=PATH]  where NAME's login stands: the device code to
//                                                enter, "finishing", who is logged in; it
//                                                refreshes itself until the login ends, then goes
//                                                on to PATH
//
// And the answer to a request on a route whose identity needs a login: a browser is redirected
// to the login (or, right after a failed login, shown why), anything else gets the 401 problem
// with `loginUrl` and a `WWW-Authenticate` naming it.
//
// Every login page checks `Host` against the names of the listener it came to: a page of a
// loopback listener answers only to loopback names, so a web page on another site cannot reach
// it under a rebound DNS name (DNS rebinding) and start or finish logins. A login start also
// refuses what a browser says another site asked for (`LoginRequest.loginStartRefusal`), and no
// page may be framed (clickjacking).
//
// A browser login may start at another host name than its redirect URI's (the person browses
// `localhost`, the callback is `127.0.0.1`): the login cookie is then in the browser's jar for
// the start's origin, so a callback arriving without it goes on to the same callback there.
//
// The LoginPages module: these pages, what they read of a request (LoginRequest.swift), their
// HTML (LoginPage.swift) and paths (LoginPaths.swift). They decide and Proxy serves: each
// answer is a `LoginAnswer`, which Proxy writes as one of its own (`Problem`).

import Config
import Endpoints
import HTTPFields
import OAuth2
import Tokens

public struct LoginEndpoints: Sendable {
    let desk: LoginDesk
    let identities: TokenSet
    /// The paths of the identities' redirect URIs.
    let callbackPaths: Set<String>
    @usableFromInline let callbackPathBytes: [[UInt8]]
    let config: RelayConfig

    public init?(config: RelayConfig, identities: TokenSet?, desk: LoginDesk?) {
        guard let identities, let desk, config.identities.values.contains(where: { $0.grant.isInteractive }) else { return nil }
        self.desk = desk
        self.identities = identities
        self.config = config
        callbackPaths = Set(config.identities.values.compactMap { $0.redirectUri?.path })
        callbackPathBytes = callbackPaths.map { Array($0.utf8) }
    }

    /// True for a (normalized) path the login pages answer. Asked of every request when the
    /// configuration has an interactive identity, so it compares bytes and allocates nothing
    /// (and is inlined into Proxy's `RequestPlacement`).
    @inlinable
    public func serves(path: [UInt8]) -> Bool {
        path.starts(with: LoginPaths.prefix.utf8) || callbackPathBytes.contains(path)
    }

    // MARK: - The pages

    public func answer(_ request: LoginRequest, at now: Double) -> LoginAnswer {
        guard hostIsAllowed(request) else { return Self.wrongHost(request.host) }
        guard request.method == "GET" || request.method == "HEAD" else {
            return LoginAnswer(status: 405, reason: "Method Not Allowed",
                               body: .problem(slug: "method-not-allowed", detail: "the login pages answer GET and HEAD"),
                               fields: [("Allow", "GET, HEAD")])
        }
        let returnTo = request.queryValue("return").flatMap(LoginReturn.path)
        if callbackPaths.contains(request.path) { return callback(request, at: now) }
        if request.path.hasPrefix(LoginPaths.loginPrefix) {
            return withIdentity(String(request.path.dropFirst(LoginPaths.loginPrefix.count))) { start($0, request, returnTo: returnTo, at: now) }
        }
        if request.path.hasPrefix(LoginPaths.statusPrefix) {
            return withIdentity(String(request.path.dropFirst(LoginPaths.statusPrefix.count))) { status($0, returnTo: returnTo, at: now) }
        }
        return Self.page(404, "Not Found", LoginPage(title: "Not found", lines: ["The relay has no login page at \(request.path)."]))
    }

    private func withIdentity(_ name: String, _ body: (IdentityTokens) -> LoginAnswer) -> LoginAnswer {
        guard let tokens = identities[name], tokens.identity.grant.isInteractive else {
            return Self.page(404, "Not Found", LoginPage(title: "Unknown identity",
                                                         lines: ["No identity named \(name) logs a person in on this relay."]))
        }
        return body(tokens)
    }

    private func start(_ tokens: IdentityTokens, _ request: LoginRequest, returnTo: String?, at now: Double) -> LoginAnswer {
        let name = tokens.identity.name
        if let refusal = request.loginStartRefusal {
            // Nothing started; a person who meant it follows the link, which the browser then
            // sends as a request of the relay's own page.
            return Self.page(403, "Forbidden", LoginPage(
                title: "Login not started",
                lines: ["The relay did not start a login for identity \(name): \(refusal). "
                        + "It starts a login only when a person opens its login page.",
                        "If you meant to log in, continue here."],
                links: [("Log in for identity \(name)", LoginPaths.loginPath(name, returnTo: returnTo))]))
        }
        if case .deviceCode = tokens.identity.grant {
            desk.startDeviceLogin(tokens)
            return Self.redirect(to: LoginPaths.statusPath(name, returnTo: returnTo))
        }
        do throws(LoginDesk.Unavailable) {
            let login = try desk.startBrowserLogin(tokens, returnTo: returnTo, browserOrigin: request.origin, at: now)
            var answer = Self.redirect(to: login.location)
            answer.fields.append(("Set-Cookie", login.cookie.setCookie(secure: request.overTLS)))
            return answer
        } catch {
            guard let retryAfter = error.retryAfterSeconds else {
                // 503 like the route's own requests (discovery is retried after its backoff), but
                // only a configuration change or the IdP's operator helps: the page does not
                // refresh itself.
                return Self.page(503, "Service Unavailable", LoginPage(title: "The login cannot start", lines: ["\(error)."]))
            }
            var answer = Self.page(503, "Service Unavailable", LoginPage(title: "The login cannot start yet", lines: ["\(error)."],
                                                                         refreshSeconds: retryAfter))
            answer.fields.append(("Retry-After", "\(retryAfter)"))
            return answer
        }
    }

    private func callback(_ request: LoginRequest, at now: Double) -> LoginAnswer {
        switch desk.callback(path: request.path, query: request.query, cookies: request.cookies, origin: request.origin,
                             identities: identities, at: now) {
        case .elsewhere(let origin):
            return Self.redirect(to: origin + request.path + (request.query.isEmpty ? "" : "?" + request.query))
        case .exchanging(let name, let returnTo, let clear):
            var answer = Self.redirect(to: returnTo ?? LoginPaths.statusPath(name, returnTo: nil))
            answer.fields.append(("Set-Cookie", clear.setCookie(secure: request.overTLS)))
            return answer
        case .idpError(let name, let error, let clear):
            let description = error.errorDescription.map { ": \($0)" } ?? ""
            var answer = Self.page(403, "Forbidden", LoginPage(
                title: error.code.rawValue == "access_denied" ? "Login declined" : "Login failed",
                lines: ["The identity provider ended the login" + (name.map { " for identity \($0)" } ?? "")
                        + " with \(error.code.rawValue)\(description)."],
                links: name.map { [("Try again", LoginPaths.loginPath($0, returnTo: nil))] } ?? []))
            if let clear { answer.fields.append(("Set-Cookie", clear.setCookie(secure: request.overTLS))) }
            return answer
        case .refused(let reason, let clear):
            var answer = Self.page(400, "Bad Request", LoginPage(title: "This login cannot be completed", lines: [reason]))
            if let clear { answer.fields.append(("Set-Cookie", clear.setCookie(secure: request.overTLS))) }
            return answer
        }
    }

    private func status(_ tokens: IdentityTokens, returnTo: String?, at now: Double) -> LoginAnswer {
        let name = tokens.identity.name
        let status = tokens.status(at: now)
        let back = returnTo.map { [("Continue to \($0)", $0)] } ?? []
        if status.hasValidToken && status.state != .loginPending {
            if let returnTo { return Self.redirect(to: returnTo) }
            let who = status.loggedInAs.map { "Logged in as \($0)" } ?? "Logged in"
            return Self.page(200, "OK", LoginPage(title: who, lines: ["Identity \(name) holds a valid token: requests through the relay carry it."],
                                                  links: back))
        }
        switch status.state {
        case .loginPending, .refreshing:
            if let device = status.deviceLogin {
                return Self.page(200, "OK", LoginPage(
                    title: "Enter the code \(device.userCode)",
                    lines: ["To log in for identity \(name), open the link below and enter the code \(device.userCode).",
                            "It expires in \(device.expiresIn) s. This page moves on by itself once you are done."],
                    links: [("Open \(device.verificationUri)", device.verificationUriComplete ?? device.verificationUri)],
                    refreshSeconds: 3))
            }
            return Self.page(200, "OK", LoginPage(title: "Finishing the login",
                                                  lines: ["The relay is exchanging the login's code for identity \(name)."],
                                                  refreshSeconds: 1))
        default:
            var lines = ["Identity \(name) needs a person to log in."]
            if let failure = status.lastLoginFailure { lines.append("The last login failed: \(failure).") }
            if status.state == .failing, let error = status.lastErrorDescription {
                lines.append("The relay cannot use the identity's IdP now: \(error).")
            }
            return Self.page(200, "OK", LoginPage(title: "Not logged in", lines: lines,
                                                  links: [("Log in", LoginPaths.loginPath(name, returnTo: returnTo))]))
        }
    }

    // MARK: - A request on a route whose identity needs a login

    /// The 401 `login-required` problem of a route's request, made useful: a browser goes to
    /// the login (unless the last one just failed: then it is shown why, with the problem's own
    /// `problemFields`), anything else gets the URL that starts the login in the problem and in
    /// `WWW-Authenticate`. Nil for an identity the pages do not know: the problem stays as it is.
    public func loginRequired(identity name: String, request: LoginRequest, problemFields: [(String, String)],
                              at now: Double) -> LoginNeeded? {
        guard let tokens = identities[name] else { return nil }
        let returnTo = LoginReturn.path(request.query.isEmpty ? request.path : "\(request.path)?\(request.query)")
        let isDevice: Bool = { if case .deviceCode = tokens.identity.grant { true } else { false } }()
        let path = isDevice ? LoginPaths.statusPath(name, returnTo: nil) : LoginPaths.loginPath(name, returnTo: nil)
        if request.isBrowserNavigation {
            let failure = tokens.status(at: now).lastLoginFailure
            if failure == nil || isDevice {
                return .answer(Self.redirect(to: isDevice ? LoginPaths.statusPath(name, returnTo: returnTo)
                                                          : LoginPaths.loginPath(name, returnTo: returnTo)))
            }
            var page = Self.page(401, "Unauthorized", LoginPage(
                title: "Login needed", lines: ["Identity \(name) needs a person to log in. The last login failed: \(failure!)."],
                links: [("Log in again", LoginPaths.loginPath(name, returnTo: returnTo))]))
            page.fields += problemFields
            return .answer(page)
        }
        let url = request.url(path)
        return .problem(loginURL: url, field: ("WWW-Authenticate", "OAuth-Relay-Login identity=\"\(name)\", login_url=\"\(url)\""))
    }

    // MARK: - Helpers

    /// Whether `Host` names the listener the request came to: its own address, a loopback
    /// name on a loopback (or wildcard) listener, or the host of an identity's redirect URI.
    func hostIsAllowed(_ request: LoginRequest) -> Bool {
        guard let authority = request.authority else { return false }
        let listener = request.overTLS ? config.listenTls?.address : config.listen
        guard let listener, authority.port == listener.port else { return false }
        let host = authority.host
        if host == listener.host.lowercased() { return true }
        let wildcard = listener.host == "0.0.0.0" || listener.host == "::"
        if (wildcard || HostSyntax.isLoopback(listener.host)) && HostSyntax.isLoopback(host) { return true }
        return config.identities.values.contains { $0.redirectUri?.host.lowercased() == host && $0.redirectUri?.port == listener.port }
    }

    /// A login page asked for under a name its listener does not answer to (here, or at the
    /// listener's Host check: `RequestPlacement`), shown as a page, since a person may see it.
    public static func wrongHost(_ host: String) -> LoginAnswer {
        page(421, "Misdirected Request", LoginPage(
            title: "Wrong host name",
            lines: ["The relay's login pages answer only to the names of the listener they are on; \(host) is not one of them."]))
    }

    static func redirect(to location: String) -> LoginAnswer {
        LoginAnswer(status: 302, reason: "Found", body: .none, fields: [("Location", location)])
    }

    /// A login page: never shown in a frame, so no other site can lay it under its own page and
    /// have a person click its links unknowingly.
    static func page(_ status: Int, _ reason: String, _ page: LoginPage) -> LoginAnswer {
        LoginAnswer(status: status, reason: reason, body: .page(page),
                    fields: [("X-Frame-Options", "DENY"), ("Content-Security-Policy", "frame-ancestors 'none'")])
    }
}
