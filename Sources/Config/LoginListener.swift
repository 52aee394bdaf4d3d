import Endpoints
import OAuth2

/// A listener of the relay as a login URL names it.
struct LoginListener: CustomStringConvertible {
    let scheme: URLScheme
    let host: String
    let port: UInt16

    /// True when `url` is on this listener: same scheme and port, and a host that reaches it
    /// (its address; any name for a wildcard address; any loopback name for a loopback one).
    func serves(_ url: HTTPURL) -> Bool {
        guard url.scheme == scheme, url.port == port else { return false }
        let wanted = url.host.lowercased()
        if wanted == host.lowercased() || host == "0.0.0.0" || host == "::" { return true }
        return HostSyntax.isLoopback(host) && HostSyntax.isLoopback(wanted)
    }

    /// The host a URL uses for a listener's address: `localhost` for a wildcard address.
    static func urlHost(_ address: String) -> String {
        address == "0.0.0.0" || address == "::" ? "localhost" : address
    }

    var description: String {
        "\(scheme.rawValue)://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }
}

extension RelayConfig {
    /// The listeners that serve routes (and so login pages): the plain one and the TLS one.
    var loginListeners: [LoginListener] {
        var listeners = [LoginListener(scheme: .http, host: listen.host, port: listen.port)]
        if let tls = listenTls { listeners.append(LoginListener(scheme: .https, host: tls.address.host, port: tls.address.port)) }
        return listeners
    }
}
