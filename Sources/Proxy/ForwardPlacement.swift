// ForwardPlacement: where a head on the forward-proxy listener goes, decided on the head alone
// (no socket), before `RequestPlacement` sees it. In order:
//
//   1. Proxy-Authorization, when `forward.proxyAuthFile` is set (407 with a Basic challenge)
//   2. CONNECT: the target must be authority-form `host:port` (400, closing); a host a route
//      names is intercepted (port 443, one of `forward.connectPorts`, or the upstream port of a
//      route naming the host), another is tunnelled (`forward.tunnelOthers`; port 443 or one of
//      `forward.connectPorts`), or refused (403, the connection stays usable)
//   3. absolute-form `http://host/...`: on the routes when a route names the host (then
//      `RequestPlacement` goes on, without the listener's Host check), 403 otherwise
//   4. origin-form or `*`: 400 (this listener is a proxy, not a server)
//
// Inside an intercepted `CONNECT`, every request must name the host the `CONNECT` named, and a
// route must still name that host after a reload (`placeIntercepted`; 421, closing): that
// replaces the listener's Host check there.

import Config
import HTTP1
import HTTPFields
import Routing

struct ForwardPlacement {
    /// The host and port of a `CONNECT`: the host lowercase, without a trailing dot, an IPv6
    /// address without its brackets.
    struct ConnectTarget: Equatable, Sendable, CustomStringConvertible {
        let host: String
        let port: UInt16
        /// `host`'s bytes, kept for the checks each request inside an intercepted connection makes.
        let hostBytes: [UInt8]

        init(host: String, port: UInt16) {
            self.host = host
            self.port = port
            hostBytes = Array(host.utf8)
        }

        var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    enum Decision: Equatable {
        /// On the routes (`RequestPlacement`), the host vouched for.
        case routes
        /// Bytes both ways with `target` (`ConnectTunnel`).
        case tunnel(ConnectTarget)
        /// TLS completed here with a leaf for the host, the route applied inside.
        case intercept(ConnectTarget)
        /// Answered by the relay; `closing`: what follows cannot be trusted.
        case answer(Problem, closing: Bool)

        static func == (lhs: Decision, rhs: Decision) -> Bool {
            switch (lhs, rhs) {
            case (.routes, .routes): return true
            case (.tunnel(let a), .tunnel(let b)), (.intercept(let a), .intercept(let b)): return a == b
            case (.answer(let a, let x), .answer(let b, let y)): return a.status == b.status && a.slug == b.slug && x == y
            default: return false
            }
        }
    }

    let forward: ForwardSettings

    func place(_ head: HTTPHead) -> Decision {
        if let credentials = forward.credentials, !Self.carriesCredentials(head, admittedBy: credentials) {
            return .answer(.proxyAuthenticationRequired(), closing: false)
        }
        if head.isConnect { return placeConnect(head.target) }
        // A target RequestPlacement cannot read is its 400 (closing).
        guard let target = RequestTarget(head.target) else { return .routes }
        guard let authority = target.authority else { return .answer(.notAbsoluteForm(), closing: false) }
        guard isIntercepted(authority) else {
            return .answer(.hostNotForwarded(String(decoding: authority, as: UTF8.self)), closing: false)
        }
        return .routes
    }

    private func placeConnect(_ raw: UnsafeRawBufferPointer) -> Decision {
        guard let target = Self.connectTarget(raw) else { return .answer(.badConnectTarget(), closing: true) }
        let intercepted = target.hostBytes.withUnsafeBytes { isIntercepted($0) }
        if intercepted {
            guard forward.allowsInterception(port: target.port, host: target.hostBytes) else {
                return .answer(.connectPortRefused(target), closing: false)
            }
            return .intercept(target)
        }
        guard forward.tunnelOthers else { return .answer(.tunnelRefused(target), closing: false) }
        guard forward.allowsTunnel(port: target.port) else { return .answer(.connectPortRefused(target), closing: false) }
        return .tunnel(target)
    }

    /// Whether a route names the host of `authority` (a name, never an IP address).
    private func isIntercepted(_ authority: UnsafeRawBufferPointer) -> Bool {
        let bounds = HostName.bounds(in: authority)
        guard !HostName.isIPv6Literal(authority, bounds), HostName.ipv4Octets(authority, bounds) == nil else { return false }
        return forward.interceptedHosts.contains(authority, bounds)
    }

    /// Whether the head carries exactly one `Proxy-Authorization` and `credentials` admit it.
    static func carriesCredentials(_ head: HTTPHead, admittedBy credentials: ProxyCredentials) -> Bool {
        var admitted = false
        var seen = 0
        for field in head.fields where field.known == .proxyAuthorization {
            seen += 1
            admitted = credentials.admits(head.value(field))
        }
        return seen == 1 && admitted
    }

    /// A `CONNECT` target: authority-form `host:port` (RFC 9112 §3.2.3), the port required and
    /// not 0, no userinfo; the host a DNS name (letters, digits, `-`, `.`, `_`), an IPv4 address
    /// or an IPv6 literal in brackets.
    static func connectTarget(_ raw: UnsafeRawBufferPointer) -> ConnectTarget? {
        guard RequestTarget.isAuthority(raw) else { return nil }
        var hostEnd: Int
        var host: String
        if raw.first == UInt8(ascii: "[") {
            guard let close = raw.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = String(decoding: raw[1..<close], as: UTF8.self).lowercased()
            hostEnd = close + 1
        } else {
            guard let colon = raw.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            hostEnd = colon
            var end = colon
            if end > 1 && raw[end - 1] == UInt8(ascii: ".") { end -= 1 }
            let name = raw[0..<end]
            guard !name.isEmpty, name.allSatisfy(Self.isNameByte), name.first != UInt8(ascii: "."), name.first != UInt8(ascii: "-") else {
                return nil
            }
            host = String(decoding: name, as: UTF8.self).lowercased()
        }
        guard hostEnd < raw.count, raw[hostEnd] == UInt8(ascii: ":") else { return nil }
        let digits = raw[(hostEnd + 1)...]
        guard !digits.isEmpty, digits.count <= 5 else { return nil }
        var port = 0
        for digit in digits { port = port * 10 + Int(digit - UInt8(ascii: "0")) }
        guard port > 0, port <= Int(UInt16.max) else { return nil }
        return ConnectTarget(host: host, port: UInt16(port))
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    // MARK: Inside an intercepted CONNECT

    /// A request on an intercepted connection goes on to the routes only when its absolute-form
    /// authority, or else its Host, names the `CONNECT`'s host (and its port, when it gives one),
    /// and a route still names that host under the settings in force (a reload may have removed
    /// it: 421, closing, and the client's next `CONNECT` is placed anew).
    func placeIntercepted(_ head: HTTPHead, on target: ConnectTarget) -> Decision {
        guard target.hostBytes.withUnsafeBytes({ isIntercepted($0) }) else {
            return .answer(.noLongerIntercepted(target), closing: true)
        }
        let named: UnsafeRawBufferPointer
        if let authority = RequestTarget(head.target)?.authority {
            named = authority
        } else if let host = head.host, !host.isEmpty {
            named = host
        } else {
            return .answer(.badRequest("a request inside a CONNECT tunnel names its host in Host"), closing: true)
        }
        guard Self.names(target, named) else { return .answer(.misdirectedInTunnel(target), closing: true) }
        return .routes
    }

    /// Whether `authority` (`host[:port]`) is `target`'s host, with its port if it gives one.
    static func names(_ target: ConnectTarget, _ authority: UnsafeRawBufferPointer) -> Bool {
        var hostEnd = authority.firstIndex(of: UInt8(ascii: ":")) ?? authority.count
        if hostEnd > 0 && authority[hostEnd - 1] == UInt8(ascii: ".") { hostEnd -= 1 }
        let host = UnsafeRawBufferPointer(rebasing: authority[..<hostEnd])
        guard ASCII.equalsIgnoringCase(host, target.hostBytes) else { return false }
        guard let colon = authority.firstIndex(of: UInt8(ascii: ":")), colon + 1 < authority.count else { return true }
        let digits = authority[(colon + 1)...]
        guard digits.count <= 5, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return false }
        return digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) } == Int(target.port)
    }
}
