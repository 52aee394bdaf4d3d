import Routing

/// `listenTls`: where the relay accepts TLS connections, and with which certificate.
public struct TLSListener: Sendable, Equatable {
    public var address: HostPort
    public var certFile: String
    public var keyFile: String
    /// Clients must present a certificate from this CA (mutual TLS); nil asks for none.
    public var clientCaFile: String?
    /// Host names this listener serves besides the top-level `hosts`.
    public var hosts: [HostPattern]?

    public init(address: HostPort, certFile: String, keyFile: String, clientCaFile: String? = nil, hosts: [HostPattern]? = nil) {
        self.address = address
        self.certFile = certFile
        self.keyFile = keyFile
        self.clientCaFile = clientCaFile
        self.hosts = hosts
    }

    static let knownKeys = ["address", "certFile", "keyFile", "clientCaFile", "hosts"]
}
