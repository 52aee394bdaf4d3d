import Crypto
import Locking
import TLS
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The TLS server configurations the forward proxy completes intercepted `CONNECT`s with: one per
/// host, its leaf minted by the CA on first use, kept while it has more than an hour left (and has
/// begun: a clock stepped back before its notBefore gets a new one), and at
/// most `capacity` hosts kept (the least recently used dropped).
///
/// Shared by every worker thread. Minting happens with the lock held: a P-256 key, one signature
/// and an `SSL_CTX` take well under a millisecond (LocalCATests measure it), and holding the lock
/// means two connections to a new host at once mint one leaf, not two.
public final class InterceptionCertificates: Sendable {
    public let authority: LocalCA
    private let clock: @Sendable () -> Int64
    private let leaves: Locked<LeafCache<TLSConfiguration>>

    /// A leaf with less than this many seconds left is replaced.
    public static let renewalMargin: Int64 = 3_600
    public static let defaultCapacity = 1_024

    /// `clock`: Unix seconds (tests set it; the relay's is the system's).
    public init(authority: LocalCA, capacity: Int = InterceptionCertificates.defaultCapacity,
                clock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }) {
        self.authority = authority
        self.clock = clock
        leaves = Locked(LeafCache(capacity: capacity, renewalMargin: Self.renewalMargin))
    }

    /// The configuration to accept a client's TLS for `host` (any case, one trailing dot ignored),
    /// or nil when the CA may not sign for it (no route names it) — or, which only an exhausted
    /// OpenSSL makes happen, when the leaf cannot be minted: the caller must not intercept then.
    public func serverConfiguration(forHost host: String) -> TLSConfiguration? {
        var host = host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        guard authority.constraints.permits(host) else { return nil }
        let now = clock()
        return leaves.withLock { cache in
            if let configuration = cache.leaf(for: host, now: now) { return configuration }
            guard let (configuration, notBefore, notAfter) = try? mint(host, now: now) else { return nil }
            cache.insert(configuration, for: host, notBefore: notBefore, notAfter: notAfter)
            return configuration
        }
    }

    /// How many hosts have a leaf now.
    public var cachedHostCount: Int { leaves.withLock { $0.count } }

    private func mint(_ host: String, now: Int64) throws -> (TLSConfiguration, notBefore: Int64, notAfter: Int64) {
        let (certificate, key) = try authority.issueLeaf(forHost: host, now: now)
        return (try TLSConfiguration.server(certificateChain: [certificate], key: key), certificate.notBefore, certificate.notAfter)
    }
}
