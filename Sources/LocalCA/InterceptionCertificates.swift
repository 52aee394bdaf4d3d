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
/// Shared by every worker thread. A leaf is minted (a P-256 key, one signature, an `SSL_CTX`)
/// without the lock, which is held only to look a host up and to insert: one slow mint stalls no
/// other worker. Two connections to a new host at once may both mint; the first leaf inserted is
/// the one both use, the other dropped. A leaf that cannot be minted is reported to
/// `mintingFailed` (the host and OpenSSL's reason, never key material).
public final class InterceptionCertificates: Sendable {
    public let authority: LocalCA
    private let clock: @Sendable () -> Int64
    private let leaves: Locked<LeafCache<TLSConfiguration>>
    private let mintingFailed: @Sendable (_ host: String, _ reason: String) -> Void

    /// A leaf with less than this many seconds left is replaced.
    public static let renewalMargin: Int64 = 3_600
    public static let defaultCapacity = 1_024

    /// `clock`: Unix seconds (tests set it; the relay's is the system's). `mintingFailed` is told
    /// of each leaf that cannot be minted (the relay logs it), on the worker thread that asked.
    public init(authority: LocalCA, capacity: Int = InterceptionCertificates.defaultCapacity,
                clock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) },
                mintingFailed: @escaping @Sendable (_ host: String, _ reason: String) -> Void = { _, _ in }) {
        self.authority = authority
        self.clock = clock
        self.mintingFailed = mintingFailed
        leaves = Locked(LeafCache(capacity: capacity, renewalMargin: Self.renewalMargin))
    }

    /// The configuration to accept a client's TLS for `host` (any case, one trailing dot ignored),
    /// or nil when the CA may not sign for it (no route names it) — or, which only an exhausted
    /// OpenSSL or an expired CA makes happen, when the leaf cannot be minted (reported to
    /// `mintingFailed`): the caller must not intercept then.
    public func serverConfiguration(forHost host: String) -> TLSConfiguration? {
        var host = host.lowercased()
        if host.hasSuffix(".") { host.removeLast() }
        guard authority.constraints.permits(host) else { return nil }
        let now = clock()
        if let configuration = leaves.withLock({ $0.leaf(for: host, now: now) }) { return configuration }
        let minted: (configuration: TLSConfiguration, notBefore: Int64, notAfter: Int64)
        do {
            minted = try mint(host, now: now)
        } catch {
            mintingFailed(host, "\(error)")
            return nil
        }
        return leaves.withLock { cache in
            // Another worker minted one meanwhile: keep that one, so that every connection shares it.
            if let configuration = cache.leaf(for: host, now: now) { return configuration }
            cache.insert(minted.configuration, for: host, notBefore: minted.notBefore, notAfter: minted.notAfter)
            return minted.configuration
        }
    }

    /// How many hosts have a leaf now.
    public var cachedHostCount: Int { leaves.withLock { $0.count } }

    private func mint(_ host: String, now: Int64) throws -> (TLSConfiguration, notBefore: Int64, notAfter: Int64) {
        let (certificate, key) = try authority.issueLeaf(forHost: host, now: now)
        return (try TLSConfiguration.server(certificateChain: [certificate], key: key), certificate.notBefore, certificate.notAfter)
    }
}
