import Config
import HTTP1
import HTTPFields

/// A route's `browser` block compiled for the hot path: the listed origins, and for each the
/// CORS fields of its answers, as bytes. The relay owns CORS on such a route: an upstream's own
/// `Access-Control-*` fields are replaced by these.
final class CORSRules: Sendable {
    let access: BrowserAccess
    /// `Access-Control-Allow-Origin: <origin>\r\n…` per listed origin, for forwarded answers.
    let responseLines: [[UInt8]]
    /// For the route's other answers (same-origin pages, clients that are not browsers): no CORS
    /// fields, the upstream's included, and `Vary: Origin`, so that a cache never gives a listed
    /// origin's page an answer made for another.
    let withoutOrigin = Array("Vary: Origin\r\n".utf8)

    init(_ access: BrowserAccess) {
        self.access = access
        responseLines = access.allowOrigins.map { origin in
            Array(Self.responseFields(origin: origin, access: access).map { "\($0.0): \($0.1)\r\n" }.joined().utf8)
        }
    }

    /// The fields that let a page of `allowOrigins[origin]` read an answer (a forwarded one, or
    /// the relay's own problem).
    func responseFields(origin: Int) -> [(String, String)] {
        Self.responseFields(origin: access.allowOrigins[origin], access: access)
    }

    private static func responseFields(origin: String, access: BrowserAccess) -> [(String, String)] {
        var fields = allowing(origin, vary: "Origin")
        if !access.exposeHeaders.isEmpty { fields.append(("Access-Control-Expose-Headers", access.exposeHeaders.joined(separator: ", "))) }
        return fields
    }

    /// The relay's answer to a listed origin's preflight (Fetch standard §3.2.3): 204 with what
    /// the route allows — its `allowMethods` and `allowHeaders`, or else what the preflight asks
    /// for (the methods the relay forwards; header names as asked, which the origin's own pages
    /// chose). Never forwarded: the upstream does not see it.
    func preflightAnswer(origin: Int, head: HTTPHead) -> Problem {
        var requestedMethod: String?
        var requestedHeaders: String?
        var privateNetwork = false
        for field in head.fields {
            let name = head.name(field)
            if ASCII.equalsIgnoringCase(name, Self.requestMethod) {
                requestedMethod = String(decoding: head.value(field), as: UTF8.self)
            } else if ASCII.equalsIgnoringCase(name, Self.requestHeaders) {
                requestedHeaders = String(decoding: head.value(field), as: UTF8.self)
            } else if ASCII.equalsIgnoringCase(name, Self.requestPrivateNetwork) {
                privateNetwork = ASCII.equalsIgnoringCase(head.value(field), Self.trueValue)
            }
        }
        var fields = Self.allowing(access.allowOrigins[origin], vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
        let methods = access.allowMethods ?? requestedMethod.flatMap { method in
            ASCII.isToken(method) && !["CONNECT", "TRACE"].contains(method.uppercased()) ? [method] : nil
        } ?? []
        if !methods.isEmpty { fields.append(("Access-Control-Allow-Methods", methods.joined(separator: ", "))) }
        let headers = access.allowHeaders ?? requestedHeaders.map(Self.headerNames) ?? []
        if !headers.isEmpty { fields.append(("Access-Control-Allow-Headers", headers.joined(separator: ", "))) }
        fields.append(("Access-Control-Max-Age", String(access.maxAgeSeconds)))
        // Private Network Access (WICG): a page of a listed origin asks to reach the relay on
        // this machine's private network; the listing is the consent.
        if privateNetwork { fields.append(("Access-Control-Allow-Private-Network", "true")) }
        return Problem(status: 204, slug: "", title: "No Content", detail: "", extraHeaders: fields)
    }

    /// What every answer to a listed origin starts with: the origin, with credentials, and what
    /// the answer varies by.
    private static func allowing(_ origin: String, vary: String) -> [(String, String)] {
        [("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Credentials", "true"), ("Vary", vary)]
    }

    /// The names of `Access-Control-Request-Headers`, lowercased; none when one is not a token.
    static func headerNames(_ list: String) -> [String] {
        let names = list.split(separator: ",").map { ASCII.trimmingWhitespace($0).lowercased() }.filter { !$0.isEmpty }
        return names.allSatisfy(ASCII.isToken) ? names : []
    }

    private static let requestMethod = Array("access-control-request-method".utf8)
    private static let requestHeaders = Array("access-control-request-headers".utf8)
    private static let requestPrivateNetwork = Array("access-control-request-private-network".utf8)
    private static let trueValue = Array("true".utf8)
}
