import Endpoints
import Routing

/// `forward`: the forward-proxy listener (`HTTPS_PROXY=http://127.0.0.1:8181`). A `CONNECT` to a
/// host some route's `match.host` names is intercepted (TLS completed with a leaf of the local,
/// name-constrained CA, the route applied inside); a `CONNECT` to any other host is tunnelled as
/// bytes, or refused without `tunnelOthers`; absolute-form `http://` requests are placed on the
/// routes by their target host.
public struct ForwardListener: Sendable, Equatable {
    /// `forward.listen`.
    public var address: HostPort
    /// `CONNECT` to hosts no route names is tunnelled untouched (true) or refused (false).
    public var tunnelOthers: Bool
    /// `user:password` lines; when set, every request on the listener needs a matching
    /// `Proxy-Authorization: Basic` (required on a non-loopback listener).
    public var proxyAuthFile: String?
    /// The pairs `proxyAuthFile` held when the configuration was loaded (a reload reads the file
    /// again); nil without `proxyAuthFile`.
    public var credentials: ProxyCredentials?
    /// The ports a `CONNECT` may name (default 443); an intercepted host's route port is allowed
    /// as well.
    public var connectPorts: [UInt16]
    /// Where the CA lives; nil: `forward-ca` in the token store's directory (`store.path`, or
    /// the default store's).
    public var caDirectory: String?

    public init(address: HostPort, tunnelOthers: Bool = true, proxyAuthFile: String? = nil,
                connectPorts: [UInt16] = [443], caDirectory: String? = nil, credentials: ProxyCredentials? = nil) {
        self.address = address
        self.tunnelOthers = tunnelOthers
        self.proxyAuthFile = proxyAuthFile
        self.credentials = credentials
        self.connectPorts = connectPorts
        self.caDirectory = caDirectory
    }

    static let knownKeys = ["listen", "tunnelOthers", "proxyAuthFile", "connectPorts", "caDirectory"]
}

extension RelayConfig {
    /// The host names the forward proxy intercepts, and so the names its CA may sign for: every
    /// route's `match.host` that is a name (exact or wildcard), not an IP address (the CA
    /// excludes every address range). Sorted and without duplicates.
    public var interceptedHosts: [HostPattern] {
        var seen = Set<HostPattern>()
        var hosts: [HostPattern] = []
        for route in routes {
            guard let host = route.match.host, host.isName, seen.insert(host).inserted else { continue }
            hosts.append(host)
        }
        return hosts.sorted { $0.description < $1.description }
    }
}

extension HostPattern {
    /// A DNS name or a wildcard over one, not an IP address nor a wildcard over an IPv4 address
    /// (`isDNSName`, the rule the CA's name constraints follow).
    public var isName: Bool { isDNSName }
}
