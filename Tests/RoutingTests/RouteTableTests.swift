import Routing
import XCTest

/// Route precedence: exact host > wildcard > any host, then longest prefix, then file order.
final class RouteTableTests: XCTestCase {
    private func table(_ matches: [(host: String?, prefix: String)]) -> RouteTable {
        RouteTable(matches.map { RouteMatch(host: $0.host.flatMap(HostPattern.init(parsing:)), pathPrefix: $0.prefix) })
    }

    private func matchedIndex(_ table: RouteTable, host: String, path: String) -> Int? {
        table.matchIndex(host: host, path: path)
    }

    func testExactHostBeatsWildcardWhichBeatsAnyHost() {
        let routes = table([(nil, "/"), ("*.example.com", "/"), ("api.example.com", "/")])
        XCTAssertEqual(matchedIndex(routes, host: "api.example.com", path: "/x"), 2)
        XCTAssertEqual(matchedIndex(routes, host: "web.example.com", path: "/x"), 1)
        XCTAssertEqual(matchedIndex(routes, host: "other.test", path: "/x"), 0)
    }

    func testHostSpecificityWinsOverALongerPrefix() {
        let routes = table([(nil, "/api/orders/"), ("api.example.com", "/")])
        XCTAssertEqual(matchedIndex(routes, host: "api.example.com", path: "/api/orders/1"), 1)
    }

    func testExactHostWithoutAMatchingPrefixFallsBackToLessSpecificHosts() {
        let routes = table([("api.example.com", "/admin/"), ("*.example.com", "/public/"), (nil, "/")])
        XCTAssertEqual(matchedIndex(routes, host: "api.example.com", path: "/public/a"), 1)
        XCTAssertEqual(matchedIndex(routes, host: "api.example.com", path: "/other"), 2)
    }

    func testWildcardMatchesDeeperSubdomainsButNotTheBareDomain() {
        let routes = table([("*.example.com", "/")])
        XCTAssertEqual(matchedIndex(routes, host: "a.example.com", path: "/"), 0)
        XCTAssertEqual(matchedIndex(routes, host: "a.b.example.com", path: "/"), 0)
        XCTAssertNil(matchedIndex(routes, host: "example.com", path: "/"))
        XCTAssertNil(matchedIndex(routes, host: "badexample.com", path: "/"))
    }

    func testLongerWildcardSuffixWins() {
        let routes = table([("*.example.com", "/"), ("*.b.example.com", "/")])
        XCTAssertEqual(matchedIndex(routes, host: "a.b.example.com", path: "/"), 1)
        XCTAssertEqual(matchedIndex(routes, host: "a.c.example.com", path: "/"), 0)
    }

    func testLongestPathPrefixWins() {
        let routes = table([(nil, "/"), (nil, "/api/orders/"), (nil, "/api/")])
        XCTAssertEqual(matchedIndex(routes, host: "h", path: "/api/orders/7"), 1)
        XCTAssertEqual(matchedIndex(routes, host: "h", path: "/api/users"), 2)
        XCTAssertEqual(matchedIndex(routes, host: "h", path: "/index.html"), 0)
    }

    func testPathPrefixIsAPlainBytePrefix() {
        let routes = table([(nil, "/api")])
        XCTAssertEqual(matchedIndex(routes, host: "h", path: "/apis"), 0)
        XCTAssertNil(matchedIndex(routes, host: "h", path: "/ap"))
        XCTAssertNil(matchedIndex(routes, host: "h", path: "/API"))
    }

    func testEqualMatchesAreDecidedByFileOrder() {
        let routes = table([(nil, "/b/"), (nil, "/a/"), (nil, "/a/")])
        XCTAssertEqual(matchedIndex(routes, host: "h", path: "/a/x"), 1)
    }

    func testPortInHostHeaderIsIgnored() {
        let routes = table([("orders.local", "/")])
        XCTAssertEqual(matchedIndex(routes, host: "orders.local:8180", path: "/"), 0)
    }

    func testHostIsComparedCaseInsensitively() {
        let routes = table([("orders.local", "/"), ("*.example.com", "/")])
        XCTAssertEqual(matchedIndex(routes, host: "ORDERS.Local", path: "/"), 0)
        XCTAssertEqual(matchedIndex(routes, host: "A.EXAMPLE.COM:443", path: "/"), 1)
    }

    func testTrailingDotInHostIsIgnored() {
        XCTAssertEqual(matchedIndex(table([("orders.local", "/")]), host: "orders.local.:80", path: "/"), 0)
    }

    func testIPv6HostLiteralMatchesWithOrWithoutPort() {
        let routes = table([("[::1]", "/")])
        XCTAssertEqual(matchedIndex(routes, host: "[::1]:8180", path: "/"), 0)
        XCTAssertEqual(matchedIndex(routes, host: "[::1]", path: "/"), 0)
        XCTAssertNil(matchedIndex(routes, host: "[::2]:8180", path: "/"))
    }

    func testNoMatchingRouteGivesNil() {
        let routes = table([("orders.local", "/api/"), (nil, "/public/")])
        XCTAssertNil(matchedIndex(routes, host: "orders.local", path: "/other"))
        XCTAssertNil(matchedIndex(routes, host: "", path: "/api/x"))
        XCTAssertNil(matchedIndex(table([]), host: "h", path: "/"))
    }

    func testMissingHostHeaderOnlyMatchesHostlessRoutes() {
        let routes = table([("orders.local", "/"), (nil, "/")])
        XCTAssertEqual(matchedIndex(routes, host: "", path: "/x"), 1)
    }

    func testManyExactHostsAreAllFound() {
        let routes = table((0..<200).map { ("host\($0).example.com", "/") })
        for index in [0, 1, 57, 199] {
            XCTAssertEqual(matchedIndex(routes, host: "HOST\(index).example.com", path: "/"), index)
        }
        XCTAssertNil(matchedIndex(routes, host: "host200.example.com", path: "/"))
    }

    func testMatchIndexWorksOnRawBuffers() {
        let routes = table([(nil, "/"), ("api.example.com", "/v1/")])
        let host = Array("api.example.com:8080".utf8), path = Array("/v1/items".utf8)
        let index = host.withUnsafeBytes { hostBytes in
            path.withUnsafeBytes { pathBytes in routes.matchIndex(host: hostBytes, path: pathBytes) }
        }
        XCTAssertEqual(index, 1)
    }

    func testNamingHostModeNeverFallsBackToHostlessRoutes() {
        let routes = table([(nil, "/gh/"), ("api.example.com", "/admin/"), ("*.example.com", "/public/")])
        XCTAssertEqual(routes.matchIndex(host: "api.example.com", path: "/admin/x", namingHost: true), 1)
        XCTAssertEqual(routes.matchIndex(host: "api.example.com", path: "/public/x", namingHost: true), 2)
        XCTAssertEqual(routes.matchIndex(host: "web.example.com", path: "/public/x", namingHost: true), 2)
        XCTAssertNil(routes.matchIndex(host: "api.example.com", path: "/gh/user", namingHost: true))
        XCTAssertNil(routes.matchIndex(host: "api.orders.test", path: "/gh/user", namingHost: true))
        XCTAssertNil(routes.matchIndex(host: "", path: "/gh/user", namingHost: true))
        // The reverse listener's lookup still falls back.
        XCTAssertEqual(routes.matchIndex(host: "api.orders.test", path: "/gh/user"), 0)
        XCTAssertEqual(routes.matchIndex(host: "api.example.com", path: "/gh/user"), 0)
    }
}
