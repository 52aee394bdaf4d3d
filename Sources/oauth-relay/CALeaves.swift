import LocalCA
import Proxy
import TLS

/// The forward proxy's CA as the data path asks for leaves (`InterceptionLeaves`): one
/// certificate per intercepted host, minted and cached by `InterceptionCertificates`.
struct CALeaves: InterceptionLeaves {
    let certificates: InterceptionCertificates

    func serverConfiguration(forHost host: String) -> TLSConfiguration? {
        certificates.serverConfiguration(forHost: host)
    }
}
