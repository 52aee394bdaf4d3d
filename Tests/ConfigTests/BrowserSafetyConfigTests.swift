import Config
import Routing
import XCTest

/// `hosts`, `listenTls.hosts` and `routes[].browser`: what the browser-safety policy reads, and
/// the refusals that keep a wildcard or a typo from opening a route to every web page.
final class BrowserSafetyConfigTests: XCTestCase {
    func testHostsAreNamesAndWildcardsLowercasedWithoutATrailingDot() throws {
        let config = try decodeConfig(#"{ "hosts": ["Dev.Test", "*.preview.test", "orders.local.", "10.0.0.7", "[FD00::1]"] }"#)
        XCTAssertEqual(config.hosts, [.exact("dev.test"), .wildcard(suffix: "preview.test"), .exact("orders.local"),
                                      .exact("10.0.0.7"), .exact("fd00::1")])
        XCTAssertNil(try decodeConfig("{}").hosts)
        XCTAssertEqual(try decodeConfig(#"{ "hosts": [] }"#).hosts, [])
    }

    func testHostsRefusesPortsURLsAndAWildcardForEverything() {
        XCTAssertEqual(describe(configErrors(#"{ "hosts": ["dev.test:8180", "http://dev.test", "*", "", 7, "a..b"] }"#)), [
            #"$.hosts[0]: a host pattern has no port (the port in the Host header is ignored); write an IPv6 address as "[::1]""#,
            #"$.hosts[1]: a host pattern has no port (the port in the Host header is ignored); write an IPv6 address as "[::1]""#,
            #"$.hosts[2]: "*" would serve any name, which is what DNS rebinding needs; list the names"#,
            #"$.hosts[3]: "" is not a valid host name (a "*" may only stand for the leftmost labels, as in "*.example.com")"#,
            "$.hosts[4]: expected a string, got number",
            #"$.hosts[5]: "a..b" is not a valid host name (a "*" may only stand for the leftmost labels, as in "*.example.com")"#,
        ])
        XCTAssertEqual(describe(configErrors(#"{ "hosts": "dev.test" }"#)), ["$.hosts: expected an array, got string"])
    }

    func testBrowserAccessDecodesWithDefaults() throws {
        let route = try XCTUnwrap(decodeConfig(routeJSON(#""browser": { "allowOrigins": ["HTTP://LocalHost:3000", "https://app.example:443", "http://[::1]:5173"] }"#)).routes.first)
        XCTAssertEqual(route.browser, BrowserAccess(allowOrigins: ["http://localhost:3000", "https://app.example", "http://[::1]:5173"]))
        XCTAssertEqual(route.browser?.maxAgeSeconds, 600)
        XCTAssertNil(route.browser?.allowMethods)
        XCTAssertNil(try XCTUnwrap(decodeConfig(routeJSON("")).routes.first).browser)
    }

    func testBrowserAccessTakesMethodsHeadersExposedHeadersAndMaxAge() throws {
        let route = try XCTUnwrap(decodeConfig(routeJSON(#"""
            "browser": { "allowOrigins": ["http://localhost:3000", "http://localhost:3000"], "allowMethods": ["GET", "PUT", "GET"],
                         "allowHeaders": ["Content-Type", "X-Trace"], "exposeHeaders": ["X-Request-Id"], "maxAgeSeconds": 0 }
            """#)).routes.first)
        XCTAssertEqual(route.browser, BrowserAccess(allowOrigins: ["http://localhost:3000"], allowMethods: ["GET", "PUT"],
                                                    allowHeaders: ["content-type", "x-trace"], exposeHeaders: ["X-Request-Id"],
                                                    maxAgeSeconds: 0))
    }

    func testOriginsMustBeExactAndNeverAWildcardOrNull() {
        let errors = describe(configErrors(routeJSON(#"""
            "browser": { "allowOrigins": ["*", "null", "http://localhost:3000/", "http://localhost:3000/app", "localhost:3000",
                                          "ftp://files.example", "http://user@localhost:3000", "http://localhost:3000?x=1"] }
            """#)))
        XCTAssertEqual(errors.count, 8, "\(errors)")
        XCTAssertTrue(errors[0].hasPrefix(#"$.routes[0].browser.allowOrigins[0]: no wildcard"#), errors[0])
        XCTAssertTrue(errors[1].hasPrefix(#"$.routes[0].browser.allowOrigins[1]: "null" is the origin of sandboxed frames"#), errors[1])
        XCTAssertTrue(errors[2].hasPrefix(#"$.routes[0].browser.allowOrigins[2]: an origin has no path"#), errors[2])
        XCTAssertTrue(errors[3].hasPrefix(#"$.routes[0].browser.allowOrigins[3]: an origin has no path"#), errors[3])
        for error in errors[4...] {
            XCTAssertTrue(error.hasSuffix(#"an origin is a scheme, a host and an optional port, like "http://localhost:3000""#), error)
        }
    }

    func testBrowserAccessRefusesEmptyListsWildcardsAndUnknownKeys() {
        XCTAssertEqual(describe(configErrors(routeJSON(#""browser": { }"#))),
                       [#"$.routes[0].browser.allowOrigins: required key "allowOrigins" is missing"#])
        XCTAssertEqual(describe(configErrors(routeJSON(#""browser": { "allowOrigins": [] }"#))),
                       ["$.routes[0].browser.allowOrigins: must list at least one value (leave the key out for the default)"])
        XCTAssertEqual(describe(configErrors(routeJSON(#"""
            "browser": { "allowOrigins": ["http://a.test"], "allowHeaders": ["*"], "allowMethods": ["TRACE", "GE T"],
                         "maxAgeSeconds": 90000, "allowOrigin": [] }
            """#))), [
            #"$.routes[0].browser.allowHeaders[0]: no wildcard: list the header names (with credentials, browsers read "*" as a name)"#,
            "$.routes[0].browser.allowMethods[0]: the relay does not forward TRACE",
            #"$.routes[0].browser.allowMethods[1]: must be a method name such as "PUT", got "GE T""#,
            "$.routes[0].browser.maxAgeSeconds: must be a number of seconds from 0 to 86400 (browsers cap it lower), got 90000",
            #"$.routes[0].browser.allowOrigin: unknown key "allowOrigin" (did you mean "allowOrigins"?)"#,
        ])
    }

    func testTLSListenerHasHostsOfItsOwn() throws {
        let result = try decodeConfig(#"""
            { "listenTls": { "address": "127.0.0.1:8443", "certFile": "c.pem", "keyFile": "k.pem", "hosts": ["secure.test"] } }
            """#, besideFiles: ["c.pem": "x", "k.pem": "y"])
        XCTAssertEqual(try result.get().listenTls?.hosts, [.exact("secure.test")])
    }

    func testNonLoopbackListenersServingIdentitiesWithoutHostsAreWarnedOf() throws {
        let identities = #""identities": { "svc": { "tokenUrl": "https://idp/token", "grant": "client_credentials", "clientId": "a", "clientSecret": "b" } }"#
        let route = #""routes": [ { "name": "api", "upstream": "http://127.0.0.1:9001", "identity": "svc" } ]"#
        let open = try decodeConfig(#"{ "listen": "0.0.0.0:8180", \#(identities), \#(route) }"#)
        XCTAssertEqual(open.hostCheckWarnings, [
            #"listen 0.0.0.0:8180 is not a loopback address and serves routes with credentials (api) under any Host name: "#
                + #"set "hosts" to the names clients use, so that a web page cannot reach them by DNS rebinding"#,
        ])
        XCTAssertEqual(try decodeConfig(#"{ "listen": "0.0.0.0:8180", "hosts": ["svc.local"], \#(identities), \#(route) }"#).hostCheckWarnings, [])
        XCTAssertEqual(try decodeConfig(#"{ "listen": "[::1]:8180", \#(identities), \#(route) }"#).hostCheckWarnings, [])
        XCTAssertEqual(try decodeConfig(#"{ "listen": "0.0.0.0:8180", "routes": [ { "upstream": "http://127.0.0.1:9001" } ] }"#).hostCheckWarnings, [])
        // A credential the route sets itself counts as one.
        let setsOne = try decodeConfig(#"{ "listen": "0.0.0.0:8180", "routes": [ { "name": "legacy", "upstream": "http://127.0.0.1:9001", "setHeaders": { "Cookie": "session=1" } } ] }"#)
        XCTAssertEqual(setsOne.hostCheckWarnings.count, 1)
    }
}
