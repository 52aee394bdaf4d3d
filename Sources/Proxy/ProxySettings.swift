import BrowserSafety
import Config
import HTTP1
import LoginPages
import OAuth2
import Routing
import TLS
import Tokens

/// The immutable part of a worker's world, shared by every worker thread: built from a
/// validated `RelayConfig` at start and at each reload. Requests that began under one keep it
/// to their end.
public final class ProxySettings: Sendable {
    public let config: RelayConfig
    /// The token thread (the same across reloads).
    let tokens: TokenService?
    /// The identities the plans refer to.
    let identities: TokenSet?
    /// The TLS listener's server configuration (`listenTls`).
    let listenerTLS: TLSConfiguration?
    let routes: RouteTable
    let plans: [RoutePlan]
    let headerLimits: HeaderLimits
    /// For upstream responses: `maxResponseHeaderBytes` and the same field count.
    let responseHeaderLimits: HeaderLimits
    /// ` 1.1 pseudonym` minus the version, e.g. ` oauth-relay\r\n`, appended after `Via: 1.x`.
    let viaSuffix: [UInt8]
    let headerTimeoutMilliseconds: UInt64
    let idleTimeoutMilliseconds: UInt64
    let connectTimeoutMilliseconds: UInt64
    let responseTimeoutMilliseconds: UInt64
    /// `upstreamResponseTotalSeconds`; nil when off.
    let responseTotalMilliseconds: UInt64?
    let shutdownGraceMilliseconds: UInt64
    let dnsCacheMilliseconds: UInt64
    let tokenWaitMilliseconds: UInt64
    /// `limits.tokenWaitSeconds` as configured, for the 503 that names it.
    let tokenWaitSeconds: Double
    /// `accessLog`: every exchange is logged (and so timed).
    let accessLog: Bool
    /// `trustForwardedHeaders`: a client's `X-Forwarded-*` fields are extended, not replaced.
    let trustForwardedHeaders: Bool
    /// `limits.maxIdleUpstreamConnections`: idle connections a pool keeps per upstream.
    let maxIdleUpstreamConnections: Int
    /// `limits.maxConnections`, or the default from the descriptor limit.
    let maxConnections: Int
    let requestBodyTimeoutMilliseconds: UInt64
    let requestBodyMinBytesPerSecond: UInt64
    /// `limits.maxUpstreamConnections`, or `Int.max` for no limit.
    let maxUpstreamConnections: Int
    let upstreamQueueTimeoutMilliseconds: UInt64
    /// The login pages, when an identity logs a person in.
    let logins: LoginEndpoints?
    /// `logins` is there: a request's placement tests this, not the optional itself (binding
    /// `logins` copies its 900 bytes, about a hundred instructions per request).
    let servesLogins: Bool
    /// The Host names the plain, the TLS and the admin listener serve (the admin listener's
    /// for `AdminServer`, which reads them from the settings in force).
    let plainHosts: ListenerHosts
    let tlsHosts: ListenerHosts
    public let adminHosts: ListenerHosts
    /// The forward-proxy listener's (`forward`); nil without one.
    let forward: ForwardSettings?
    /// What the forward listener intercepts with, for a reload to keep.
    public var interceptionLeaves: (any InterceptionLeaves)? { forward?.leaves }

    /// `identities`: the token service's identities for this config (what `replace` returned);
    /// by default those in force. `interceptionLeaves`: the certificates the forward listener
    /// intercepts with (the forward proxy's CA; unused without `config.forward`).
    public init(config: RelayConfig, tokens: TokenService? = nil, identities: TokenSet? = nil, tls: ClientTLS = ClientTLS(),
                interceptionLeaves: (any InterceptionLeaves)? = nil) {
        self.config = config
        self.tokens = tokens
        listenerTLS = tls.listener
        routes = RouteTable(config.routes.map(\.match))
        let identities = identities ?? tokens?.tokenSet
        self.identities = identities
        let sharedIdentities = Set(StepUpRoutes.sharedAcrossOrigins(config.routes))
        plans = config.routes.enumerated().map { position, route in
            RoutePlan(route: route, position: position, identity: route.identity.flatMap { identities?[$0] },
                      tls: tls.routes[position],
                      interactiveIdentity: route.identity.flatMap { config.identities[$0]?.grant.isInteractive } ?? false,
                      stepsUpFromUpstream: !(route.identity.map(sharedIdentities.contains) ?? false),
                      inboundKeys: route.inbound.flatMap { rules in
                          tokens?.inboundKeys(issuer: rules.issuer, jwksUrl: rules.jwksUrl, tlsSettings: rules.tls, tls: tls.inbound[position])
                      },
                      introspection: route.inbound.flatMap { rules in
                          Self.introspectionSource(rules, tokens: tokens, identities: identities, tls: tls.inbound[position])
                      })
        }
        RoutePlan.keepUpstreamNonces(of: plans, identities: identities?.identities ?? [])
        headerLimits = HeaderLimits(maxHeadBytes: config.limits.maxHeaderBytes, maxFieldCount: config.limits.maxHeaderCount)
        responseHeaderLimits = HeaderLimits(maxHeadBytes: config.limits.maxResponseHeaderBytes,
                                            maxFieldCount: config.limits.maxHeaderCount)
        viaSuffix = Array(" \(config.via)\r\n".utf8)
        func milliseconds(_ seconds: Double) -> UInt64 { UInt64(max(1, (seconds * 1000).rounded())) }
        headerTimeoutMilliseconds = milliseconds(config.limits.headerTimeoutSeconds)
        idleTimeoutMilliseconds = milliseconds(config.limits.idleTimeoutSeconds)
        connectTimeoutMilliseconds = milliseconds(config.limits.upstreamConnectTimeoutSeconds)
        responseTimeoutMilliseconds = milliseconds(config.limits.upstreamResponseTimeoutSeconds)
        responseTotalMilliseconds = config.limits.upstreamResponseTotalSeconds.map(milliseconds)
        shutdownGraceMilliseconds = milliseconds(config.limits.shutdownGraceSeconds)
        dnsCacheMilliseconds = milliseconds(config.limits.dnsCacheSeconds)
        tokenWaitMilliseconds = milliseconds(config.limits.tokenWaitSeconds)
        tokenWaitSeconds = config.limits.tokenWaitSeconds
        accessLog = config.accessLog
        trustForwardedHeaders = config.trustForwardedHeaders
        maxIdleUpstreamConnections = config.limits.maxIdleUpstreamConnections
        maxConnections = config.limits.maxConnections > 0 ? config.limits.maxConnections : ConnectionBudget.defaultLimit()
        requestBodyTimeoutMilliseconds = milliseconds(config.limits.requestBodyTimeoutSeconds)
        requestBodyMinBytesPerSecond = UInt64(config.limits.requestBodyMinBytesPerSecond)
        maxUpstreamConnections = config.limits.maxUpstreamConnections > 0 ? config.limits.maxUpstreamConnections : .max
        upstreamQueueTimeoutMilliseconds = milliseconds(config.limits.upstreamQueueTimeoutSeconds)
        logins = LoginEndpoints(config: config, identities: identities, desk: tokens?.logins)
        servesLogins = logins != nil
        // The plain and the admin listener serve the same names: gathered and indexed once.
        let plainAndAdmin = ListenerHosts.forListeners(on: [config.listen] + (config.admin.map { [$0] } ?? []), config: config)
        plainHosts = plainAndAdmin[0]
        tlsHosts = config.listenTls.map { ListenerHosts(address: $0.address, listenerHosts: $0.hosts, config: config) }
            ?? ListenerHosts(servesAnyName: true)
        adminHosts = config.admin == nil ? ListenerHosts(servesAnyName: true) : plainAndAdmin[1]
        forward = config.forward.map { ForwardSettings(listener: $0, routes: config.routes, interceptedHosts: config.interceptedHosts,
                                                       leaves: interceptionLeaves) }
    }

    /// Where a route with `inbound.introspection` asks about opaque tokens: as its identity's
    /// client, with the route's issuer, audiences, scopes and clock skew.
    private static func introspectionSource(_ rules: InboundRules, tokens: TokenService?, identities: TokenSet?,
                                            tls: TLSConfiguration?) -> IntrospectionSource? {
        guard let introspection = rules.introspection, let tokens, let client = identities?[introspection.identity] else { return nil }
        let judged = IntrospectionRules(issuer: rules.issuer, audiences: rules.audiences, requiredScopes: rules.requiredScopes,
                                        clockSkewSeconds: Int64(rules.clockSkewSeconds))
        return tokens.introspectionSource(issuer: rules.issuer, endpoint: introspection.url, tokens: client, rules: judged,
                                          maximumReuseSeconds: Int64(introspection.cacheSeconds), discoveryTLS: tls)
    }

    /// The plan of the route that takes this request, or nil (404).
    func plan(host: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer) -> RoutePlan? {
        routes.matchIndex(host: host, path: path).map { plans[$0] }
    }

    /// The forward proxy's `plan`: only a route whose `match.host` covers `host` takes the
    /// request (a host-less route is the reverse listener's, its token never for a site the
    /// client named).
    func planNamingHost(host: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer) -> RoutePlan? {
        routes.matchIndexNamingHost(host: host, path: path).map { plans[$0] }
    }
}
