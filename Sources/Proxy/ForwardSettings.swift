import Config
import Endpoints
import Routing

/// The forward-proxy listener's settings (`forward`), compiled with the rest of `ProxySettings`:
/// which `CONNECT`s are intercepted, tunnelled or refused, and who may use the listener.
struct ForwardSettings: Sendable {
    /// `forward.listen`.
    let address: HostPort
    /// `forward.tunnelOthers`.
    let tunnelOthers: Bool
    /// `forward.connectPorts`.
    let connectPorts: [UInt16]
    /// `forward.proxyAuthFile`'s pairs (read with the config); nil: the listener asks for none.
    let credentials: ProxyCredentials?
    /// The routes' host names (`RelayConfig.interceptedHosts`), looked up with raw bytes.
    let interceptedHosts: HostNameSet
    /// The leaves intercepted hosts are served with; nil: none can be (every interception is
    /// answered 502).
    let leaves: (any InterceptionLeaves)?
    /// Per port of a route's upstream, the `match.host`s of the routes going there: an
    /// intercepted `CONNECT` may name its route's upstream port.
    private let upstreamPortHosts: [UInt16: HostNameSet]

    /// `upstreams`: each route's `match.host` (a name) and its upstream's port.
    init(listener: ForwardListener, interceptedHosts: [HostPattern], upstreams: [(host: HostPattern, port: UInt16)] = [],
         leaves: (any InterceptionLeaves)?) {
        address = listener.address
        tunnelOthers = listener.tunnelOthers
        connectPorts = listener.connectPorts
        credentials = listener.credentials
        self.interceptedHosts = HostNameSet(interceptedHosts)
        self.leaves = leaves
        upstreamPortHosts = Dictionary(grouping: upstreams.filter(\.host.isName), by: \.port).mapValues { HostNameSet($0.map(\.host)) }
    }

    init(listener: ForwardListener, routes: [Route], interceptedHosts: [HostPattern], leaves: (any InterceptionLeaves)?) {
        self.init(listener: listener, interceptedHosts: interceptedHosts,
                  upstreams: routes.compactMap { route in route.match.host.map { ($0, route.upstream.port) } }, leaves: leaves)
    }

    /// The port an interception of `host` (lowercase, as `ConnectTarget.hostBytes`) may name:
    /// 443, one `forward.connectPorts` lists, or the upstream port of a route naming the host.
    func allowsInterception(port: UInt16, host: [UInt8]) -> Bool {
        if port == 443 || connectPorts.contains(port) { return true }
        guard let hosts = upstreamPortHosts[port] else { return false }
        return host.withUnsafeBytes { hosts.contains($0, 0..<$0.count) }
    }

    /// The port a tunnel may name: 443, or one `forward.connectPorts` lists.
    func allowsTunnel(port: UInt16) -> Bool { port == 443 || connectPorts.contains(port) }
}
