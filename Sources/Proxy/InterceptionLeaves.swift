import TLS

/// Where the forward proxy gets the certificate it completes an intercepted `CONNECT` with: a
/// leaf for exactly that host, signed by the local name-constrained CA (the `LocalCA` module's
/// `InterceptionCertificates`). The proxy knows only this protocol, so the data path builds
/// and is tested without the CA. Called on worker threads.
public protocol InterceptionLeaves: Sendable {
    /// A server configuration presenting a leaf for `host` (lowercase, as the `CONNECT` named
    /// it); nil when none can be made (the client gets a 502).
    func serverConfiguration(forHost host: String) -> TLSConfiguration?
}
