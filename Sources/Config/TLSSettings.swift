import Foundation
import Routing

/// TLS options for a connection the relay makes: to a route's upstream or to an identity's
/// token endpoint. Certificate and host-name verification are on unless `insecureSkipVerify`.
public struct TLSSettings: Sendable, Equatable {
    /// PEM file of trusted CA certificates (resolved against the config file's directory);
    /// nil uses the system trust store.
    public var caFile: String?
    /// SNI and the name to verify, when it differs from the URL's host.
    public var serverName: String?
    /// `sha256/<base64 SPKI hash>` pins; when set, the server key must match one of them.
    public var pins: [String]
    /// PEM client certificate and key for mutual TLS (both or neither).
    public var clientCert: String?
    public var clientKey: String?
    public var insecureSkipVerify: Bool

    public init(caFile: String? = nil, serverName: String? = nil, pins: [String] = [],
                clientCert: String? = nil, clientKey: String? = nil, insecureSkipVerify: Bool = false) {
        self.caFile = caFile
        self.serverName = serverName
        self.pins = pins
        self.clientCert = clientCert
        self.clientKey = clientKey
        self.insecureSkipVerify = insecureSkipVerify
    }

    /// The 32-byte SHA-256 digests of `pins`, in order (pins that do not decode are skipped;
    /// `ConfigLoader` rejects them).
    public var pinnedSHA256Digests: [[UInt8]] {
        pins.compactMap { try? Self.parsePin($0) }
    }

    static let knownKeys = ["caFile", "serverName", "pins", "clientCert", "clientKey", "insecureSkipVerify"]

    /// The digest of a `sha256/<base64>` pin.
    static func parsePin(_ pin: String) throws(InvalidValue) -> [UInt8] {
        let prefix = "sha256/"
        guard pin.hasPrefix(prefix) else {
            throw InvalidValue("expected \"sha256/<base64 of the SPKI SHA-256 hash>\", got \"\(pin)\"")
        }
        guard let digest = Data(base64Encoded: String(pin.dropFirst(prefix.count))), digest.count == 32 else {
            throw InvalidValue("\"\(pin)\" is not the base64 of a 32-byte SHA-256 hash")
        }
        return [UInt8](digest)
    }
}

extension DecodingContext {
    /// A `tls` object for a connection to `endpoint` (described as `endpointName`), which
    /// must not be plain http.
    func decodeTLS(_ field: Field, endpoint: URLScheme?, endpointName: String) -> TLSSettings? {
        if endpoint == .http {
            report("tls is set but \(endpointName) is http://", at: field)
        }
        guard let object = ObjectReader(field, knownKeys: TLSSettings.knownKeys, in: self) else { return nil }
        var tls = TLSSettings()
        tls.caFile = object.field("caFile").flatMap(existingFile)
        tls.serverName = object.parsed("serverName") { name throws(InvalidValue) in
            guard HostSyntax.isHostName(Substring(name)) else { throw InvalidValue("\"\(name)\" is not a valid host name") }
            return name.lowercased()
        }
        tls.pins = object.field("pins").flatMap(elements)?.compactMap { pin in
            parsed(pin) { text throws(InvalidValue) in
                _ = try TLSSettings.parsePin(text)
                return text
            }
        } ?? []
        tls.clientCert = object.field("clientCert").flatMap(existingFile)
        tls.clientKey = object.field("clientKey").flatMap(existingFile)
        switch (object.field("clientCert"), object.field("clientKey")) {
        case (_?, nil):
            report("required when clientCert is set", at: object.path.key("clientKey"), offset: object.lastOffset)
        case (nil, _?):
            report("required when clientKey is set", at: object.path.key("clientCert"), offset: object.lastOffset)
        default:
            break
        }
        tls.insecureSkipVerify = object.bool("insecureSkipVerify") ?? false
        return tls
    }
}
