import Endpoints

/// A host that names this machine or its local network rather than a place on the internet:
/// `localhost` and names below it, and the IP literals of loopback (127.0.0.0/8, ::1), the
/// unspecified address (0.0.0.0/8, ::), private networks (10/8, 172.16/12, 192.168/16, IPv6
/// unique local fc00::/7) and link-local ones (169.254/16, fe80::/10), an IPv4 address also
/// written IPv4-mapped (`::ffff:a.b.c.d`). A name that resolves to such an address is not
/// caught: only what the URL says is judged. `host` as `HTTPURL` holds it (lowercased, IPv6
/// without brackets).
enum LocalNetworkHost {
    static func contains(_ host: String) -> Bool {
        if HostSyntax.isLoopback(host) { return true }
        let bytes = Array(host.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)[0].utf8)
        if host.contains(":") {
            guard let groups = bytes.withUnsafeBytes({ HostSyntax.ipv6Groups($0, 0..<$0.count) }) else { return false }
            if groups[..<5].allSatisfy({ $0 == 0 }) && groups[5] == 0xFFFF {
                return isLocal(UInt8(groups[6] >> 8), UInt8(truncatingIfNeeded: groups[6]))
            }
            return groups.allSatisfy { $0 == 0 } || groups[0] & 0xFE00 == 0xFC00 || groups[0] & 0xFFC0 == 0xFE80
        }
        guard let octets = bytes.withUnsafeBytes({ HostSyntax.ipv4Octets($0, 0..<$0.count) }) else { return false }
        return isLocal(octets.0, octets.1)
    }

    /// An IPv4 address whose first two octets are these is loopback, unspecified, private or link-local.
    private static func isLocal(_ first: UInt8, _ second: UInt8) -> Bool {
        switch (first, second) {
        case (0, _), (10, _), (127, _): true
        case (172, 16...31), (192, 168), (169, 254): true
        default: false
        }
    }
}
