import Config
import FoundationEssentials
import Proxy

extension ForwardInputs {
    /// The forward listener's inputs a config names: `forward.proxyAuthFile`'s pairs (read now;
    /// errors name the file and the line, never its text). The leaves of intercepted hosts come
    /// from the forward proxy's CA, set by the caller.
    static func load(for config: RelayConfig) -> (inputs: ForwardInputs, errors: [String]) {
        guard let path = config.forward?.proxyAuthFile else { return (ForwardInputs(), []) }
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path)) else {
            return (ForwardInputs(), ["$.forward.proxyAuthFile: cannot read \(path)"])
        }
        do throws(ProxyCredentials.FormatError) {
            return (ForwardInputs(credentials: try ProxyCredentials(parsing: String(decoding: data, as: UTF8.self))), [])
        } catch {
            return (ForwardInputs(), ["$.forward.proxyAuthFile: \(path): \(error)"])
        }
    }
}
