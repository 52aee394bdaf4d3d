import BrowserSafety
import ByteBuffers
import Config
import Foundation
import HTTP1
@testable import Proxy
import XCTest

/// Where a request head goes, decided with no socket: the Host check (DNS rebinding), the
/// browser policy (cross-site requests with a credential, CORS for listed origins), the
/// favicon, and whether a request may start a login. Table by table, like ExchangeAnswerTests.
final class RequestPlacementTests: XCTestCase {
    /// What a placement came to, in a form a table can hold.
    enum Outcome: Equatable {
        case route(String, cors: Int? = nil, startsLogin: Bool = true)
        case loginPage
        case answer(Int, slug: String, closing: Bool = false, refusal: BrowserRefusal? = nil)
    }

    /// A loopback dev proxy: `/api/` injects a token, `/front/` too but lets a front-end at
    /// localhost:3000 call it, `/pub/` has no credential, `/static/` sets its own Authorization,
    /// and `orders.local` is a host a route names.
    static let devProxy = """
        { "listen": "127.0.0.1:8180",
          "identities": { "svc": { "tokenUrl": "https://idp.example/token", "grant": "client_credentials",
                                   "clientId": "a", "clientSecret": "b" } },
          "routes": [
            { "name": "api", "match": { "pathPrefix": "/api/" }, "upstream": "http://127.0.0.1:9001", "identity": "svc" },
            { "name": "front", "match": { "pathPrefix": "/front/" }, "upstream": "http://127.0.0.1:9001", "identity": "svc",
              "browser": { "allowOrigins": ["http://localhost:3000"], "maxAgeSeconds": 60 } },
            { "name": "pub", "match": { "pathPrefix": "/pub/" }, "upstream": "http://127.0.0.1:9001" },
            { "name": "static", "match": { "pathPrefix": "/static/" }, "upstream": "http://127.0.0.1:9001",
              "setHeaders": { "Authorization": "Basic c2VjcmV0" } },
            { "name": "orders", "match": { "host": "orders.local" }, "upstream": "http://127.0.0.1:9001", "identity": "svc" }
          ] }
        """

    func settings(_ json: String, tweak: (inout RelayConfig) -> Void = { _ in }) throws -> ProxySettings {
        var config = try ConfigLoader.decode(json: Data(json.utf8), baseDirectory: "/nonexistent", environment: [:])
        tweak(&config)
        return ProxySettings(config: config)
    }

    func place(_ lines: [String], in settings: ProxySettings, overTLS: Bool = false, hostVouched: Bool = false) -> Outcome {
        let head = parsedHead(head(lines))
        var path: [UInt8] = []
        var record = ExchangeRecord()
        let placement = RequestPlacement(settings: settings, overTLS: overTLS, hostVouched: hostVouched)
        switch placement.place(head, normalizedPath: &path, record: &record, logging: true) {
        case .route(let plan, _, let cors, let startsLogin): return .route(plan.route.name, cors: cors, startsLogin: startsLogin)
        case .loginPage: return .loginPage
        case .answer(let problem, let closing, let refusal): return .answer(problem.status, slug: problem.slug, closing: closing, refusal: refusal)
        }
    }

    func check(_ rows: [(request: [String], expected: Outcome)], in settings: ProxySettings, overTLS: Bool = false,
               file: StaticString = #filePath, line: UInt = #line) {
        for row in rows {
            XCTAssertEqual(place(row.request, in: settings, overTLS: overTLS), row.expected, row.request.joined(separator: " | "),
                           file: file, line: line)
        }
    }

    static let misdirected = Outcome.answer(421, slug: "misdirected-request", closing: true, refusal: .host)
    static let crossSite = Outcome.answer(403, slug: "cross-site-request", refusal: .crossSite)

    // MARK: - The Host check

    func testLoopbackListenerServesLoopbackNamesAndConfiguredHostsOnly() throws {
        let settings = try settings(Self.devProxy)
        check([
            (["GET /api/x HTTP/1.1", "Host: 127.0.0.1:8180"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: localhost:3000"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: LOCALHOST"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: localhost.:8180"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: app.localhost:8180"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: 127.9.9.9"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: [::1]:8180"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: [::ffff:127.0.0.1]:8180"], .route("api")),
            (["GET /x HTTP/1.1", "Host: ORDERS.local:8180"], .route("orders")),
            (["GET /api/x HTTP/1.1", "Host: evil.example:8180"], Self.misdirected),
            (["GET /api/x HTTP/1.1", "Host: localhost.evil.example:8180"], Self.misdirected),
            (["GET /api/x HTTP/1.1", "Host: 127.0.0.1.evil.example"], Self.misdirected),
            (["GET /api/x HTTP/1.1", "Host: orders.local.evil.example"], Self.misdirected),
            (["GET /api/x HTTP/1.1", "Host: xn--80ak6aa92e.example"], Self.misdirected),
            (["GET /api/x HTTP/1.1", "Host: 10.0.0.1:8180"], Self.misdirected),
            (["GET /api/x HTTP/1.1", "Host: [::2]:8180"], Self.misdirected),
            (["GET /api/x HTTP/1.1", "Host: 127.1:8180"], Self.misdirected),
            // A Host that is not host[:port] at all stays a 400 (Unicode is not a Host's syntax).
            (["GET /api/x HTTP/1.1", "Host: пример.example"], .answer(400, slug: "bad-request", closing: true)),
            // Absolute form: its authority is the host, whatever Host says (RFC 9112 §3.2.2).
            (["GET http://evil.example/api/x HTTP/1.1", "Host: 127.0.0.1:8180"], Self.misdirected),
            (["GET http://localhost:8180/api/x HTTP/1.1", "Host: evil.example"], .route("api")),
            // No name, nothing to rebind: an HTTP/1.0 request without Host.
            (["GET /api/x HTTP/1.0"], .route("api")),
            // The check comes before routing: a foreign Host never learns which paths exist.
            (["GET /nowhere HTTP/1.1", "Host: evil.example"], Self.misdirected),
        ], in: settings)
    }

    func testHostsListsMoreNamesForEveryListener() throws {
        let settings = try settings(Self.devProxy) { config in
            config.hosts = [.exact("dev.test"), .wildcard(suffix: "preview.test")]
        }
        check([
            (["GET /api/x HTTP/1.1", "Host: dev.test:8180"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: pr-7.preview.test"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: preview.test"], Self.misdirected),
            (["GET /api/x HTTP/1.1", "Host: localhost"], .route("api")),
        ], in: settings)
    }

    func testTLSListenerAddsItsOwnHosts() throws {
        let settings = try settings(Self.devProxy) { config in
            config.listenTls = TLSListener(address: HostPort(host: "127.0.0.1", port: 8443), certFile: "c", keyFile: "k",
                                           hosts: [.exact("secure.test")])
        }
        check([(["GET /api/x HTTP/1.1", "Host: secure.test:8443"], .route("api"))], in: settings, overTLS: true)
        check([(["GET /api/x HTTP/1.1", "Host: secure.test:8180"], Self.misdirected)], in: settings, overTLS: false)
    }

    func testNonLoopbackListenerServesAnyNameUntilHostsIsSet() throws {
        let open = try settings(Self.devProxy) { $0.listen = HostPort(host: "0.0.0.0", port: 8180) }
        check([(["GET /api/x HTTP/1.1", "Host: anything.example"], .route("api"))], in: open)
        let named = try settings(Self.devProxy) { config in
            config.listen = HostPort(host: "0.0.0.0", port: 8180)
            config.hosts = [.exact("svc.cluster.local")]
        }
        check([
            (["GET /api/x HTTP/1.1", "Host: svc.cluster.local:8180"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: localhost:8180"], .route("api")),
            // IP literals name no DNS record to rebind: a probe of the pod's address gets through.
            (["GET /api/x HTTP/1.1", "Host: 10.1.2.3:8180"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: [fd00::1]:8180"], .route("api")),
            (["GET /api/x HTTP/1.1", "Host: anything.example"], Self.misdirected),
        ], in: named)
    }

    // MARK: - Cross-site requests on routes with a credential

    func testNonBrowserClientsAndSameOriginPagesKeepTheCredential() throws {
        let settings = try settings(Self.devProxy)
        let host = "Host: 127.0.0.1:8180"
        check([
            (["POST /api/x HTTP/1.1", host, "Content-Length: 0"], .route("api")),
            (["DELETE /api/x HTTP/1.1", host], .route("api")),
            (["POST /api/x HTTP/1.1", host, "Sec-Fetch-Site: same-origin", "Sec-Fetch-Mode: cors", "Origin: http://127.0.0.1:8180"],
             .route("api")),
            (["GET /api/x HTTP/1.1", host, "Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"], .route("api")),
            // Without Fetch Metadata, the relay's own origin (how the page reached it) is same-origin.
            (["POST /api/x HTTP/1.1", host, "Origin: http://127.0.0.1:8180"], .route("api")),
            (["POST /api/x HTTP/1.1", "Host: 127.0.0.1:80", "Origin: http://127.0.0.1"], .route("api")),
        ], in: settings)
    }

    func testCrossSiteBrowserRequestsAreRefusedBeforeAnyTokenIsLookedUp() throws {
        let settings = try settings(Self.devProxy)
        let host = "Host: 127.0.0.1:8180"
        check([
            // The CSRF form POST, and every kind of subresource another site can make.
            (["POST /api/delete HTTP/1.1", host, "Origin: https://evil.example", "Sec-Fetch-Site: cross-site",
              "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document", "Content-Length: 0"], Self.crossSite),
            (["POST /api/delete HTTP/1.1", host, "Origin: https://evil.example", "Sec-Fetch-Site: cross-site",
              "Sec-Fetch-Mode: no-cors", "Sec-Fetch-Dest: empty"], Self.crossSite),
            (["GET /api/x HTTP/1.1", host, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors", "Sec-Fetch-Dest: image"], Self.crossSite),
            (["GET /api/x HTTP/1.1", host, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors", "Sec-Fetch-Dest: script"], Self.crossSite),
            (["GET /api/x HTTP/1.1", host, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: iframe"], Self.crossSite),
            (["GET /api/x HTTP/1.1", host, "Origin: https://evil.example", "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: cors",
              "Sec-Fetch-Dest: empty"], Self.crossSite),
            // Same-site is not same-origin: another port of localhost is another page's.
            (["GET /api/x HTTP/1.1", host, "Origin: http://127.0.0.1:3000", "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: cors"],
             Self.crossSite),
            (["GET /api/x HTTP/1.1", host, "Sec-Fetch-Site: sideways"], Self.crossSite),
            // Without Fetch Metadata, any Origin but the relay's own, `null` included.
            (["POST /api/x HTTP/1.1", host, "Origin: null"], Self.crossSite),
            (["POST /api/x HTTP/1.1", host, "Origin: https://evil.example"], Self.crossSite),
            (["POST /api/x HTTP/1.1", "Host: localhost:8180", "Origin: http://127.0.0.1:8180"], Self.crossSite),
            (["POST /api/x HTTP/1.1", host, "Origin: https://127.0.0.1:8180"], Self.crossSite),
            // A field sent twice is no browser's: none of its words are trusted.
            (["POST /api/x HTTP/1.1", host, "Sec-Fetch-Site: same-origin", "Sec-Fetch-Site: same-origin"], Self.crossSite),
            (["POST /api/x HTTP/1.1", host, "Origin: http://127.0.0.1:8180", "Origin: http://127.0.0.1:8180"], Self.crossSite),
            // A route that sets a credential of its own guards it the same way.
            (["POST /static/x HTTP/1.1", host, "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors"],
             .answer(403, slug: "cross-site-request", refusal: .crossSite)),
        ], in: settings)
    }

    func testTopLevelNavigationsFromOtherSitesAreLetThroughAsSameSiteLaxCookiesAre() throws {
        let settings = try settings(Self.devProxy)
        check([
            (["GET /api/x HTTP/1.1", "Host: 127.0.0.1:8180", "Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate",
              "Sec-Fetch-Dest: document"], .route("api", startsLogin: false)),
            (["HEAD /api/x HTTP/1.1", "Host: 127.0.0.1:8180", "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: navigate",
              "Sec-Fetch-Dest: document"], .route("api", startsLogin: false)),
        ], in: settings)
    }

    func testRoutesWithoutACredentialForwardCrossSiteRequestsAsBefore() throws {
        let settings = try settings(Self.devProxy)
        check([
            (["POST /pub/x HTTP/1.1", "Host: 127.0.0.1:8180", "Origin: https://evil.example", "Sec-Fetch-Site: cross-site"],
             .route("pub", startsLogin: false)),
            (["OPTIONS /pub/x HTTP/1.1", "Host: 127.0.0.1:8180", "Origin: https://evil.example", "Access-Control-Request-Method: PUT"],
             .route("pub")),
        ], in: settings)
    }

    func testTheRefusalNamesTheRouteTheOriginAndTheKeyThatAllowsIt() throws {
        let settings = try settings(Self.devProxy)
        let request = parsedHead(head("POST /api/x HTTP/1.1", "Host: 127.0.0.1:8180", "Origin: https://evil.example"))
        var path: [UInt8] = []
        var record = ExchangeRecord()
        guard case .answer(let problem, _, _) = RequestPlacement(settings: settings, overTLS: false)
            .place(request, normalizedPath: &path, record: &record, logging: false) else { return XCTFail("answered") }
        let json = problem.json()
        XCTAssertTrue(json.contains(#""type":"urn:oauth-relay:problem:cross-site-request""#), json)
        XCTAssertTrue(json.contains(#""route":"api""#), json)
        XCTAssertTrue(json.contains(#""origin":"https://evil.example""#), json)
        XCTAssertTrue(json.contains(#"add \"https://evil.example\" to routes[0].browser.allowOrigins"#), json)
    }

    // MARK: - CORS for listed origins

    func testListedOriginsGetThroughWithCORSAndOthersAreRefused() throws {
        let settings = try settings(Self.devProxy)
        let host = "Host: 127.0.0.1:8180"
        check([
            (["PUT /front/x HTTP/1.1", host, "Origin: http://localhost:3000", "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: cors",
              "Sec-Fetch-Dest: empty"], .route("front", cors: 0, startsLogin: false)),
            (["POST /front/x HTTP/1.1", host, "Origin: http://localhost:3000"], .route("front", cors: 0)),
            (["PUT /front/x HTTP/1.1", host, "Origin: http://localhost:3001", "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: cors"],
             Self.crossSite),
            // Origins are compared as browsers write them: exactly.
            (["PUT /front/x HTTP/1.1", host, "Origin: http://localhost:3000/", "Sec-Fetch-Site: same-site"], Self.crossSite),
            // The listing is the route's: /api/ lists nobody.
            (["PUT /api/x HTTP/1.1", host, "Origin: http://localhost:3000", "Sec-Fetch-Site: same-site"], Self.crossSite),
        ], in: settings)
    }

    func testPreflightsOfListedOriginsAreAnsweredByTheRelayAndOthersRefused() throws {
        let settings = try settings(Self.devProxy)
        let preflight = ["OPTIONS /front/x HTTP/1.1", "Host: 127.0.0.1:8180", "Access-Control-Request-Method: PUT",
                         "Access-Control-Request-Headers: Content-Type, X-Trace", "Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: cors"]
        check([
            (preflight + ["Origin: http://localhost:3000"], .answer(204, slug: "")),
            (preflight + ["Origin: https://evil.example"], Self.crossSite),
            (["OPTIONS /api/x HTTP/1.1", "Host: 127.0.0.1:8180", "Access-Control-Request-Method: GET", "Origin: http://localhost:3000"],
             Self.crossSite),
        ], in: settings)
        let asked = parsedHead(head(preflight + ["Origin: http://localhost:3000", "Access-Control-Request-Private-Network: true"]))
        var path: [UInt8] = []
        var record = ExchangeRecord()
        guard case .answer(let answer, _, _) = RequestPlacement(settings: settings, overTLS: false)
            .place(asked, normalizedPath: &path, record: &record, logging: false) else { return XCTFail("answered") }
        let written = written { answer.write(keepAlive: true, viaSuffix: viaSuffix, into: &$0) }
        XCTAssertEqual(written, """
            HTTP/1.1 204 No Content\r
            Cache-Control: no-store\r
            Access-Control-Allow-Origin: http://localhost:3000\r
            Access-Control-Allow-Credentials: true\r
            Vary: Origin, Access-Control-Request-Method, Access-Control-Request-Headers\r
            Access-Control-Allow-Methods: PUT\r
            Access-Control-Allow-Headers: content-type, x-trace\r
            Access-Control-Max-Age: 60\r
            Access-Control-Allow-Private-Network: true\r
            Via: 1.1 oauth-relay\r
            \r

            """)
    }

    func testConfiguredMethodsAndHeadersAnswerPreflightsInsteadOfTheAskedOnes() throws {
        let rules = CORSRules(BrowserAccess(allowOrigins: ["http://localhost:3000"], allowMethods: ["GET", "PUT"],
                                            allowHeaders: ["content-type"], exposeHeaders: ["X-Request-Id"], maxAgeSeconds: 5))
        let asked = parsedHead(head("OPTIONS /x HTTP/1.1", "Host: a", "Origin: http://localhost:3000",
                                    "Access-Control-Request-Method: DELETE", "Access-Control-Request-Headers: x-evil"))
        let fields = Dictionary(rules.preflightAnswer(origin: 0, head: asked).extraHeaders, uniquingKeysWith: { $1 })
        XCTAssertEqual(fields["Access-Control-Allow-Methods"], "GET, PUT")
        XCTAssertEqual(fields["Access-Control-Allow-Headers"], "content-type")
        // Exposed headers are for the answer a page reads, not for the preflight.
        XCTAssertNil(fields["Access-Control-Expose-Headers"])
        XCTAssertTrue(rules.responseFields(origin: 0).contains { $0 == ("Access-Control-Expose-Headers", "X-Request-Id") })
        XCTAssertEqual(fields["Access-Control-Max-Age"], "5")
        XCTAssertNil(fields["Access-Control-Allow-Private-Network"])
        // Asked-for methods the relay never forwards are not echoed.
        let trace = parsedHead(head("OPTIONS /x HTTP/1.1", "Host: a", "Origin: http://localhost:3000", "Access-Control-Request-Method: TRACE"))
        let open = CORSRules(BrowserAccess(allowOrigins: ["http://localhost:3000"]))
        XCTAssertFalse(open.preflightAnswer(origin: 0, head: trace).extraHeaders.contains { $0.0 == "Access-Control-Allow-Methods" })
        XCTAssertEqual(CORSRules.headerNames("A, b ,,c"), ["a", "b", "c"])
        XCTAssertEqual(CORSRules.headerNames("a, b c"), [])
    }

    // MARK: - Logins and the favicon

    func testOnlyWhatAPersonOpensMayStartALogin() throws {
        let settings = try settings(Self.devProxy)
        let host = "Host: 127.0.0.1:8180"
        check([
            (["GET /api/x HTTP/1.1", host], .route("api", startsLogin: true)),
            (["POST /api/x HTTP/1.1", host], .route("api", startsLogin: true)),
            (["HEAD /api/x HTTP/1.1", host], .route("api", startsLogin: false)),
            (["GET /api/x HTTP/1.1", host, "Sec-Fetch-Site: same-origin", "Sec-Fetch-Mode: no-cors", "Sec-Fetch-Dest: image"],
             .route("api", startsLogin: false)),
            (["GET /api/x HTTP/1.1", host, "Sec-Fetch-Site: same-origin", "Sec-Fetch-Mode: cors", "Sec-Fetch-Dest: empty"],
             .route("api", startsLogin: false)),
            (["GET /api/x HTTP/1.1", host, "Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"],
             .route("api", startsLogin: true)),
        ], in: settings)
    }

    static let personProxy = """
        { "listen": "127.0.0.1:8180",
          "identities": { "me": { "grant": "authorization_code", "clientId": "cli", "tokenUrl": "https://idp.example/token",
                                  "authorizationUrl": "https://idp.example/authorize" } },
          "routes": [
            { "name": "mine", "match": { "pathPrefix": "/" }, "upstream": "http://127.0.0.1:9001", "identity": "me" },
            { "name": "icons", "match": { "pathPrefix": "/favicon.ico" }, "upstream": "http://127.0.0.1:9001", "identity": "me" }
          ] }
        """

    func testTheBrowsersFaviconIsNotSentWithAPersonsTokenUnlessARouteNamesIt() throws {
        let withIcons = try settings(Self.personProxy)
        check([(["GET /favicon.ico HTTP/1.1", "Host: localhost:8180"], .route("icons"))], in: withIcons)
        let without = try settings(Self.personProxy) { $0.routes.removeLast() }
        check([
            (["GET /favicon.ico HTTP/1.1", "Host: localhost:8180"], .answer(404, slug: "favicon-not-forwarded")),
            (["GET /favicon.icon HTTP/1.1", "Host: localhost:8180"], .route("mine")),
            (["GET /x/favicon.ico HTTP/1.1", "Host: localhost:8180"], .route("mine")),
        ], in: without)
        // A service's identity is no person's: its catch-all route forwards the icon as anything else.
        let service = try settings(Self.devProxy) { config in
            config.routes.append(Route(index: 5, name: "rest", upstream: config.routes[0].upstream, identity: "svc"))
        }
        check([(["GET /favicon.ico HTTP/1.1", "Host: localhost:8180"], .route("rest"))], in: service)
    }

    // MARK: - What stayed as it was

    func testMethodTargetAndHostSyntaxChecksComeFirst() throws {
        let settings = try settings(Self.devProxy)
        check([
            (["CONNECT evil.example:443 HTTP/1.1", "Host: evil.example:443"], .answer(405, slug: "method-not-allowed")),
            (["TRACE /api/x HTTP/1.1", "Host: 127.0.0.1"], .answer(405, slug: "method-not-allowed")),
            (["OPTIONS * HTTP/1.1", "Host: 127.0.0.1", "Max-Forwards: 0"], .answer(200, slug: "")),
            (["GET * HTTP/1.1", "Host: 127.0.0.1"], .answer(400, slug: "bad-request")),
            (["GET /api/%zz HTTP/1.1", "Host: 127.0.0.1"], .answer(400, slug: "bad-request")),
            (["GET /api/x HTTP/1.1", "Host: a b"], .answer(400, slug: "bad-request", closing: true)),
            (["GET /nowhere HTTP/1.1", "Host: 127.0.0.1"], .answer(404, slug: "no-route")),
        ], in: settings)
    }

    /// On the forward proxy (the host vouched for) a host-less route never takes a request: its
    /// token is for the relay's own clients, not for whatever site a client names.
    func testTheForwardProxyMatchesOnlyRoutesNamingTheHost() throws {
        let settings = try settings(Self.devProxy)
        XCTAssertEqual(place(["GET https://orders.local/api/x HTTP/1.1", "Host: orders.local"], in: settings, overTLS: true, hostVouched: true),
                       .route("orders"))
        XCTAssertEqual(place(["GET /api/x HTTP/1.1", "Host: orders.local"], in: settings, overTLS: true, hostVouched: true), .route("orders"))
        XCTAssertEqual(place(["GET https://api.orders.test/api/x HTTP/1.1", "Host: api.orders.test"], in: settings, overTLS: true,
                             hostVouched: true), .answer(404, slug: "no-route"))
        XCTAssertEqual(place(["GET /api/x HTTP/1.1", "Host: 127.0.0.1"], in: settings, overTLS: true, hostVouched: true),
                       .answer(404, slug: "no-route"))
        // The reverse listener keeps its fallback to host-less routes.
        XCTAssertEqual(place(["GET /api/x HTTP/1.1", "Host: 127.0.0.1"], in: settings), .route("api"))
    }

    /// `http://` absolute-form on the forward proxy: a route with a credential answers 308 to
    /// the `https://` URL (browsers send Fetch Metadata only there); one without forwards.
    func testPlainHTTPOnTheForwardProxyIsRedirectedToHTTPSForRoutesWithACredential() throws {
        let json = Self.devProxy.replacingOccurrences(
            of: "{ \"name\": \"pub\", \"match\": { \"pathPrefix\": \"/pub/\" }",
            with: "{ \"name\": \"pub\", \"match\": { \"host\": \"orders.local\", \"pathPrefix\": \"/pub/\" }")
        let settings = try settings(json)
        var path: [UInt8] = []
        var record = ExchangeRecord()
        let head = parsedHead(head(["GET http://orders.local:8080/api/x?a=1&b=%2F HTTP/1.1", "Host: orders.local:8080"]))
        guard case .answer(let problem, closing: false, refusal: nil) = RequestPlacement(settings: settings, overTLS: false, hostVouched: true)
            .place(head, normalizedPath: &path, record: &record, logging: false) else { return XCTFail("not answered") }
        XCTAssertEqual(problem.status, 308)
        XCTAssertEqual(problem.slug, "https-required")
        XCTAssertEqual(problem.extraHeaders.first { $0.0 == "Location" }?.1, "https://orders.local/api/x?a=1&b=%2F")
        // The answer says why, as problem+json.
        var written = ByteBuffer()
        problem.write(keepAlive: true, viaSuffix: [], into: &written)
        let text = String(decoding: written.readableBytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 308 Permanent Redirect\r\n"), text)
        XCTAssertTrue(text.contains("\r\nContent-Type: application/problem+json\r\n"), text)
        XCTAssertTrue(text.contains("\r\nLocation: https://orders.local/api/x?a=1&b=%2F\r\n"), text)
        XCTAssertTrue(text.hasSuffix("}") && text.contains("\"type\":\"urn:oauth-relay:problem:https-required\""), text)
        XCTAssertEqual(place(["GET http://orders.local?q HTTP/1.1", "Host: orders.local"], in: settings, hostVouched: true),
                       .answer(308, slug: "https-required"))
        XCTAssertEqual(place(["GET HTTP://ORDERS.LOCAL/x HTTP/1.1", "Host: orders.local"], in: settings, hostVouched: true),
                       .answer(308, slug: "https-required"))
        XCTAssertEqual(place(["GET http://orders.local/pub/a HTTP/1.1", "Host: orders.local"], in: settings, hostVouched: true), .route("pub"))
        XCTAssertEqual(place(["GET http://orders.local/x HTTP/1.1", "Host: orders.local"], in: settings, hostVouched: true),
                       .answer(308, slug: "https-required"))
        // Over an intercepted CONNECT (TLS), and on the reverse listener, nothing changes.
        XCTAssertEqual(place(["GET https://orders.local/x HTTP/1.1", "Host: orders.local"], in: settings, overTLS: true, hostVouched: true),
                       .route("orders"))
        XCTAssertEqual(place(["GET http://orders.local/x HTTP/1.1", "Host: orders.local"], in: settings), .route("orders"))
    }
}
