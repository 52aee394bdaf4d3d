// RequestPlacement: where a request head goes, decided on the head alone, with no socket and
// before any token is looked up or any byte goes upstream (the model: Exchange, whose answers
// the connection carries out). In order:
//
//   1. methods the relay never forwards: CONNECT and TRACE (405), OPTIONS at Max-Forwards 0
//   2. the request-target and path (400; a target it cannot read closes the connection)
//   3. the Host: its syntax (400, closing), then whether this listener serves it (421, closing:
//      DNS rebinding, `ListenerHosts`; on the forward proxy `ForwardPlacement` checked it)
//   4. the relay's login pages (answered by `LoginEndpoints`)
//   5. the route (404 without one; on the forward proxy, without one whose `match.host` covers
//      the host), the browser's `/favicon.ico` on a person's route (404)
//   6. on the forward proxy, `http://` absolute-form on a route with a credential: 308 to
//      `https://` (browsers send no Fetch Metadata to `http://` URLs; through `CONNECT` they do)
//   7. the browser policy: a cross-site browser request on a route with a credential (403), a
//      listed origin's preflight (answered here), CORS for listed origins (`BrowserPolicy`)
//   8. whether the request may start a person's login (not a HEAD, not a part of a page)
//
// The token is looked up by the connection afterwards, on the route's identity.

import BrowserSafety
import Endpoints
import HTTP1
import HTTPFields
import LoginPages
import Routing

struct RequestPlacement {
    enum Placement {
        /// On `plan`'s route. `upgrade`: the protocols the route allows of those asked for;
        /// `cors`: the listed origin whose page asked (its answer carries CORS fields);
        /// `startsLogin`: the request may start a person's device login when it finds none.
        case route(RoutePlan, upgrade: [UInt8]?, cors: Int?, startsLogin: Bool)
        /// A page of the relay's own login endpoints.
        indirect case loginPage(LoginRequest)
        /// Answered by the relay. `closing`: what follows on the connection cannot be trusted;
        /// `refusal`: a refusal the metrics count.
        // Indirect, as the login page's: the placement most requests get, `route`, stays a few
        // words, cheap to return and to take apart.
        indirect case answer(Problem, closing: Bool, refusal: BrowserRefusal?)
    }

    let settings: ProxySettings
    /// The request came to the TLS listener (or through an intercepted `CONNECT`).
    let overTLS: Bool
    /// The forward proxy checked the host already (`ForwardPlacement`): no listener's Host
    /// check, and no login pages (they are the reverse listener's).
    var hostVouched = false

    private static let options = Array("options".utf8)

    /// `normalizedPath`: the connection's buffer, left holding the path as routing read it (the
    /// forwarding writes the upstream target from it). `record`: filled for the access log when
    /// `logging`.
    @inline(__always)
    func place(_ head: HTTPHead, normalizedPath: inout [UInt8], record: inout ExchangeRecord, logging: Bool) -> Placement {
        if head.isConnect { return .answer(.methodNotAllowed(), closing: false, refusal: nil) }
        if head.isTrace { return .answer(.methodNotAllowed("TRACE"), closing: false, refusal: nil) }
        if head.maxForwards == 0 { return .answer(.finalRecipientOfOptions(), closing: false, refusal: nil) }
        // A request the relay cannot place is malformed: 400 and the connection closes
        // (DESIGN.md's error model), as for what the parser refuses.
        guard let target = RequestTarget(head.target) else {
            return .answer(.badRequest("the request-target is not origin-form, absolute-form (without userinfo) or *"), closing: true, refusal: nil)
        }
        if logging { record.logged?.path = String(decoding: target.path, as: UTF8.self) }
        if target.isAsterisk && !ASCII.equalsIgnoringCase(head.methodName, Self.options) {
            return .answer(.badRequest("the asterisk-form request-target is for OPTIONS only"), closing: false, refusal: nil)
        }
        guard target.isAsterisk || RequestPath.normalize(target.path, into: &normalizedPath) else {
            return .answer(.badRequest("the request path is malformed"), closing: false, refusal: nil)
        }
        if target.isAsterisk { normalizedPath = [UInt8(ascii: "/")] }
        if let host = head.host, !host.isEmpty, !RequestTarget.isAuthority(host) {
            return .answer(.badRequest("the Host header is not a host[:port]"), closing: true, refusal: nil)
        }
        let host = target.authority ?? head.host ?? UnsafeRawBufferPointer(start: nil, count: 0)
        guard hostVouched || (overTLS ? settings.tlsHosts : settings.plainHosts).serves(host) else {
            let name = String(decoding: host, as: UTF8.self)
            let loginPage = settings.servesLogins && settings.logins!.serves(path: normalizedPath)
            return .answer(loginPage ? Problem(LoginEndpoints.wrongHost(name)) : .misdirected(host: name, overTLS: overTLS), closing: true,
                           refusal: .host)
        }
        if settings.servesLogins, !hostVouched, let logins = settings.logins, logins.serves(path: normalizedPath) {
            return .loginPage(normalizedPath.withUnsafeBytes {
                LoginRequest(head: head, path: $0, queryWithMark: target.queryWithMark, authority: target.authority, overTLS: overTLS)
            })
        }
        let plan = normalizedPath.withUnsafeBytes {
            hostVouched ? settings.planNamingHost(host: host, path: $0) : settings.plan(host: host, path: $0)
        }
        guard let plan else { return .answer(.noRoute(), closing: false, refusal: nil) }
        if logging { record.logged?.routeName = plan.route.name }
        if hostVouched && !overTLS && plan.guardsCredential, let authority = target.authority, Self.isPlainHTTP(head.target) {
            return .answer(.upgradeToHTTPS(authority: authority, path: target.path, queryWithMark: target.queryWithMark, route: plan.route.name),
                           closing: false, refusal: nil)
        }
        if plan.withholdsFavicon && normalizedPath == RoutePlan.faviconBytes {
            return .answer(.faviconNotForwarded(route: plan.route.name), closing: false, refusal: nil)
        }
        var cors: Int?
        var startsLogin = !head.isHead
        // Most requests carry no word from a browser: they go on without a look at the policy.
        if !head.fetchMetadata.isEmpty {
            let browser = BrowserRequest(head: head, host: host, overTLS: overTLS)
            switch BrowserPolicy.verdict(browser, guards: plan.guardsCredential, allowOrigins: plan.cors?.access.allowOrigins) {
            case .allow:
                break
            case .allowCORS(let origin):
                cors = origin
            case .preflight(let origin):
                // A preflight verdict comes only from a route's listed origins.
                guard let rules = plan.cors else { preconditionFailure("a preflight verdict without a browser block") }
                var answer = rules.preflightAnswer(origin: origin, head: head)
                answer.route = plan.route.name
                return .answer(answer, closing: false, refusal: nil)
            case .refuse:
                return .answer(.crossSite(route: plan, origin: browser.origin), closing: false, refusal: .crossSite)
            }
            startsLogin = BrowserRequest.loginStartRefusal(isHead: head.isHead, browser: browser) == nil
        }
        let upgrade = head.isUpgrade ? plan.allowedUpgrade(head) : nil
        return .route(plan, upgrade: upgrade, cors: cors, startsLogin: startsLogin)
    }

    /// Whether an absolute-form target `RequestTarget` read is `http://…` (not `https://…`).
    private static func isPlainHTTP(_ raw: UnsafeRawBufferPointer) -> Bool {
        raw.count > 4 && raw[4] == UInt8(ascii: ":")
    }
}
