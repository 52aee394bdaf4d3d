import Config
import Endpoints
import HTTP1
@testable import Proxy
import Routing
import XCTest

/// Where a head on the forward-proxy listener goes, decided with no socket: credentials, CONNECT
/// (intercepted, tunnelled, refused), absolute-form, origin-form; and inside an intercepted
/// CONNECT, which hosts a request may name. Table by table, like RequestPlacementTests.
final class ForwardPlacementTests: XCTestCase {
    enum Outcome: Equatable {
        case routes
        case tunnel(String, UInt16)
        case intercept(String, UInt16)
        case answer(Int, slug: String, closing: Bool = false)
    }

    static let interceptedHosts: [HostPattern] = [.exact("api.example"), .wildcard(suffix: "corp.example")]

    func forward(tunnelOthers: Bool = true, connectPorts: [UInt16] = [443, 8443], credentials: ProxyCredentials? = nil) -> ForwardSettings {
        let listener = ForwardListener(address: HostPort(host: "127.0.0.1", port: 8181), tunnelOthers: tunnelOthers, connectPorts: connectPorts,
                                       credentials: credentials)
        return ForwardSettings(listener: listener, interceptedHosts: Self.interceptedHosts, leaves: nil)
    }

    func outcome(_ decision: ForwardPlacement.Decision) -> Outcome {
        switch decision {
        case .routes: return .routes
        case .tunnel(let target): return .tunnel(target.host, target.port)
        case .intercept(let target): return .intercept(target.host, target.port)
        case .answer(let problem, let closing): return .answer(problem.status, slug: problem.slug, closing: closing)
        }
    }

    func check(_ rows: [(request: [String], expected: Outcome)], on forward: ForwardSettings,
               file: StaticString = #filePath, line: UInt = #line) {
        for row in rows {
            // HTTP/1.1 asks every request for a Host, CONNECT included (the parser refuses one without).
            let lines = row.request.contains { $0.hasPrefix("Host:") } ? row.request : row.request + ["Host: proxy.test"]
            let head = parsedHead(head(lines))
            XCTAssertEqual(outcome(ForwardPlacement(forward: forward).place(head)), row.expected, row.request.joined(separator: " | "),
                           file: file, line: line)
        }
    }

    static let badTarget = Outcome.answer(400, slug: "bad-request", closing: true)
    static let portRefused = Outcome.answer(403, slug: "connect-port-refused")

    func testConnectIsInterceptedForRouteHostsTunnelledForOthersAndRefusedOnOtherPorts() {
        check([
            (["CONNECT api.example:443 HTTP/1.1", "Host: api.example:443"], .intercept("api.example", 443)),
            (["CONNECT API.Example.:443 HTTP/1.1"], .intercept("api.example", 443)),
            (["CONNECT svc.corp.example:8443 HTTP/1.1"], .intercept("svc.corp.example", 8443)),
            (["CONNECT api.example:22 HTTP/1.1"], Self.portRefused),
            // A wildcard names the subdomains only, as in route matching.
            (["CONNECT corp.example:443 HTTP/1.1"], .tunnel("corp.example", 443)),
            (["CONNECT github.com:443 HTTP/1.1"], .tunnel("github.com", 443)),
            (["CONNECT github.com:22 HTTP/1.1"], Self.portRefused),
            (["CONNECT 10.1.2.3:8443 HTTP/1.1"], .tunnel("10.1.2.3", 8443)),
            (["CONNECT [::1]:443 HTTP/1.1"], .tunnel("::1", 443)),
        ], on: forward())
    }

    func testTunnelsAndInterceptionAllow443WhatEverTheConnectPortsSay() {
        check([
            (["CONNECT api.example:443 HTTP/1.1"], .intercept("api.example", 443)),
            (["CONNECT api.example:9443 HTTP/1.1"], .intercept("api.example", 9443)),
            (["CONNECT github.com:443 HTTP/1.1"], .tunnel("github.com", 443)),
            (["CONNECT github.com:9443 HTTP/1.1"], .tunnel("github.com", 9443)),
            (["CONNECT github.com:8443 HTTP/1.1"], Self.portRefused),
        ], on: forward(connectPorts: [9443]))
    }

    /// An intercepted host may also be reached on its route's upstream port (and only its own
    /// route's): a tunnel may not.
    func testInterceptionAllowsTheUpstreamPortOfTheHostsRoute() {
        let listener = ForwardListener(address: HostPort(host: "127.0.0.1", port: 8181), tunnelOthers: true, connectPorts: [443], credentials: nil)
        let forward = ForwardSettings(listener: listener, interceptedHosts: Self.interceptedHosts,
                                      upstreams: [(.exact("api.example"), 8444), (.wildcard(suffix: "corp.example"), 9000)], leaves: nil)
        check([
            (["CONNECT api.example:8444 HTTP/1.1"], .intercept("api.example", 8444)),
            (["CONNECT a.corp.example:9000 HTTP/1.1"], .intercept("a.corp.example", 9000)),
            (["CONNECT api.example:9000 HTTP/1.1"], Self.portRefused),
            (["CONNECT a.corp.example:8444 HTTP/1.1"], Self.portRefused),
            (["CONNECT github.com:8444 HTTP/1.1"], Self.portRefused),
        ], on: forward)
    }

    func testWithoutTunnelOthersOnlyRouteHostsAreTaken() {
        check([
            (["CONNECT api.example:443 HTTP/1.1"], .intercept("api.example", 443)),
            (["CONNECT github.com:443 HTTP/1.1"], .answer(403, slug: "tunnel-refused")),
        ], on: forward(tunnelOthers: false))
    }

    func testAConnectTargetMustBeAuthorityFormWithAPort() {
        check([
            (["CONNECT api.example HTTP/1.1"], Self.badTarget),
            (["CONNECT api.example: HTTP/1.1"], Self.badTarget),
            (["CONNECT api.example:0 HTTP/1.1"], Self.badTarget),
            (["CONNECT api.example:65536 HTTP/1.1"], Self.badTarget),
            (["CONNECT api.example:443x HTTP/1.1"], Self.badTarget),
            (["CONNECT user@api.example:443 HTTP/1.1"], Self.badTarget),
            (["CONNECT user:pw@api.example:443 HTTP/1.1"], Self.badTarget),
            (["CONNECT :443 HTTP/1.1"], Self.badTarget),
            (["CONNECT api%2eexample:443 HTTP/1.1"], Self.badTarget),
            (["CONNECT -api.example:443 HTTP/1.1"], Self.badTarget),
            (["CONNECT [::1:443 HTTP/1.1"], Self.badTarget),
            (["CONNECT http://api.example:443/ HTTP/1.1"], Self.badTarget),
            (["CONNECT /path HTTP/1.1"], Self.badTarget),
        ], on: forward())
    }

    func testAbsoluteFormIsRoutedForRouteHostsOnlyAndOriginFormRefused() {
        check([
            (["GET http://api.example/v1 HTTP/1.1", "Host: api.example"], .routes),
            (["GET http://API.example:8080/v1 HTTP/1.1", "Host: api.example"], .routes),
            (["GET http://x.corp.example/ HTTP/1.1", "Host: x.corp.example"], .routes),
            (["GET http://github.com/ HTTP/1.1", "Host: github.com"], .answer(403, slug: "host-not-forwarded")),
            (["GET http://127.0.0.1/ HTTP/1.1", "Host: 127.0.0.1"], .answer(403, slug: "host-not-forwarded")),
            (["GET /v1 HTTP/1.1", "Host: api.example"], .answer(400, slug: "bad-request")),
            (["OPTIONS * HTTP/1.1", "Host: api.example"], .answer(400, slug: "bad-request")),
            // What RequestPlacement cannot read is its 400 (closing).
            (["GET http://u@api.example/ HTTP/1.1", "Host: api.example"], .routes),
        ], on: forward())
    }

    func testCredentialsAreAskedForFirstWhenConfigured() throws {
        let credentials = try ProxyCredentials(parsing: "alice:wonderland\n")
        let good = "Proxy-Authorization: Basic " + Data("alice:wonderland".utf8).base64EncodedString()
        let wrong = "Proxy-Authorization: Basic " + Data("alice:rabbit".utf8).base64EncodedString()
        let required = Outcome.answer(407, slug: "proxy-authentication-required")
        check([
            (["CONNECT api.example:443 HTTP/1.1"], required),
            (["CONNECT api.example:443 HTTP/1.1", wrong], required),
            (["CONNECT api.example:443 HTTP/1.1", "Proxy-Authorization: Bearer abc"], required),
            (["CONNECT api.example:443 HTTP/1.1", good, good], required),
            (["CONNECT api.example:443 HTTP/1.1", good], .intercept("api.example", 443)),
            (["CONNECT github.com:443 HTTP/1.1", good], .tunnel("github.com", 443)),
            // Before the target is looked at: nothing about it is told to a stranger.
            (["CONNECT github.com HTTP/1.1"], required),
            (["GET http://api.example/ HTTP/1.1", "Host: api.example"], required),
            (["GET http://api.example/ HTTP/1.1", "Host: api.example", good], .routes),
        ], on: forward(credentials: credentials))
    }

    func testTheChallengeNamesTheRealmAndCharset() {
        let problem = Problem.proxyAuthenticationRequired()
        XCTAssertEqual(problem.extraHeaders.map(\.0), ["Proxy-Authenticate"])
        XCTAssertEqual(problem.extraHeaders.first?.1, "Basic realm=\"oauth-relay\", charset=\"UTF-8\"")
    }

    // MARK: Inside an intercepted CONNECT

    func testRequestsInsideAnInterceptedConnectNameItsHost() {
        let target = ForwardPlacement.ConnectTarget(host: "api.example", port: 443)
        let rows: [(request: [String], expected: Outcome)] = [
            (["GET /v1 HTTP/1.1", "Host: api.example"], .routes),
            (["GET /v1 HTTP/1.1", "Host: API.EXAMPLE:443"], .routes),
            (["GET /v1 HTTP/1.1", "Host: api.example."], .routes),
            (["GET https://api.example/v1 HTTP/1.1", "Host: api.example"], .routes),
            (["GET /v1 HTTP/1.1", "Host: api.example:8443"], .answer(421, slug: "misdirected-request", closing: true)),
            (["GET /v1 HTTP/1.1", "Host: other.example"], .answer(421, slug: "misdirected-request", closing: true)),
            (["GET /v1 HTTP/1.1", "Host: api.example.evil"], .answer(421, slug: "misdirected-request", closing: true)),
            (["GET https://other.example/v1 HTTP/1.1", "Host: api.example"], .answer(421, slug: "misdirected-request", closing: true)),
            (["GET /v1 HTTP/1.1", "Host:"], .answer(400, slug: "bad-request", closing: true)),
        ]
        for row in rows {
            let head = parsedHead(head(row.request))
            XCTAssertEqual(outcome(ForwardPlacement(forward: forward()).placeIntercepted(head, on: target)), row.expected,
                           row.request.joined(separator: " | "))
        }
    }

    /// After a reload that took the host off the routes, a connection intercepted before it is
    /// misdirected (421, closing): the client's next CONNECT is placed under the new routes.
    func testAnInterceptedConnectionStopsWhenItsHostIsNoLongerARoutesHost() {
        let gone = parsedHead(head(["GET /v1 HTTP/1.1", "Host: gone.example"]))
        let target = ForwardPlacement.ConnectTarget(host: "gone.example", port: 443)
        XCTAssertEqual(outcome(ForwardPlacement(forward: forward()).placeIntercepted(gone, on: target)),
                       .answer(421, slug: "misdirected-request", closing: true))
        let wildcard = parsedHead(head(["GET /v1 HTTP/1.1", "Host: a.corp.example"]))
        XCTAssertEqual(outcome(ForwardPlacement(forward: forward()).placeIntercepted(wildcard, on: .init(host: "a.corp.example", port: 443))),
                       .routes)
    }
}
