import Endpoints

/// Reads `forward` (the `HTTPS_PROXY` listener) into a `ForwardListener`: `listen` (required),
/// `tunnelOthers`, `proxyAuthFile` (read here into `ProxyCredentials`, refused when group or
/// others may open it), `connectPorts`, `caDirectory`. `"forward": null` is no forward proxy.
/// A listener on a non-loopback address must have `proxyAuthFile`: without it any host that
/// reaches the port could send requests out with the identities' tokens.
struct ForwardDecoding {
    let context: DecodingContext

    func decodeForward(_ field: Field) -> ForwardListener? {
        if case .null = field.value.kind { return nil }
        guard let object = ObjectReader(field, knownKeys: ForwardListener.knownKeys, in: context) else { return nil }
        let address = object.required("listen").flatMap { context.parsed($0, HostPort.parse) }
        let tunnelOthers = object.bool("tunnelOthers")
        let authFile = object.field("proxyAuthFile").flatMap(readCredentials)
        let connectPorts = object.field("connectPorts").flatMap(decodeConnectPorts)
        let caDirectory = object.field("caDirectory").flatMap(decodeCADirectory)
        guard let address else { return nil }
        if !HostSyntax.isLoopback(address.host), object.field("proxyAuthFile") == nil {
            context.report("required when forward.listen is not a loopback address (\(address)): without Proxy-Authorization, "
                           + "any host that reaches the port could send requests out with the identities' tokens",
                           at: object.path.key("proxyAuthFile"), offset: object.lastOffset)
        }
        var forward = ForwardListener(address: address, proxyAuthFile: authFile?.path, caDirectory: caDirectory,
                                      credentials: authFile?.credentials)
        forward.tunnelOthers = tunnelOthers ?? forward.tunnelOthers
        forward.connectPorts = connectPorts ?? forward.connectPorts
        return forward
    }

    /// Reports a `forward.listen` that takes the port of another listener of `config` (`listen`,
    /// `admin`, `listenTls.address`): the same address, or the same port where either side is a
    /// wildcard address (`0.0.0.0`, `[::]`), which binds it on every address. Port 0 (a port the
    /// system picks) collides with nothing.
    func checkAddress(of forward: ForwardListener, in config: RelayConfig, forwardField: Field) {
        guard case .object(let members) = forwardField.value.kind,
              let listen = members.first(where: { $0.key == "listen" }) else { return }
        var others: [(key: String, address: HostPort)] = [("listen", config.listen)]
        if let admin = config.admin { others.append(("admin", admin)) }
        if let listenTls = config.listenTls { others.append(("listenTls.address", listenTls.address)) }
        for other in others where Self.sharePort(forward.address, other.address) {
            context.report("\(forward.address) takes the port of \(other.key) \(other.address); give the forward proxy a port of its own",
                           at: forwardField.path.key("listen"), offset: listen.value.offset)
        }
    }

    /// Whether listeners on `a` and `b` would bind the same port.
    static func sharePort(_ a: HostPort, _ b: HostPort) -> Bool {
        guard a.port != 0, a.port == b.port else { return false }
        let wildcards = ["0.0.0.0", "::"]
        return a.host.lowercased() == b.host.lowercased() || wildcards.contains(a.host) || wildcards.contains(b.host)
    }

    /// `proxyAuthFile`: its resolved path and the pairs it holds, or nil once the problem is
    /// reported, naming the file and, for a malformed one, the line (never its content). The file
    /// is watched: a rotated one re-applies the configuration.
    private func readCredentials(_ field: Field) -> (path: String, credentials: ProxyCredentials)? {
        guard let path = context.files.existingFile(field) else { return nil }
        context.watch(field, path: path)
        let bytes: [UInt8]
        switch PrivateFileMode.contents(ofFile: path, limit: ReferencedFiles.fileSizeLimit) {
        case .success(let read):
            bytes = read
        case .failure(.openToOthers(let problem)):
            context.report("\(problem): \(path)", at: field)
            return nil
        case .failure(.unavailable(let unavailable)):
            context.report("cannot read file (\(unavailable)): \(path)", at: field)
            return nil
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            context.report("file is not UTF-8 text: \(path)", at: field)
            return nil
        }
        do throws(ProxyCredentials.FormatError) {
            return (path, try ProxyCredentials(parsing: text))
        } catch {
            context.report("not a list of \"user:password\" lines (\(error)): \(path)", at: field)
            return nil
        }
    }

    /// `connectPorts`: at least one port, each 1-65535 and listed once.
    private func decodeConnectPorts(_ field: Field) -> [UInt16]? {
        guard let elements = context.elements(field) else { return nil }
        guard !elements.isEmpty else {
            context.report("must list at least one port; leave it out for [443]", at: field)
            return nil
        }
        var ports: [UInt16] = []
        var indices: [Int] = []
        var valid = true
        for (index, element) in elements.enumerated() {
            guard let port = context.integer(element, in: 1...65535, rangeDescription: "a port 1-65535").map(UInt16.init) else {
                valid = false
                continue
            }
            if let earlier = ports.firstIndex(of: port) {
                context.report("port \(port) is already listed at connectPorts[\(indices[earlier])]", at: element)
                valid = false
                continue
            }
            ports.append(port)
            indices.append(index)
        }
        return valid ? ports : nil
    }

    /// `caDirectory`: an absolute path, written as the relay will create it and keep the CA's
    /// private key in it.
    private func decodeCADirectory(_ field: Field) -> String? {
        guard let path = context.nonEmptyString(field) else { return nil }
        guard path.hasPrefix("/") else {
            context.report("must be an absolute path, got \"\(path)\"", at: field)
            return nil
        }
        return path
    }
}
