import FoundationEssentials

/// TLS options for a connection the relay makes: to a route's upstream or to an identity's
/// token endpoint. Certificate and host-name verification are on unless `insecureSkipVerify`.
public struct TLSSettings: Sendable, Equatable {
    /// PEM file of trusted CA certificates (resolved against the config file's directory);
    /// nil uses the system trust store.
    public var caFile: String?
    /// Which certificate authorities are trusted: `caFile` besides the system store (the
    /// default), or `caFile` alone, to pin a private PKI.
    public var trust: Trust
    public enum Trust: String, Sendable, Equatable, CaseIterable {
        case systemAndCaFile
        case caFileOnly
    }
    /// SNI and the name to verify, when it differs from the URL's host.
    public var serverName: String?
    /// `sha256/<base64 SPKI hash>` pins; when set, the server key must match one of them.
    public var pins: [String]
    /// PEM client certificate and key for mutual TLS (both or neither).
    public var clientCert: String?
    public var clientKey: String?
    /// The RFC 8705 thumbprint (`x5t#S256`: base64url SHA-256 of the DER) of `clientCert`'s
    /// certificate as read when the configuration loaded; nil without `clientCert`. Part of the
    /// settings, so an identity whose certificate was renewed in place is a changed identity: the
    /// tokens an IdP bound to the old certificate are not used with the new one.
    public var clientCertThumbprint: String?
    public var insecureSkipVerify: Bool

    public init(caFile: String? = nil, trust: Trust = .systemAndCaFile, serverName: String? = nil, pins: [String] = [],
                clientCert: String? = nil, clientKey: String? = nil, insecureSkipVerify: Bool = false) {
        self.caFile = caFile
        self.trust = trust
        self.serverName = serverName
        self.pins = pins
        self.clientCert = clientCert
        self.clientKey = clientKey
        self.insecureSkipVerify = insecureSkipVerify
    }

    /// The 32-byte SHA-256 digests of `pins`, in order (pins that do not decode are skipped;
    /// `ConfigLoader` rejects them).
    public var pinnedSHA256Digests: [[UInt8]] {
        pins.compactMap(Self.digest(ofPin:))
    }

    /// The digest of a `sha256/<base64 of a 32-byte hash>` pin; nil for any other text.
    public static func digest(ofPin pin: String) -> [UInt8]? {
        let prefix = "sha256/"
        guard pin.hasPrefix(prefix), let digest = Data(base64Encoded: String(pin.dropFirst(prefix.count))), digest.count == 32 else {
            return nil
        }
        return [UInt8](digest)
    }
}
