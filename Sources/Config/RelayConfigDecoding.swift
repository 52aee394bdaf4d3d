import HTTPFields
import JSON

/// Reads the top level of a config file into a `RelayConfig`, handing each section to its
/// decoder (`ListenerDecoding`, `ForwardDecoding`, `StoreDecoding`, `LimitsDecoding`,
/// `IdentityDecoding`, `RouteDecoding`) and then running the checks across sections
/// (`RouteIdentityChecks`, `InboundDPoPHostChecks`, `InteractiveIdentityChecks`, the forward
/// listener's address against the others), in the order their problems have always been reported.
/// The identities of `"identity": "auto"` routes (`AutoIdentities`) join `identities` before
/// those checks, which treat them as any person's identity.
struct RelayConfigDecoding {
    let context: DecodingContext

    static let topLevelKeys = [
        "$schema", "listen", "admin", "workers", "limits", "identities", "routes", "accessLog", "metrics",
        "trustForwardedHeaders", "via", "listenTls", "store", "hosts", "forward", "auto",
    ]

    func decodeRelayConfig(_ root: JSONNode) -> RelayConfig? {
        guard let object = ObjectReader(root, at: .root, knownKeys: Self.topLevelKeys, in: context) else { return nil }
        var config = RelayConfig()
        // Where editors find the schema (`"$schema": "oauth-relay.schema.json"`); the relay has no
        // use for it. Any string, taken as written: not even `${…}` is resolved in it.
        object.field("$schema").map(checkIgnoredString)
        config.listen = object.parsed("listen", HostPort.parse) ?? config.listen
        let listeners = ListenerDecoding(context: context)
        config.listenTls = object.field("listenTls").flatMap(listeners.decodeTLSListener)
        let forwardDecoding = ForwardDecoding(context: context)
        config.forward = object.field("forward").flatMap(forwardDecoding.decodeForward)
        config.hosts = object.field("hosts").flatMap(listeners.decodeHostNames)
        if let field = object.field("store"), case .null = field.value.kind {
            config.defaultStoreAllowed = false
        } else {
            config.store = object.field("store").flatMap(StoreDecoding(context: context).decodeStore)
        }
        if let field = object.field("admin") {
            if case .null = field.value.kind {
                config.admin = nil
            } else {
                config.admin = context.parsed(field, HostPort.parse) ?? config.admin
            }
        }
        config.workers = object.field("workers").flatMap {
            context.integer($0, in: 0...4096, rangeDescription: "0 (one per core) or a worker count up to 4096")
        } ?? config.workers
        config.limits = object.field("limits").flatMap(LimitsDecoding(context: context).decodeLimits) ?? config.limits
        if let storeField = object.field("store") {
            StoreTimeoutCheck(context: context).check(config, storeField: storeField, limitsField: object.field("limits"))
        }
        var identityNames: [String] = []
        if let field = object.field("identities") {
            config.identities = IdentityDecoding(context: context).decodeIdentities(field)
            if case .object(let members) = field.value.kind {
                identityNames = members.map(\.key)
            }
        }
        let autoField = object.field("auto")
        config.auto = autoField.flatMap(AutoDecoding(context: context).decodeAuto)
        let autoIdentities = AutoIdentities(context: context)
        object.field("identities").map(autoIdentities.checkReservedName)
        var autoOrigins: [String: IdentityOrigin] = [:]
        if let field = object.field("routes") {
            let (routes, autoRoutes) = RouteDecoding(context: context).decodeRoutes(field, identityNames: identityNames)
            config.routes = routes
            autoOrigins = autoIdentities.addIdentities(to: &config, autoRoutes: autoRoutes, configuredNames: identityNames,
                                                       autoField: autoField)
            RouteIdentityChecks(context: context).checkRouteIdentities(field, routes: config.routes, identities: config.identities)
            InboundDPoPHostChecks(context: context).checkDPoPHosts(config, routesField: field)
        }
        if object.field("identities") != nil || !autoOrigins.isEmpty {
            let identities = object.field("identities")
            InteractiveIdentityChecks(context: context)
                .checkInteractiveIdentities(&config, identitiesPath: identities?.path ?? JSONPath.root.key("identities"),
                                            offset: identities?.value.offset ?? 0, autoOrigins: autoOrigins)
            autoIdentities.checkIssuersOnExposedListeners(config, origins: autoOrigins)
        }
        config.accessLog = object.bool("accessLog") ?? config.accessLog
        config.metrics = object.bool("metrics") ?? config.metrics
        config.trustForwardedHeaders = object.bool("trustForwardedHeaders") ?? config.trustForwardedHeaders
        config.via = object.parsed("via") { via throws(InvalidValue) in
            guard ASCII.isToken(via) else {
                throw InvalidValue("must be a single token without spaces (letters, digits, -, ., _ …), got \"\(via)\"")
            }
            return via
        } ?? config.via
        if let forward = config.forward, let field = object.field("forward") {
            forwardDecoding.checkAddress(of: forward, in: config, forwardField: field)
        }
        return config
    }

    /// A string the relay does not read, such as `$schema`: only its type is checked.
    private func checkIgnoredString(_ field: Field) {
        guard case .string = field.value.kind else { return context.typeMismatch(field, expected: "a string") }
    }
}
