import OAuth2

extension RelayConfig {
    /// What `check` and `run` warn of: a listener on a non-loopback address that serves routes
    /// with a credential to any Host name. A browser that reaches it (a developer's machine on a
    /// LAN, a port forwarded to a laptop) can be made to send it requests under a name an
    /// attacker controls (DNS rebinding); `hosts` closes that.
    public var hostCheckWarnings: [String] {
        let credentialRoutes = routes.filter(\.carriesCredential).map(\.name)
        guard !credentialRoutes.isEmpty else { return [] }
        var listeners: [(key: String, address: HostPort, namesHosts: Bool)] = [("listen", listen, hosts != nil)]
        if let listenTls { listeners.append(("listenTls.address", listenTls.address, hosts != nil || listenTls.hosts != nil)) }
        return listeners.compactMap { listener in
            guard !TokenEndpointSecurity.isLoopback(listener.address.host), !listener.namesHosts else { return nil }
            let named = credentialRoutes.prefix(3).joined(separator: ", ") + (credentialRoutes.count > 3 ? ", …" : "")
            return "\(listener.key) \(listener.address) is not a loopback address and serves routes with credentials (\(named)) "
                + "under any Host name: set \"hosts\" to the names clients use, so that a web page cannot reach them by DNS rebinding"
        }
    }
}
