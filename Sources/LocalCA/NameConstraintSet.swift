import Endpoints
import Routing

/// The names the forward proxy's CA may sign for: its Name Constraints extension (RFC 5280,
/// 4.2.1.10), made from the routes' host patterns, and the rule the proxy mints leaves by.
///
/// `.exact("api.test")` permits the DNS subtree `api.test`, `.wildcard(suffix: "example.com")`
/// the subtree `.example.com` (its subdomains, not `example.com` itself: OpenSSL's form, which
/// browsers read the same way). E-mail addresses and URIs are confined to `.invalid`, every IP address is excluded (`0.0.0.0/0`, `::/0`). A permitted
/// DNS subtree is wider than an exact pattern: X.509 cannot say "this name and none below it",
/// so `api.test` also permits `a.api.test`. `permits` is the exact rule: the proxy mints leaves
/// only for the names the routes match.
public struct NameConstraintSet: Sendable, Equatable {
    /// The patterns, in the order given, without duplicates.
    public let hosts: [HostPattern]

    /// Refuses an empty list and any pattern that is not a DNS name (`HostPattern.isDNSName`, the
    /// rule `check` decides interception by): the names go into an OpenSSL configuration string,
    /// where `HostSyntax.isHostName` leaves no room for a comma or a colon.
    public init(hosts: [HostPattern]) throws(LocalCAError) {
        var unique: [HostPattern] = []
        for host in hosts where !unique.contains(host) {
            guard host.isDNSName else { throw .notAHostName(host.description) }
            unique.append(host)
        }
        guard !unique.isEmpty else { throw .noHosts }
        self.hosts = unique
    }

    /// The permitted DNS subtrees as the certificate writes them: `api.test`, `.example.com`.
    public var permittedDNSNames: [String] {
        hosts.map { host in
            switch host {
            case .exact(let name): name
            case .wildcard(let suffix): "." + suffix
            }
        }
    }

    /// The extension's value in OpenSSL's configuration syntax. Besides the DNS names, the only
    /// e-mail addresses and URIs permitted are under `.invalid` (RFC 6761: none exist), so that
    /// the CA's key cannot sign an S/MIME or client certificate naming a real address.
    var extensionValue: String {
        (["critical"] + permittedDNSNames.sorted().map { "permitted;DNS:" + $0 }
            + ["permitted;email:.invalid", "permitted;URI:.invalid", "excluded;IP:0.0.0.0/0.0.0.0", "excluded;IP:::/::"])
            .joined(separator: ",")
    }

    /// Whether the proxy may mint a leaf for `host` (lowercase, no trailing dot): a name an
    /// exact pattern names, or a subdomain of a wildcard's suffix.
    public func permits(_ host: String) -> Bool {
        guard HostSyntax.isHostName(Substring(host)) else { return false }
        return hosts.contains { pattern in
            switch pattern {
            case .exact(let name): host == name
            case .wildcard(let suffix): host.hasSuffix("." + suffix) && host.utf8.count > suffix.utf8.count + 1
            }
        }
    }
}
