import LocalCA
import Proxy
import TLS
import Config
import FoundationEssentials
import Logging

/// The forward proxy's CA as the data path asks for leaves (`InterceptionLeaves`): one
/// certificate per intercepted host, minted and cached by `InterceptionCertificates`.
struct CALeaves: InterceptionLeaves {
    let certificates: InterceptionCertificates

    func serverConfiguration(forHost host: String) -> TLSConfiguration? {
        certificates.serverConfiguration(forHost: host)
    }
}

extension CALeaves {
    /// The leaves for the configuration a reload puts in force: those in force while the CA's
    /// directory and the routes' hosts stay the same (no file is read, no leaf minted again);
    /// otherwise the CA opened again, which issues a new one for the new hosts and logs it.
    static func forReload(from old: RelayConfig, leaves: (any InterceptionLeaves)?, to new: RelayConfig,
                          logger: Logger) throws(ForwardCA.Failure) -> (any InterceptionLeaves)? {
        guard new.forward != nil else { return nil }
        let environment = ProcessInfo.processInfo.environment
        if old.forward != nil, old.interceptedHosts == new.interceptedHosts,
           (try? ForwardCA.directory(config: old, environment: environment))
               == (try? ForwardCA.directory(config: new, environment: environment)) {
            return leaves
        }
        return try ForwardCA.open(config: new, environment: environment, logger: logger).map(CALeaves.init)
    }
}
