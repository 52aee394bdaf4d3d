import Config
import Endpoints
import HTTP1
import HTTPFields
import OAuth2
import Routing
import TLS
import Synchronization
import Tokens

/// Everything about a route that the hot path needs as bytes, computed once per config load:
/// the `Host` line for the upstream, the header lines the route sets, and the lower-cased names
/// those lines replace. A request then copies slices instead of formatting strings.
public final class RoutePlan: Sendable {
    public let route: Route
    /// Index in `ProxySettings.plans` (per-worker tables are indexed by it).
    let position: Int
    /// `Host: upstream-authority\r\n`.
    let hostLine: [UInt8]
    /// `Name: value\r\n` for each `setHeaders` entry.
    let setHeaderLines: [UInt8]
    /// Lower-cased names of the headers this route writes itself; a client's fields with these
    /// names, or spelling them with `_` for `-`, are dropped (`replaces`).
    let replacedNames: [[UInt8]]
    /// Generated fields the route's `setHeaders` replace (the route's value wins).
    let setsHost: Bool
    let setsForwardedFor: Bool
    let setsForwardedProto: Bool
    let setsForwardedHost: Bool
    let setsVia: Bool
    /// Forward the request-target as received (no prefix to strip, no base path to add).
    let forwardsTargetVerbatim: Bool
    /// The upstream's base path, and the prefix a `stripPrefix` route removes (empty when it
    /// keeps it), as bytes: appending a String's UTF-8 view costs ten times a byte copy.
    let basePath: [UInt8]
    let strippedPrefix: [UInt8]
    let upstreamKey: UpstreamKey
    /// For an https upstream: how to connect.
    let tls: TLSConfiguration?
    /// The token state of the route's identity; nil forwards without a token.
    let identity: IdentityTokens?
    /// `Name: prefix ` for header injection (the token and CRLF follow), or nil.
    let tokenHeaderPrefix: [UInt8]?
    /// `name=` for query injection (the form-encoded token follows), or nil.
    let tokenQueryPrefix: [UInt8]?
    /// The parameter name of query injection: the client's own parameters of that name are removed.
    let tokenQueryName: [UInt8]?
    /// `route.upgrade` as bytes: the protocols a client may switch to.
    let upgradeProtocols: [[UInt8]]
    /// The identity binds its tokens with DPoP: its `DPoP` tokens go as `Authorization: DPoP`
    /// with a proof per request, and request bodies are kept for a replay after a nonce challenge.
    let usesDPoP: Bool
    /// `Authorization: DPoP ` (the token and CRLF follow) for a `DPoP` token, nil without DPoP.
    let dpopTokenHeaderPrefix: [UInt8]?
    /// `scheme://authority` of the target URI the upstream sees (its `Host`), the start of a
    /// proof's `htu`; the request-target's path follows it.
    let dpopTargetOrigin: [UInt8]
    /// The latest `DPoP-Nonce` of that origin for the route's identity, shared by the workers
    /// (nil without DPoP).
    let upstreamNonce: SharedDPoPNonce?
    /// The route adds a credential (`Route.carriesCredential`) or has a `browser` block:
    /// browsers' cross-site requests are refused (`BrowserPolicy`).
    let guardsCredential: Bool
    /// The route's `browser` block, compiled.
    let cors: CORSRules?
    /// The browser's own `/favicon.ico` is not forwarded: the route's identity is a person's
    /// and its prefix does not name the icon.
    let withholdsFavicon: Bool
    /// The check of the caller's bearer token (`inbound`); nil: the route takes any caller.
    let inbound: InboundGate?
    /// The route's identity logs a person in and all its routes go to this upstream's origin
    /// (`StepUpRoutes`): an upstream's 401 or 403 asking for a step-up (`StepUpChallenge`) starts
    /// a login for it rather than counting as a refused token.
    let stepsUp: Bool

    /// `interactiveIdentity`: the route's identity logs a person in (its favicon withheld, its
    /// step-ups honoured unless `stepsUpFromUpstream` is false: its routes go to several
    /// upstreams, `StepUpRoutes`). `inboundKeys`: the keys of
    /// the route's `inbound` issuer (nil: none, or no token thread to read them);
    /// `introspection`: where its opaque tokens are asked about (nil: they are refused).
    public init(route: Route, position: Int = 0, identity: IdentityTokens? = nil, tls: TLSConfiguration? = nil,
                interactiveIdentity: Bool = false, stepsUpFromUpstream: Bool = true, inboundKeys: InboundKeys? = nil, introspection: IntrospectionSource? = nil) {
        self.route = route
        self.position = position
        self.tls = tls
        self.identity = route.identity == nil ? nil : identity
        // Lower-cased once, for `replacedNames`, the `Host` a route sets and the `sets…` flags.
        let setNames = route.setHeaders.map { $0.name.lowercased() }
        var replaced = setNames.map { Array($0.utf8) }
        inbound = route.inbound.map { InboundGate(rules: $0, keys: inboundKeys, introspection: introspection) }
        if let rules = route.inbound {
            // A client's own copy of a claim header never reaches the upstream, claim or not.
            replaced += rules.claimHeaders.map { Array($0.header.lowercased().utf8) }
            if rules.stripAuthorization { replaced.append(Array("authorization".utf8)) }
            // The caller's DPoP proof is for the relay (its htu names the relay); the route's own
            // identity may add its own.
            replaced.append(Array("dpop".utf8))
        }
        switch route.inject {
        case .header(let name, let prefix) where self.identity != nil:
            tokenHeaderPrefix = Array((prefix.isEmpty ? "\(name): " : "\(name): \(prefix) ").utf8)
            tokenQueryPrefix = nil
            tokenQueryName = nil
            // The client's own value of the token header never reaches the upstream.
            replaced.append(Array(name.lowercased().utf8))
        case .query(let name) where self.identity != nil:
            tokenHeaderPrefix = nil
            tokenQueryPrefix = Array("\(name)=".utf8)
            tokenQueryName = Array(name.utf8)
        default:
            tokenHeaderPrefix = nil
            tokenQueryPrefix = nil
            tokenQueryName = nil
        }
        usesDPoP = self.identity?.bindsDPoP ?? false
        if usesDPoP, case .header(let name, _) = route.inject, name.lowercased() == "authorization" {
            dpopTokenHeaderPrefix = Array("Authorization: DPoP ".utf8)
            // The client's own proof never reaches the upstream beside the relay's.
            if route.inbound == nil { replaced.append(Array("dpop".utf8)) }
        } else {
            dpopTokenHeaderPrefix = nil
        }
        let upstreamAuthority = route.upstream.authority
        let authority = setNames.firstIndex(of: "host").map { route.setHeaders[$0].value } ?? upstreamAuthority
        // Appended rather than interpolated: a reload builds one plan per route.
        var origin = Array(route.upstream.scheme.rawValue.utf8)
        origin.append(contentsOf: "://".utf8)
        origin.append(contentsOf: authority.utf8)
        dpopTargetOrigin = origin
        upstreamNonce = usesDPoP ? self.identity?.upstreamNonces?.nonce(for: dpopTargetOrigin) : nil
        replacedNames = replaced
        upgradeProtocols = route.upgrade.map { Array($0.utf8) }
        var host = Array("Host: ".utf8)
        host.append(contentsOf: upstreamAuthority.utf8)
        host.append(contentsOf: "\r\n".utf8)
        hostLine = host
        setHeaderLines = route.setHeaders.flatMap { Array("\($0.name): \($0.value)\r\n".utf8) }
        // A route sets a handful of headers at most (most none): a linear search of its names
        // costs less than hashing them into a set for each of 10,000 routes.
        setsHost = setNames.contains("host")
        setsForwardedFor = setNames.contains("x-forwarded-for")
        setsForwardedProto = setNames.contains("x-forwarded-proto")
        setsForwardedHost = setNames.contains("x-forwarded-host")
        setsVia = setNames.contains("via")
        guardsCredential = route.carriesCredential || route.browser != nil
        cors = route.browser.map(CORSRules.init)
        withholdsFavicon = interactiveIdentity && !route.match.pathPrefix.hasPrefix(Self.favicon)
        stepsUp = interactiveIdentity && stepsUpFromUpstream && route.identity != nil
        forwardsTargetVerbatim = !route.stripPrefix && route.upstream.basePath.isEmpty && tokenQueryPrefix == nil
        basePath = Array(route.upstream.basePath.utf8)
        strippedPrefix = route.stripPrefix ? Array(route.match.pathPrefix.utf8) : []
        // Routes to one https upstream with different TLS settings must not share connections.
        upstreamKey = UpstreamKey(host: route.upstream.host, port: route.upstream.port, tlsRoute: tls == nil ? nil : position)
    }

    static let favicon = "/favicon.ico"
    static let faviconBytes = Array(favicon.utf8)

    /// Scratch space for `writeUpstreamTarget`, owned by a connection and reused.
    struct TargetScratch {
        var normalizedRest: [UInt8] = []
        var rawCandidate: [UInt8] = []
        var check: [UInt8] = []
    }

    /// The request-target for a route that rewrites it (`stripPrefix` or an upstream base
    /// path): base path, then the path after the matched prefix, then `?query`.
    /// The client's own bytes are kept when they mean the same as the normalized path (so
    /// `%7E` stays `%7E`); otherwise — dot segments, encoded dots — the normalized form is sent,
    /// so nothing can climb out of the base path or past the stripped prefix.
    func writeUpstreamTarget(rawPath: UnsafeRawBufferPointer, normalizedPath: UnsafeRawBufferPointer,
                             queryWithMark: UnsafeRawBufferPointer, token: UnsafeRawBufferPointer? = nil,
                             into out: inout [UInt8], scratch: inout TargetScratch) {
        let prefixLength = strippedPrefix.count
        scratch.normalizedRest.removeAll(keepingCapacity: true)
        RequestPath.appendStripped(normalizedPath, prefixLength: prefixLength, to: &scratch.normalizedRest)
        out.removeAll(keepingCapacity: true)
        out.append(contentsOf: basePath)
        out.append(contentsOf: scratch.normalizedRest)
        // The raw candidate is judged whole, base path included: a `..` that stays at the root
        // of the rest alone would climb out of the base path once the upstream resolves it.
        if rawPath.starts(with: strippedPrefix) {
            scratch.rawCandidate.removeAll(keepingCapacity: true)
            scratch.rawCandidate.append(contentsOf: basePath)
            RequestPath.appendStripped(rawPath, prefixLength: prefixLength, to: &scratch.rawCandidate)
            let equivalent = scratch.rawCandidate.withUnsafeBytes { RequestPath.normalize($0, into: &scratch.check) }
                && scratch.check == out
            if equivalent { swap(&out, &scratch.rawCandidate) }
        }
        guard let token, let prefix = tokenQueryPrefix, let name = tokenQueryName else {
            out.append(contentsOf: queryWithMark)
            return
        }
        // RFC 6750 §2.3: `access_token=…` added to the query, form-encoded. A client's own
        // parameter of that name goes: an upstream that reads the first one would otherwise
        // take the client's token for the relay's.
        out.append(UInt8(ascii: "?"))
        let query = queryWithMark.isEmpty ? queryWithMark : UnsafeRawBufferPointer(rebasing: queryWithMark.dropFirst())
        if QueryParameters.append(query, removing: name, to: &out) { out.append(UInt8(ascii: "&")) }
        out.append(contentsOf: prefix)
        FormURLEncoding.append(encoding: token, to: &out)
    }

    /// The `Upgrade` value to forward for an upgrade request: the protocols it lists that this
    /// route allows, in the client's order (`websocket`, `foo/2`: a version does not matter), or
    /// nil when it lists none, and the request is forwarded as a plain one.
    func allowedUpgrade(_ head: HTTPHead) -> [UInt8]? {
        var allowed: [UInt8] = []
        for field in head.fields where field.known == .upgrade {
            ASCII.forEachListElement(head.value(field)) { element in
                let name = UnsafeRawBufferPointer(rebasing: element.prefix { $0 != UInt8(ascii: "/") })
                guard upgradeProtocols.contains(where: { ASCII.equalsIgnoringCase(name, $0) }) else { return }
                if !allowed.isEmpty { allowed.append(contentsOf: ", ".utf8) }
                allowed.append(contentsOf: element)
            }
        }
        return allowed.isEmpty ? nil : allowed
    }

    /// Whether a client's field `name` (head or trailer) is one the route writes itself, in any
    /// case or with `_` for `-`: a CGI-style upstream reads `X_Forwarded_User` as the
    /// `X-Forwarded-User` a claim header sets, so the client's copy could stand for the caller's.
    @inline(__always)
    func replaces(_ name: UnsafeRawBufferPointer) -> Bool {
        for replaced in replacedNames where ASCII.equalsIgnoringCaseReadingUnderscoreAsHyphen(name, replaced) { return true }
        return false
    }
}

/// Where a pooled upstream connection goes; one pool per key per worker.
struct UpstreamKey: Hashable, Sendable {
    let host: String
    let port: UInt16
    /// The route whose TLS settings the connections use; nil for plain http.
    let tlsRoute: Int?
}
