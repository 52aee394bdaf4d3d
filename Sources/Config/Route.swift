import Endpoints
import HTTPFields
import Routing

/// One entry of `routes`: which requests it takes and where and how it forwards them.
public struct Route: Sendable, Equatable {
    /// Position in the file's `routes` array (ties between equally specific routes go to the
    /// lower index).
    public var index: Int
    /// The `name` key, or `routes[N]`; used in logs, metrics and problem responses.
    public var name: String
    public var match: RouteMatch
    public var upstream: UpstreamURL
    /// Key of `RelayConfig.identities`; nil forwards requests without a token.
    public var identity: String?
    /// Remove the matched `pathPrefix` before forwarding (the rest always starts with `/`).
    public var stripPrefix: Bool
    public var inject: Injection
    /// Headers set on the forwarded request, replacing any the client sent; sorted by
    /// lowercased name.
    public var setHeaders: [HTTPField]
    /// TLS options for an `https` upstream.
    public var tls: TLSSettings?
    /// Upstream statuses that mean "the token was refused": the relay fetches a new token
    /// and may retry the request once.
    public var retryOnStatus: [Int]
    /// A token fetched because an upstream refused the previous one is not dropped again by
    /// this route's refusals before it is this old: an upstream that answers 401 for reasons
    /// other than the token then costs at most one token request per interval, not one per 401.
    public var minTokenAgeForRetrySeconds: Double
    /// Protocols a client may switch to through this route (`Upgrade`), lowercased; others are
    /// removed from the forwarded request, which then stays plain HTTP/1.1. `h2c` is not among
    /// the defaults: after it the upstream would serve HTTP/2 requests this route never sees.
    public var upgrade: [String]
    /// Present the identity's client certificate (`identities.NAME.tls.clientCert`) to the
    /// upstream, so that tokens bound to it (RFC 8705 `cnf.x5t#S256`) hold there.
    public var certificateBoundUpstream = false
    /// The web pages of other origins that may call this route through a browser (CORS); nil:
    /// none, so a route with a credential refuses cross-site browser requests.
    public var browser: BrowserAccess?
    /// The caller's bearer token the route requires, and what of it goes on (nil: none required).
    public var inbound: InboundRules?

    public init(index: Int = 0, name: String? = nil, match: RouteMatch = RouteMatch(), upstream: UpstreamURL,
                identity: String? = nil, stripPrefix: Bool = false, inject: Injection = .header(),
                setHeaders: [HTTPField] = [], tls: TLSSettings? = nil, retryOnStatus: [Int] = [401],
                minTokenAgeForRetrySeconds: Double = 10, upgrade: [String] = ["websocket"]) {
        self.index = index
        self.name = name ?? "routes[\(index)]"
        self.match = match
        self.upstream = upstream
        self.identity = identity
        self.stripPrefix = stripPrefix
        self.inject = inject
        self.setHeaders = setHeaders
        self.tls = tls
        self.retryOnStatus = retryOnStatus
        self.minTokenAgeForRetrySeconds = minTokenAgeForRetrySeconds
        self.upgrade = upgrade
    }
}

extension Route {
    /// The route adds a credential to what it forwards: its identity's token, or an
    /// `Authorization`, `Proxy-Authorization` or `Cookie` it sets itself. A browser's
    /// cross-site requests on it are refused (`BrowserPolicy`, in BrowserSafety), and `check`
    /// warns of it on a listener that serves any Host name.
    public var carriesCredential: Bool {
        identity != nil || setHeaders.contains { ["authorization", "proxy-authorization", "cookie"].contains($0.name.lowercased()) }
    }
}

/// Where the access token goes on the forwarded request. A client's own value is replaced.
public enum Injection: Sendable, Equatable, Hashable {
    /// `name: prefix token` (just the token when `prefix` is empty).
    case header(name: String = "Authorization", prefix: String = "Bearer")
    /// `?name=token` added to the query.
    case query(name: String)
}
