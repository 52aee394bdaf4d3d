import Endpoints

/// `routes[].browser`: the web pages of other origins that may call a route through a browser,
/// as CORS allows them. Without it, a route that injects a credential refuses every cross-site
/// browser request (`BrowserPolicy`, in BrowserSafety); with it, the listed origins get through,
/// and the relay answers their preflights itself.
public struct BrowserAccess: Sendable, Equatable {
    /// Exact origins (`http://localhost:3000`): scheme and host lowercased, the scheme's default
    /// port left out, as a browser writes `Origin`. No wildcard: a listed origin's pages act
    /// with the route's credential.
    public var allowOrigins: [String]
    /// The methods a preflight allows; nil: the method it asks for (any the relay forwards).
    public var allowMethods: [String]?
    /// The request headers a preflight allows, lowercased; nil: those it asks for.
    public var allowHeaders: [String]?
    /// Response headers the page may read besides the CORS-safelisted ones.
    public var exposeHeaders: [String]
    /// How long a browser may keep a preflight's answer (`Access-Control-Max-Age`).
    public var maxAgeSeconds: Int

    public static let defaultMaxAgeSeconds = 600

    public init(allowOrigins: [String], allowMethods: [String]? = nil, allowHeaders: [String]? = nil,
                exposeHeaders: [String] = [], maxAgeSeconds: Int = Self.defaultMaxAgeSeconds) {
        self.allowOrigins = allowOrigins
        self.allowMethods = allowMethods
        self.allowHeaders = allowHeaders
        self.exposeHeaders = exposeHeaders
        self.maxAgeSeconds = maxAgeSeconds
    }

    static let knownKeys = ["allowOrigins", "allowMethods", "allowHeaders", "exposeHeaders", "maxAgeSeconds"]

    /// An origin as a browser serializes it (RFC 6454 §6.1): `scheme://host[:port]`, nothing
    /// after; lowercased, without the scheme's default port.
    static func parseOrigin(_ text: String) throws(InvalidValue) -> String {
        let example = "an origin is a scheme, a host and an optional port, like \"http://localhost:3000\""
        if text == "*" {
            throw InvalidValue("no wildcard: every origin listed gets requests through with the route's credential, so name each one; \(example)")
        }
        if text == "null" {
            throw InvalidValue("\"null\" is the origin of sandboxed frames and local files, which any page can make; it cannot be allowed")
        }
        let url: HTTPURL
        do throws(InvalidValue) {
            url = try HTTPURL.parse(text, allowsQuery: false)
        } catch {
            throw InvalidValue("\(error.message); \(example)")
        }
        let scheme = url.scheme.rawValue + "://"
        let rest = text.lowercased().dropFirst(scheme.count)
        guard url.path == "/" && !rest.contains("/") else {
            throw InvalidValue("an origin has no path, not even \"/\"; \(example)")
        }
        return scheme + url.authority
    }
}
