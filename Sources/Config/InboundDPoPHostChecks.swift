import Endpoints
import Routing

/// A route that takes DPoP-bound callers (`inbound.dpop` not `"refused"`) must not be served
/// under any Host name. A proof names the URI it is for (`htu`, RFC 9449 §4.3), and the relay
/// reads that URI from the Host the client sent: on a listener that serves any Host name, a
/// proof made for another resource server (its `htu` naming that server) would be taken here
/// once its sender sets that Host. Loopback listeners serve loopback names and the configured
/// ones only; any other needs `hosts` (top level or the listener's own), or the route a
/// `match.host`, so that the Host, and with it the `htu` accepted, is one the operator named.
struct InboundDPoPHostChecks {
    let context: DecodingContext

    func checkDPoPHosts(_ config: RelayConfig, routesField: Field) {
        guard case .array(let elements) = routesField.value.kind else { return }
        var listeners: [(key: String, address: HostPort, hosts: [HostPattern]?)] = [("listen", config.listen, nil)]
        if let listenTls = config.listenTls { listeners.append(("listenTls.address", listenTls.address, listenTls.hosts)) }
        guard let open = listeners.first(where: { config.servesAnyHostName(on: $0.address, listenerHosts: $0.hosts) }) else { return }
        for route in config.routes where route.index < elements.count && route.match.host == nil {
            guard let inbound = route.inbound, inbound.dpop.mode != .refused else { continue }
            let element = Field(value: elements[route.index], path: routesField.path.index(route.index))
            guard let field = ObjectReader(element, knownKeys: nil, in: context)?.field("inbound") else { continue }
            let at = ObjectReader(field, knownKeys: nil, in: context)?.field("dpop") ?? field
            context.report("route \(route.name) takes DPoP proofs (dpop \"\(inbound.dpop.mode.rawValue)\") and \(open.key) \(open.address) "
                           + "serves it under any Host name: a proof names the URI it is for by the Host the client sends, so a proof made "
                           + "for another server could be used here. Set \"hosts\" to the names clients use, or the route's match.host, "
                           + "or \"dpop\": \"refused\"", at: at)
        }
    }
}
