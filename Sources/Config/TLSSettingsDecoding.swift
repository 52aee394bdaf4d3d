import Endpoints

/// Reads `tls` objects (a route's upstream, an identity's token endpoint): their keys and the
/// checks `oauth-relay check` reports.
struct TLSSettingsDecoding {
    let context: DecodingContext

    static let tlsKeys = ["caFile", "trust", "serverName", "pins", "clientCert", "clientKey", "insecureSkipVerify"]

    /// The digest of a `sha256/<base64>` pin.
    static func parsePin(_ pin: String) throws(InvalidValue) -> [UInt8] {
        let prefix = "sha256/"
        guard pin.hasPrefix(prefix) else {
            throw InvalidValue("expected \"sha256/<base64 of the SPKI SHA-256 hash>\", got \"\(pin)\"")
        }
        guard let digest = TLSSettings.digest(ofPin: pin) else {
            throw InvalidValue("\"\(pin)\" is not the base64 of a 32-byte SHA-256 hash")
        }
        return digest
    }

    /// A `tls` object for a connection to `endpoint` (described as `endpointName`), which
    /// must not be plain http.
    func decodeTLS(_ field: Field, endpoint: URLScheme?, endpointName: String) -> TLSSettings? {
        if endpoint == .http {
            context.report("tls is set but \(endpointName) is http://", at: field)
        }
        guard let object = ObjectReader(field, knownKeys: Self.tlsKeys, in: context) else { return nil }
        var tls = TLSSettings()
        tls.caFile = object.field("caFile").flatMap(context.files.watchedFile)
        if let field = object.field("trust") {
            tls.trust = context.parsed(field) { text throws(InvalidValue) in
                guard let trust = TLSSettings.Trust(rawValue: text) else {
                    throw InvalidValue("must be \"systemAndCaFile\" or \"caFileOnly\", got \"\(text)\"")
                }
                return trust
            } ?? tls.trust
            if tls.trust == .caFileOnly, object.field("caFile") == nil {
                context.report("\"caFileOnly\" needs caFile: the CA certificates to trust instead of the system store", at: field)
            }
        }
        tls.serverName = object.parsed("serverName") { name throws(InvalidValue) in
            guard HostSyntax.isHostName(Substring(name)) else { throw InvalidValue("\"\(name)\" is not a valid host name") }
            return name.lowercased()
        }
        tls.pins = object.field("pins").flatMap(context.elements)?.compactMap { pin in
            context.parsed(pin) { text throws(InvalidValue) in
                _ = try Self.parsePin(text)
                return text
            }
        } ?? []
        tls.clientCert = object.field("clientCert").flatMap(context.files.watchedFile)
        tls.clientKey = object.field("clientKey").flatMap(context.files.watchedFile)
        tls.clientCertThumbprint = tls.clientCert.flatMap(context.files.certificateThumbprint)
        switch (object.field("clientCert"), object.field("clientKey")) {
        case (_?, nil):
            context.report("required when clientCert is set", at: object.path.key("clientKey"), offset: object.lastOffset)
        case (nil, _?):
            context.report("required when clientKey is set", at: object.path.key("clientCert"), offset: object.lastOffset)
        default:
            break
        }
        tls.insecureSkipVerify = object.bool("insecureSkipVerify") ?? false
        return tls
    }
}
