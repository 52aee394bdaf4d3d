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

    init(listener: ForwardListener, interceptedHosts: [HostPattern], leaves: (any InterceptionLeaves)?) {
        address = listener.address
        tunnelOthers = listener.tunnelOthers
        connectPorts = listener.connectPorts
        credentials = listener.credentials
        self.interceptedHosts = HostNameSet(interceptedHosts)
        self.leaves = leaves
    }

    /// The port a tunnel or an interception may name: 443, or one `forward.connectPorts` lists.
    func allowsInterception(port: UInt16) -> Bool { port == 443 || connectPorts.contains(port) }
    func allowsTunnel(port: UInt16) -> Bool { connectPorts.contains(port) }
}
