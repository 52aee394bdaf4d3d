/// Reads `forward` (the forward-proxy listener). Minimal: enough for the data path's tests; the
/// full decoding (refusals, schema, README) is the config part of issue 26.
struct ForwardListenerDecoding {
    let context: DecodingContext

    func decodeForwardListener(_ field: Field) -> ForwardListener? {
        guard let object = ObjectReader(field, knownKeys: ForwardListener.knownKeys, in: context) else { return nil }
        guard let listenField = object.required("listen"), let address = context.parsed(listenField, HostPort.parse) else { return nil }
        var listener = ForwardListener(address: address)
        listener.tunnelOthers = object.bool("tunnelOthers") ?? listener.tunnelOthers
        if let path = object.nonEmptyString("proxyAuthFile") { listener.proxyAuthFile = context.files.resolvePath(path) }
        if let ports = object.field("connectPorts").flatMap(context.elements) {
            listener.connectPorts = ports.compactMap { context.integer($0, in: 1...65535, rangeDescription: "a port, 1 to 65535") }
                .map { UInt16($0) }
        }
        listener.caDirectory = object.nonEmptyString("caDirectory").map(context.files.resolvePath)
        return listener
    }
}
