import Routing

/// The forward-proxy listener's own answers (`ForwardPlacement`, `ConnectTunnel`): who may use
/// it, which `CONNECT`s it takes, and what a request inside an intercepted one may name.
extension Problem {
    /// The `Proxy-Authenticate` challenge of a 407 (RFC 9110 §11.7.1, RFC 7617 §2.1).
    static let proxyChallenge = "Basic realm=\"oauth-relay\", charset=\"UTF-8\""

    static func proxyAuthenticationRequired() -> Problem {
        Problem(status: 407, slug: "proxy-authentication-required", title: "Proxy Authentication Required",
                detail: "this forward proxy needs Proxy-Authorization: Basic with a user and password of forward.proxyAuthFile",
                extraHeaders: [("Proxy-Authenticate", proxyChallenge)])
    }

    static func badConnectTarget() -> Problem {
        .badRequest("the CONNECT target is not host:port (a host name or IP address and a port, without userinfo)")
    }

    static func tunnelRefused(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        Problem(status: 403, slug: "tunnel-refused", title: "Forbidden",
                detail: "CONNECT to \(target) is refused: no route names the host and forward.tunnelOthers is false")
    }

    static func connectPortRefused(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        Problem(status: 403, slug: "connect-port-refused", title: "Forbidden",
                detail: "CONNECT to \(target) is refused: port \(target.port) is not 443, in forward.connectPorts "
                    + "or (for a host a route names) the port of its route's upstream")
    }

    static func hostNotForwarded(_ host: String) -> Problem {
        Problem(status: 403, slug: "host-not-forwarded", title: "Forbidden",
                detail: "only the hosts the routes name are forwarded for http:// (not \"\(host)\"); use https through CONNECT")
    }

    static func notAbsoluteForm() -> Problem {
        .badRequest("this listener is a forward proxy: send absolute-form (http://host/path) or CONNECT host:port")
    }

    static func misdirectedInTunnel(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        Problem(status: 421, slug: "misdirected-request", title: "Misdirected Request",
                detail: "this connection was opened with CONNECT \(target): it carries requests for that host only")
    }

    static func noLongerIntercepted(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        Problem(status: 421, slug: "misdirected-request", title: "Misdirected Request",
                detail: "no route names \(target.host) since the configuration was reloaded: this connection is closed, CONNECT again")
    }

    static func noInterceptionLeaf(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        .badGateway("no certificate for \(target.host) could be made (the forward proxy's CA)", route: nil)
    }

    static func tunnelConnectFailed(_ target: ForwardPlacement.ConnectTarget, reason: String) -> Problem {
        .badGateway("cannot connect to \(target): \(reason)", route: nil)
    }

    static func tunnelLookupsBusy(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        Problem(status: 503, slug: "tunnel-lookups-busy", title: "Service Unavailable",
                detail: "too many CONNECTs wait for their host name to resolve; \(target) was not tried", extraHeaders: [("Retry-After", "1")])
    }

    static func tunnelWorkerStopping(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        Problem(status: 503, slug: "shutting-down", title: "Service Unavailable",
                detail: "the relay is stopping: CONNECT to \(target) was not completed")
    }

    static func tunnelConnectTimedOut(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        .gatewayTimeout("no connection to \(target) within upstreamConnectTimeoutSeconds", route: nil)
    }

    /// The forward proxy's answer to `http://` absolute-form on a route with a credential: the
    /// same URL with `https://` (host, path and query as sent; the port dropped: an `http://`
    /// port is not the site's TLS port), where a browser comes back through `CONNECT` and sends
    /// Fetch Metadata, which the browser policy needs.
    static func upgradeToHTTPS(authority: UnsafeRawBufferPointer, path: UnsafeRawBufferPointer, queryWithMark: UnsafeRawBufferPointer,
                               route: String) -> Problem {
        let bounds = HostName.bounds(in: authority)
        let host = String(decoding: authority[bounds], as: UTF8.self)
        let hostPart = HostName.isIPv6Literal(authority, bounds) ? "[\(host)]" : host
        let location = "https://" + hostPart + String(decoding: path, as: UTF8.self) + String(decoding: queryWithMark, as: UTF8.self)
        return Problem(status: 308, slug: "https-required", title: "Permanent Redirect",
                       detail: "route \(route) adds a credential: through this forward proxy it is reached over https only "
                           + "(browsers send no Fetch Metadata to http:// URLs, which the browser policy needs)",
                       route: route, extraHeaders: [("Location", location)])
    }
}
