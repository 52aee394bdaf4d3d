import Config
import Endpoints
import OAuth2
import Routing

/// The Host names one listener serves. A page on `evil.example` whose name an attacker points
/// at 127.0.0.1 (DNS rebinding) makes the browser send the relay requests with
/// `Host: evil.example`, and lets the page read the answers as its own: so a loopback listener
/// serves only names that cannot be rebound — loopback names and addresses — and the names the
/// configuration gives (`hosts`, the listener's own `hosts`, the hosts routes match and
/// redirect URIs name), as Jupyter, webpack-dev-server and Vite came to do.
///
/// A listener on another address (a sidecar's `0.0.0.0`) serves any name unless `hosts` is set;
/// with it, the named ones, loopback names, and IP literals (no DNS name, so nothing to rebind:
/// a probe of the pod's address still gets through).
public final class ListenerHosts: Sendable {
    /// Any Host is served (a non-loopback listener without `hosts`).
    @usableFromInline let servesAnyName: Bool
    /// Served besides the loopback names.
    @usableFromInline let names: HostNameSet
    /// IP literals are served too (a non-loopback listener with `hosts`).
    @usableFromInline let servesIPLiterals: Bool

    public init(servesAnyName: Bool, names: HostNameSet = HostNameSet([]), servesIPLiterals: Bool = false) {
        self.servesAnyName = servesAnyName
        self.names = names
        self.servesIPLiterals = servesIPLiterals
    }

    /// The rule of a listener on `address` whose own `hosts` are `listenerHosts`.
    public convenience init(address: HostPort, listenerHosts: [HostPattern]?, config: RelayConfig) {
        guard !config.servesAnyHostName(on: address, listenerHosts: listenerHosts) else {
            self.init(servesAnyName: true)
            return
        }
        self.init(servesAnyName: false, names: Self.names(config, listenerHosts: listenerHosts),
                  servesIPLiterals: !HostSyntax.isLoopback(address.host))
    }

    /// The rules of listeners on `addresses`, none with `hosts` of its own, in that order: the
    /// same as one `init(address:listenerHosts:config:)` each, but the names they serve are
    /// gathered and indexed once for all (for each listener, that was a tenth of building a
    /// reload's settings with 10,000 routes).
    public static func forListeners(on addresses: [HostPort], config: RelayConfig) -> [ListenerHosts] {
        var shared: HostNameSet?
        return addresses.map { address in
            guard !config.servesAnyHostName(on: address, listenerHosts: nil) else { return ListenerHosts(servesAnyName: true) }
            let gathered = shared ?? Self.names(config, listenerHosts: nil)
            shared = gathered
            return ListenerHosts(servesAnyName: false, names: gathered, servesIPLiterals: !HostSyntax.isLoopback(address.host))
        }
    }

    /// The names a listener whose own `hosts` are `listenerHosts` serves besides the loopback ones.
    private static func names(_ config: RelayConfig, listenerHosts: [HostPattern]?) -> HostNameSet {
        let configured = (config.hosts ?? []) + (listenerHosts ?? [])
        let routeHosts = config.routes.compactMap(\.match.host)
        let redirectHosts = config.identities.values.compactMap { $0.redirectUri.flatMap { HostPattern(parsing: $0.host) } }
        return HostNameSet(configured + routeHosts + redirectHosts)
    }

    /// Whether a request whose Host (or absolute-form authority) is `host` is served. A request
    /// without one (HTTP/1.0) names nothing that could be rebound and is served. Inlinable: the
    /// data listeners ask it of every request (`RequestPlacement`, in Proxy).
    @inlinable @inline(__always)
    public func serves(_ host: UnsafeRawBufferPointer) -> Bool {
        if servesAnyName || Self.isCommonLoopback(host) { return true }
        let bounds = HostName.bounds(in: host)
        if bounds.isEmpty || HostName.isLoopback(host, bounds) { return true }
        if names.contains(host, bounds) { return true }
        return servesIPLiterals && (HostName.isIPv6Literal(host, bounds) || HostName.ipv4Octets(host, bounds) != nil)
    }

    /// `127.0.0.1` or `localhost`, alone or with a port, as curl, SDKs and browsers write them:
    /// most requests, told in a few comparisons (the general rule is `HostName.isLoopback`).
    @inlinable @inline(__always)
    static func isCommonLoopback(_ host: UnsafeRawBufferPointer) -> Bool {
        guard host.count >= 9, let base = host.baseAddress else { return false }
        // "127.0.0." then "1", or "localhos" then "t" (lower case), the eight bytes read as one
        // little-endian word.
        let last: UInt8
        switch UInt64(littleEndian: base.loadUnaligned(as: UInt64.self)) {
        case 0x2E30_2E30_2E37_3231: last = UInt8(ascii: "1")
        case 0x736F_686C_6163_6F6C: last = UInt8(ascii: "t")
        default: return false
        }
        guard base.load(fromByteOffset: 8, as: UInt8.self) == last else { return false }
        return host.count == 9 || base.load(fromByteOffset: 9, as: UInt8.self) == UInt8(ascii: ":")
    }
}
