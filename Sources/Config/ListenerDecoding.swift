import Routing

/// Reads what the listeners are: `listenTls` (the TLS listener's address, certificate and key),
/// and `hosts` (top level, and per listener), the Host names a listener serves besides the
/// loopback names (`ListenerHosts` in BrowserSafety).
struct ListenerDecoding {
    let context: DecodingContext

    func decodeTLSListener(_ field: Field) -> TLSListener? {
        guard let object = ObjectReader(field, knownKeys: TLSListener.knownKeys, in: context) else { return nil }
        let address = object.parsed("address", HostPort.parse)
        let certFile = object.field("certFile").flatMap(context.files.watchedFile)
        let keyFile = object.field("keyFile").flatMap(context.files.watchedFile)
        let clientCaFile = object.field("clientCaFile").flatMap(context.files.watchedFile)
        for key in ["address", "certFile", "keyFile"] where object.field(key) == nil {
            context.report("required", at: object.path.key(key), offset: object.lastOffset)
        }
        let hosts = object.field("hosts").flatMap(decodeHostNames)
        guard let address, let certFile, let keyFile else { return nil }
        return TLSListener(address: address, certFile: certFile, keyFile: keyFile, clientCaFile: clientCaFile, hosts: hosts)
    }

    func decodeHostNames(_ field: Field) -> [HostPattern]? {
        guard let elements = context.elements(field) else { return nil }
        let patterns = elements.compactMap { element in
            context.parsed(element) { text throws(InvalidValue) -> HostPattern in
                guard text != "*" else {
                    throw InvalidValue("\"*\" would serve any name, which is what DNS rebinding needs; list the names")
                }
                do throws(HostPattern.SyntaxError) { return try HostPattern.parse(text) } catch { throw InvalidValue(error.message) }
            }
        }
        return patterns.count == elements.count ? patterns : nil
    }
}
