import Endpoints
import HTTPFields
import Routing

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

extension DecodingContext {
    func decodeBrowserAccess(_ field: Field) -> BrowserAccess? {
        guard let object = ObjectReader(field, knownKeys: BrowserAccess.knownKeys, in: self) else { return nil }
        // Every key is read before deciding, so that each mistake is reported at once.
        let origins = object.required("allowOrigins").flatMap { nonEmptyStrings($0, parse: BrowserAccess.parseOrigin) }
        let methods = object.field("allowMethods").map { field in
            nonEmptyStrings(field) { method throws(InvalidValue) in
                guard ASCII.isToken(method) else { throw InvalidValue("must be a method name such as \"PUT\", got \"\(method)\"") }
                let upper = method.uppercased()
                guard upper != "CONNECT" && upper != "TRACE" else { throw InvalidValue("the relay does not forward \(upper)") }
                return method
            }
        }
        let headers = object.field("allowHeaders").map { nonEmptyStrings($0, parse: Self.corsHeaderName) }
        let exposed = object.field("exposeHeaders").map { nonEmptyStrings($0, parse: Self.corsHeaderName) }
        let maxAge = object.field("maxAgeSeconds").map {
            integer($0, in: 0...86_400, rangeDescription: "a number of seconds from 0 to 86400 (browsers cap it lower)")
        }
        // A key given with a bad value (`.some(nil)`) fails the whole block; a key left out is nil.
        guard let origins, methods != .some(nil), headers != .some(nil), exposed != .some(nil), maxAge != .some(nil) else { return nil }
        return BrowserAccess(allowOrigins: unique(origins), allowMethods: methods?.map(unique),
                             allowHeaders: headers?.map { unique($0.map { $0.lowercased() }) },
                             exposeHeaders: exposed?.map(unique) ?? [],
                             maxAgeSeconds: maxAge.flatMap { $0 } ?? BrowserAccess.defaultMaxAgeSeconds)
    }

    private static func corsHeaderName(_ name: String) throws(InvalidValue) -> String {
        guard ASCII.isToken(name) else { throw InvalidValue("must be a header name, got \"\(name)\"") }
        guard name != "*" else {
            throw InvalidValue("no wildcard: list the header names (with credentials, browsers read \"*\" as a name)")
        }
        return name
    }

    /// A non-empty array of strings, each parsed; nil after reporting what is wrong.
    private func nonEmptyStrings(_ field: Field, parse: (String) throws(InvalidValue) -> String) -> [String]? {
        guard let elements = elements(field) else { return nil }
        guard !elements.isEmpty else {
            report("must list at least one value (leave the key out for the default)", at: field)
            return nil
        }
        let values = elements.compactMap { parsed($0, parse) }
        return values.count == elements.count ? values : nil
    }

    private func unique(_ values: [String]) -> [String] {
        var seen = Set<String>()
        return values.filter { seen.insert($0).inserted }
    }
}
