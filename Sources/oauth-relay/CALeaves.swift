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
    /// The leaves for the configuration a reload puts in force. The CA's files are read again
    /// whatever changed: the leaves in force stay while the CA there is still theirs (same
    /// fingerprint, same hosts); a CA replaced in the directory (`oauth-relay ca` run with another
    /// configuration), or issued anew for new hosts, gets leaves of its own, and is logged.
    static func forReload(leaves: (any InterceptionLeaves)?, to new: RelayConfig,
                          logger: Logger) throws(ForwardCA.Failure) -> (any InterceptionLeaves)? {
        guard new.forward != nil else { return nil }
        let current = (leaves as? CALeaves)?.certificates
        let opened = try ForwardCA.open(config: new, environment: ProcessInfo.processInfo.environment, logger: logger, keeping: current)
        return opened.map(CALeaves.init)
    }
}
