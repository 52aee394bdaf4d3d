import BrowserSafety
import LocalHTTP

/// Who may use the admin listener: curl, Prometheus, probes and the `oauth-relay` commands —
/// never a web page. Its endpoints start logins, forget tokens, reload, and show a device login's
/// code, so a page that reached them could start a device login, read the code under a rebound
/// name and approve it with its own account (the relay would then act as the attacker). The
/// same rules as the data listeners': a Host the admin listener serves (`ListenerHosts`: loopback
/// names and `hosts` on a loopback address), and no request a browser marks as another site's
/// (`BrowserPolicy`, as for a route with a credential, with no origin listed). A person may still
/// open `/metrics` or `/identities` in a browser tab (a typed URL, or a link followed: reading,
/// which changes nothing).
enum AdminGate {
    enum Refusal: Equatable {
        case host(String)
        case crossSite(origin: String?)
    }

    static func refusal(_ request: LocalRequest, hosts: ListenerHosts) -> Refusal? {
        var host: String?
        var site: String?, mode: String?, dest: String?, origin: String?
        var repeated = false
        func note(_ slot: inout String?, _ value: String) {
            if slot != nil { repeated = true } else { slot = value }
        }
        for (name, value) in request.headers {
            switch name.lowercased() {
            case "host": host = value
            case "origin": note(&origin, value)
            case "sec-fetch-site": note(&site, value)
            case "sec-fetch-mode": note(&mode, value)
            case "sec-fetch-dest": note(&dest, value)
            default: break
            }
        }
        let named = host ?? ""
        let served = Array(named.utf8).withUnsafeBytes { hosts.serves($0) }
        guard served else { return .host(named) }
        guard site != nil || origin != nil || repeated else { return nil }
        let method = request.method.uppercased()
        let browser = BrowserRequest(isSafeMethod: method == "GET" || method == "HEAD", isPreflight: method == "OPTIONS" && origin != nil,
                                     site: site, mode: mode, dest: dest, origin: origin, repeated: repeated, host: host,
                                     overTLS: false)
        return BrowserPolicy.verdict(browser, guards: true, allowOrigins: nil) == .allow ? nil : .crossSite(origin: browser.origin)
    }
}
