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
                detail: "CONNECT to \(target) is refused: port \(target.port) is not 443 or in forward.connectPorts")
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

    static func noInterceptionLeaf(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        .badGateway("no certificate for \(target.host) could be made (the forward proxy's CA)", route: nil)
    }

    static func tunnelConnectFailed(_ target: ForwardPlacement.ConnectTarget, reason: String) -> Problem {
        .badGateway("cannot connect to \(target): \(reason)", route: nil)
    }

    static func tunnelConnectTimedOut(_ target: ForwardPlacement.ConnectTarget) -> Problem {
        .gatewayTimeout("no connection to \(target) within upstreamConnectTimeoutSeconds", route: nil)
    }
}
