import Endpoints
import HTTPFields
import Routing

/// Reads `routes`: each route's match, upstream, identity, injection, headers and the rest,
/// and the checks between routes (a name or a match used twice).
struct RouteDecoding {
    let context: DecodingContext

    static let routeKeys = ["name", "match", "upstream", "identity", "stripPrefix", "inject", "setHeaders", "tls", "retryOnStatus",
                            "minTokenAgeForRetrySeconds", "upgrade", "certificateBoundUpstream", "browser", "inbound"]

    /// The `routes` array, and those of its routes with `"identity": "auto"`, whose identity is
    /// named for their upstream (`AutoIdentityName`) and made by `AutoIdentities`.
    /// `identityNames` are the keys of `identities` (valid or not), so a route naming a broken
    /// identity gets no second error.
    func decodeRoutes(_ field: Field, identityNames: [String]) -> (routes: [Route], autoRoutes: [AutoRoute]) {
        guard let elements = context.elements(field) else { return ([], []) }
        var routes: [Route] = []
        var autoRoutes: [AutoRoute] = []
        // The index of the first route with each name and match (not the routes: copying a
        // Route into these grown tables was 8% of decoding 10,000 routes).
        var firstByName: [String: Int] = [:]
        var firstByMatch: [RouteMatch: Int] = [:]
        firstByName.reserveCapacity(elements.count)
        firstByMatch.reserveCapacity(elements.count)
        let defined = Set(identityNames)
        var upstreams = UpstreamURLMemo()
        for (index, element) in elements.enumerated() {
            guard let route = decodeRoute(element, index: index, identityNames: identityNames, defined: defined,
                                          upstreams: &upstreams, autoRoutes: &autoRoutes) else { continue }
            // Each name and match hashed once: put in, and the first one put back when there was one.
            if let other = firstByName.updateValue(route.index, forKey: route.name) {
                firstByName[route.name] = other
                context.report("route name \"\(route.name)\" is already used by routes[\(other)]",
                               at: element.path.key("name"), offset: memberOffset("name", in: element))
            }
            if let other = firstByMatch.updateValue(route.index, forKey: route.match) {
                firstByMatch[route.match] = other
                context.report("routes[\(other)] has the same match, so this route would never be used",
                               at: element.path.key("match"), offset: memberOffset("match", in: element))
            }
            routes.append(route)
        }
        return (routes, autoRoutes)
    }

    /// Where `key`'s value starts in an object, or where the object starts without it.
    private func memberOffset(_ key: String, in field: Field) -> Int {
        guard case .object(let members) = field.value.kind, let member = members.first(where: { $0.key == key }) else {
            return field.value.offset
        }
        return member.value.offset
    }

    /// `defined`: `identityNames` as a set, asked once per route. `upstreams`: the upstream
    /// URLs parsed so far.
    private func decodeRoute(_ field: Field, index: Int, identityNames: [String], defined: Set<String>,
                             upstreams: inout UpstreamURLMemo, autoRoutes: inout [AutoRoute]) -> Route? {
        guard let object = ObjectReader(field, knownKeys: Self.routeKeys, in: context) else { return nil }
        let upstream = object.required("upstream").flatMap { field in
            context.parsed(field) { text throws(InvalidValue) in try upstreams.parse(text) }
        }
        var route = Route(index: index, name: object.nonEmptyString("name"),
                          upstream: upstream ?? UpstreamURL(scheme: .http, host: ""))
        route.match = object.field("match").flatMap(decodeRouteMatch) ?? route.match
        if let field = object.field("identity"), let name = context.string(field) {
            if name == AutoIdentityName.keyword {
                if let upstream {
                    route.identity = AutoIdentityName.name(for: upstream)
                    autoRoutes.append(AutoRoute(index: index, identityField: field))
                }
            } else if defined.contains(name) {
                route.identity = name
            } else {
                context.report("unknown identity \"\(name)\"" + didYouMean(name, among: identityNames + [AutoIdentityName.keyword])
                               + (identityNames.isEmpty ? "; no identities are defined" : ""), at: field)
            }
        }
        route.stripPrefix = object.bool("stripPrefix") ?? false
        route.inject = object.field("inject").flatMap(decodeInjection) ?? route.inject
        if let field = object.field("setHeaders") {
            route.setHeaders = HeaderFieldsDecoding(context: context).decodeHeaderFields(field, forbidden: HeaderRules.framingHeaders) ?? []
            if route.identity != nil, case .header(let tokenHeader, _) = route.inject,
               let clash = route.setHeaders.first(where: { $0.name.lowercased() == tokenHeader.lowercased() }) {
                context.report("\"\(clash.name)\" carries the injected token and cannot also be set", at: field.path.key(clash.name),
                               offset: field.value.offset)
            }
        }
        route.tls = object.field("tls").flatMap {
            TLSSettingsDecoding(context: context).decodeTLS($0, endpoint: upstream?.scheme, endpointName: "the upstream")
        }
        route.retryOnStatus = object.field("retryOnStatus").flatMap(decodeStatuses) ?? route.retryOnStatus
        route.minTokenAgeForRetrySeconds = object.seconds("minTokenAgeForRetrySeconds") ?? route.minTokenAgeForRetrySeconds
        route.upgrade = object.field("upgrade").flatMap(decodeUpgradeProtocols) ?? route.upgrade
        route.certificateBoundUpstream = object.bool("certificateBoundUpstream") ?? false
        route.browser = object.field("browser").flatMap(BrowserAccessDecoding(context: context).decodeBrowserAccess)
        if let field = object.field("inbound") {
            let inbound = InboundDecoding(context: context)
            route.inbound = inbound.decodeInbound(field, routeIdentity: route.identity, identityNames: identityNames)
            if let rules = route.inbound { inbound.checkClaimHeaders(of: rules, on: route, at: field) }
        }
        return upstream == nil ? nil : route
    }

    private func decodeRouteMatch(_ field: Field) -> RouteMatch? {
        guard let object = ObjectReader(field, knownKeys: ["host", "pathPrefix"], in: context) else { return nil }
        var match = RouteMatch()
        match.host = object.parsed("host") { text throws(InvalidValue) in
            do throws(HostPattern.SyntaxError) { return try HostPattern.parse(text) } catch { throw InvalidValue(error.message) }
        }
        match.pathPrefix = object.parsed("pathPrefix") { prefix throws(InvalidValue) in
            guard prefix.hasPrefix("/") else { throw InvalidValue("must start with \"/\", got \"\(prefix)\"") }
            guard let normalized = RequestPath.normalize(prefix) else {
                throw InvalidValue("\"\(prefix)\" is not a valid path (bad %-escape, space, control character, \"?\" or \"#\")")
            }
            return normalized
        } ?? match.pathPrefix
        return match
    }

    private func decodeInjection(_ field: Field) -> Injection? {
        guard let object = ObjectReader(field, knownKeys: ["header", "prefix", "query"], in: context) else { return nil }
        if object.field("query") != nil {
            guard object.field("header") == nil && object.field("prefix") == nil else {
                context.report("set either query or header (with prefix), not both", at: field)
                return nil
            }
            return object.parsed("query") { name throws(InvalidValue) in
                guard !name.isEmpty, name.utf8.allSatisfy(ASCII.isUnreserved) else {
                    throw InvalidValue("a query parameter name must be letters, digits, -, ., _ or ~, got \"\(name)\"")
                }
                return .query(name: name)
            }
        }
        let name = object.parsed("header") { name throws(InvalidValue) in
            try HeaderRules.validName(name, forbidden: HeaderRules.framingHeaders.union(["host"]))
        } ?? "Authorization"
        let prefix = object.field("prefix").flatMap(HeaderFieldsDecoding(context: context).headerValue) ?? "Bearer"
        return .header(name: name, prefix: prefix)
    }

    /// Protocol names as in `Upgrade` (RFC 9110 §7.8), without a version, lowercased.
    private func decodeUpgradeProtocols(_ field: Field) -> [String]? {
        guard let elements = context.elements(field) else { return nil }
        let names = elements.compactMap { element -> String? in
            guard let name = context.string(element) else { return nil }
            guard ASCII.isToken(name) else {
                context.report("must be a protocol name such as \"websocket\" (an HTTP token, no version), got \"\(name)\"", at: element)
                return nil
            }
            return name.lowercased()
        }
        return names.count == elements.count ? Array(Set(names)).sorted() : nil
    }

    private func decodeStatuses(_ field: Field) -> [Int]? {
        guard let elements = context.elements(field) else { return nil }
        let statuses = elements.compactMap { context.integer($0, in: 400...599, rangeDescription: "an HTTP error status (400-599)") }
        return statuses.count == elements.count ? Array(Set(statuses)).sorted() : nil
    }
}
