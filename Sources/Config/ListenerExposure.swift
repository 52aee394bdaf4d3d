import Endpoints
import OAuth2
import Routing

extension RelayConfig {
    /// Whether a listener on `address`, with its own `listenerHosts`, serves any Host name: one
    /// on a non-loopback address (a sidecar's `0.0.0.0`) when neither `hosts` nor its own are
    /// set. Every other listener serves loopback names and the names the configuration gives
    /// (BrowserSafety's `ListenerHosts`).
    public func servesAnyHostName(on address: HostPort, listenerHosts: [HostPattern]?) -> Bool {
        !HostSyntax.isLoopback(address.host) && hosts == nil && listenerHosts == nil
    }

    /// What `check` and `run` warn of: a listener on a non-loopback address that serves routes
    /// with a credential to any Host name. A browser that reaches it (a developer's machine on a
    /// LAN, a port forwarded to a laptop) can be made to send it requests under a name an
    /// attacker controls (DNS rebinding); `hosts` closes that.
    public var hostCheckWarnings: [String] {
        var listeners: [(key: String, address: HostPort, hosts: [HostPattern]?)] = [("listen", listen, nil)]
        if let listenTls { listeners.append(("listenTls.address", listenTls.address, listenTls.hosts)) }
        // The routes are looked at only for a listener that serves any name (most listen on
        // loopback): copying every route to filter them was 1% of each start-up and reload.
        let exposed = listeners.filter { servesAnyHostName(on: $0.address, listenerHosts: $0.hosts) }
        guard !exposed.isEmpty else { return [] }
        var credentialRoutes: [String] = []
        for route in routes where route.carriesCredential { credentialRoutes.append(route.name) }
        guard !credentialRoutes.isEmpty else { return [] }
        return exposed.map { listener in
            let named = credentialRoutes.prefix(3).joined(separator: ", ") + (credentialRoutes.count > 3 ? ", …" : "")
            return "\(listener.key) \(listener.address) is not a loopback address and serves routes with credentials (\(named)) "
                + "under any Host name: set \"hosts\" to the names clients use, so that a web page cannot reach them by DNS rebinding"
        }
    }
}
